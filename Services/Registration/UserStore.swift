import Crypto
import HTTPServer
import Postgres
import ServiceKit

/// The registration service's users (`users`): a username and the opaque user handle that
/// WebAuthn and the other services know the user by. A user is created by its first credential
/// or method and never renamed.
struct UserStore: Sendable {
    let pool: PostgresPool

    /// The user's handle, or nil for a user not registered yet.
    func handle(tenant: String, username: String) async throws -> [UInt8]? {
        try await pool.withConnection { conn in try await Self.handle(tenant: tenant, username: username, on: conn) }
    }

    /// The user's handle, creating the user (with a new random handle, the username as its
    /// display name) when new.
    ///
    /// - Throws: 409 `user_erasure_pending` while the user's data is being erased.
    func ensure(tenant: String, username: String) async throws -> [UInt8] {
        try await pool.withTransaction { conn in
            try await Self.insert(tenant: tenant, username: username, handle: SecureRandom.bytes(32), displayName: username, on: conn)
            guard let handle = try await Self.handle(tenant: tenant, username: username, on: conn) else { throw HTTPError(.internalError) }
            return handle
        }
    }

    /// Creates the user unless it exists (the existing user keeps its handle), in the caller's
    /// transaction.
    ///
    /// - Throws: 409 `user_erasure_pending` while the user's data is being erased (for every
    ///   write that adds to it: ``ErasureStore/requireNoErasureInProgress(tenant:username:on:)``).
    static func insert(tenant: String, username: String, handle: [UInt8], displayName: String, on conn: PostgresConnection) async throws {
        try await ErasureStore.requireNoErasureInProgress(tenant: tenant, username: username, on: conn)
        try await conn.query(
            """
            INSERT INTO users (tenant_id, username, user_handle, display_name)
            VALUES (\(tenant), \(username), \(PostgresBytes(handle)), \(displayName))
            ON CONFLICT (tenant_id, username) DO NOTHING
            """)
    }

    /// Whether the user's account registers passkeys only (opened by a username-less sign-up).
    func isPasskeyOnly(tenant: String, username: String) async throws -> Bool {
        try await pool.withConnection { conn in try await Self.isPasskeyOnly(tenant: tenant, username: username, on: conn) }
    }

    /// ``isPasskeyOnly(tenant:username:)`` on `conn`.
    static func isPasskeyOnly(tenant: String, username: String, on conn: PostgresConnection) async throws -> Bool {
        try await conn.query("SELECT passkey_only FROM users WHERE tenant_id = \(tenant) AND username = \(username)").first?.bool("passkey_only") ?? false
    }

    /// Sets the display name of a passkey-only account (no other user's: their display name is
    /// their username or what their first credential gave), in the caller's transaction.
    static func setPickedDisplayName(tenant: String, username: String, displayName: String, on conn: PostgresConnection) async throws {
        try await conn.query(
            "UPDATE users SET display_name = \(displayName) WHERE tenant_id = \(tenant) AND username = \(username) AND passkey_only")
    }

    /// The display name a passkey-only account's user picked, on `conn`; nil for other users
    /// and before one was picked.
    static func pickedDisplayName(tenant: String, username: String, on conn: PostgresConnection) async throws -> String? {
        try await conn.query(
            """
            SELECT display_name FROM users
            WHERE tenant_id = \(tenant) AND username = \(username) AND passkey_only AND display_name <> username
            """
        ).first?.string("display_name")
    }

    /// The user's handle on `conn`, or nil.
    static func handle(tenant: String, username: String, on conn: PostgresConnection) async throws -> [UInt8]? {
        try await conn.query("SELECT user_handle FROM users WHERE tenant_id = \(tenant) AND username = \(username)").first?.bytes("user_handle")
    }
}

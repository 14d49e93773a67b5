import Crypto
import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Schema
import ServiceKit

/// The account a sign-up opens before its first method (asked by the authentication service,
/// which owns sign-up sessions): the user with a new user handle, marked passkey-only for a
/// username-less sign-up, and the profile the sign-up carried. Each profile value goes to the
/// pii vault under the user handle (the subject the purge shreds); this service keeps only
/// the vault's reference and masked form (`user_profiles`), as it does for methods' addresses.
struct SignUpAccounts: Sendable {
    let context: ServiceContext
    let users: UserStore
    let calls: InternalCalls
    let piiURL: String

    func register(on router: inout GuardedRouter) {
        router.post("/v1/internal/tenants/{tenant}/sign-ups", calls.guardInternal) { request, ctx in
            let body = try request.decode(SignUpAccountRequest.self)
            let account = try await open(body, tenant: ctx.parameter("tenant"))
            ctx.logger.info("sign-up account opened", metadata: ["signet.passkey_only": .string("\(body.passkeyOnly)")])
            return try .json(account, status: 201, headers: [("Cache-Control", "no-store")])
        }
        // The authentication service, before it finishes a sign-up: did this sign-up register
        // on its account (SignUpClaim)? Else a sign-up opened before the user's own finished
        // with the user's methods.
        router.post("/v1/internal/tenants/{tenant}/sign-ups/claims", calls.guardInternal) { request, ctx in
            let body = try request.decode(SignUpClaimQuery.self)
            try UsernameRules.require(body.username)
            guard (1...64).contains(body.jti.utf8.count) else { throw HTTPError.invalid("jti", "jti is 1-64 bytes.") }
            let registered = try await context.pool.withConnection { conn in
                try await SignUpClaim.registered(
                    tenant: ctx.parameter("tenant"), username: body.username, jti: body.jti, subjectKey: context.configuration.subjectKey, on: conn)
            }
            return try .json(SignUpClaimAnswer(registered: registered), headers: [("Cache-Control", "no-store")])
        }
        // The oob service vaults a user's identity document under the user's subject (so that
        // the purge shreds it) and compares its name with the profile's (issue #16).
        router.get("/v1/internal/tenants/{tenant}/users/{username}/vault-subject", calls.guardInternal) { _, ctx in
            let username = try ctx.username()
            guard let subject = try await vaultSubject(tenant: ctx.parameter("tenant"), username: username) else {
                throw HTTPError(.notFound, detail: "No such user in this tenant.")
            }
            return try .json(subject, headers: [("Cache-Control", "no-store")])
        }
    }

    /// The user's vault subject (base64url of the user handle) and the vault reference of their
    /// profile's full name; nil for a user this service does not know.
    func vaultSubject(tenant: String, username: String) async throws -> UserVaultSubject? {
        try await context.pool.withConnection { conn in
            guard let row = try await conn.query(
                """
                SELECT u.user_handle, p.pii_ref FROM users u
                LEFT JOIN user_profiles p ON p.tenant_id = u.tenant_id AND p.username = u.username AND p.kind = 'name'
                WHERE u.tenant_id = \(tenant) AND u.username = \(username)
                """
            ).first, let handle = row.bytes("user_handle")
            else { return nil }
            return UserVaultSubject(subject: Base64URL.encode(handle), fullNameRef: row.string("pii_ref"))
        }
    }

    /// Creates the user (an existing user without credentials keeps its handle), vaults the
    /// profile and records its references.
    ///
    /// - Throws: 400 `invalid_field` or a profile code (the caller checked them already;
    ///   checked again here); 404 `tenant_not_found`; 409 `username_taken` when the user has
    ///   credentials or methods; 503 when the vault cannot be reached.
    func open(_ body: SignUpAccountRequest, tenant: String) async throws -> SignUpAccount {
        try UsernameRules.require(body.username)
        if let refusal = body.profile?.refusal { throw HTTPError(.profileRefused(refusal.member), detail: refusal.detail, field: refusal.field) }
        guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
        let handle = try await context.withTransaction { conn -> [UInt8] in
            try await UserStore.insert(tenant: tenant, username: body.username, handle: SecureRandom.bytes(32), displayName: body.username, on: conn)
            let row = try await conn.query(
                """
                SELECT u.user_handle,
                    EXISTS (SELECT 1 FROM credentials c WHERE c.tenant_id = u.tenant_id AND c.username = u.username AND c.deleted_at IS NULL)
                    OR EXISTS (SELECT 1 FROM user_methods m WHERE m.tenant_id = u.tenant_id AND m.username = u.username AND m.deleted_at IS NULL)
                    AS registered
                FROM users u WHERE u.tenant_id = \(tenant) AND u.username = \(body.username) FOR UPDATE
                """
            ).first
            guard let row, let handle = row.bytes("user_handle") else { throw HTTPError(.internalError) }
            guard row.bool("registered") != true else { throw HTTPError(.usernameTaken, detail: "This user already has methods; sign in instead.") }
            if body.passkeyOnly {
                try await conn.query("UPDATE users SET passkey_only = true WHERE tenant_id = \(tenant) AND username = \(body.username)")
            }
            return handle
        }
        let subject = Base64URL.encode(handle)
        // The vault is called outside the transaction (a remote call never holds a row lock).
        // A value is withdrawn from it whenever nothing here comes to refer to it: a store that
        // failed or whose answer was lost, a reference this service failed to record, a value
        // replaced. Each withdrawal is a request in this service's outbox (durable, so the
        // vault unreachable only delays it); only when this database cannot take it either
        // does a value stay under the user's subject, exported with the user's data and
        // shredded with it.
        for (kind, value) in body.profile?.vaultValues ?? [] {
            let stored = try await calls.storeInVault(
                piiURL, tenant: tenant, subject: subject, kind: kind, value: value, withdrawingThrough: context, source: .registration)
            // The reference it replaces (an account opened again by a later sign-up before it
            // held anything), read under the user's row lock: of two sign-ups of one account at
            // once, the second waits, replaces and withdraws the first's in the same transaction
            // (the profile row may not exist yet, so it cannot be the lock).
            do {
                try await context.withTransaction { conn in
                    try await conn.query("SELECT 1 FROM users WHERE tenant_id = \(tenant) AND username = \(body.username) FOR UPDATE")
                    let old = try await conn.query(
                        "SELECT pii_ref FROM user_profiles WHERE tenant_id = \(tenant) AND username = \(body.username) AND kind = \(kind)"
                    ).first?.string("pii_ref")
                    try await conn.query(
                        """
                        INSERT INTO user_profiles (tenant_id, username, kind, pii_ref, masked, updated_at)
                        VALUES (\(tenant), \(body.username), \(kind), \(stored.ref), \(stored.masked), \(Date()))
                        ON CONFLICT (tenant_id, username, kind) DO UPDATE
                        SET pii_ref = EXCLUDED.pii_ref, masked = EXCLUDED.masked, updated_at = EXCLUDED.updated_at
                        """)
                    if let old, old != stored.ref {
                        try await InternalCalls.requestVaultWithdrawal(old, tenant: tenant, source: .registration, on: conn)
                    }
                }
            } catch {
                await calls.withdrawFromVault(piiURL, ref: stored.ref, tenant: tenant, through: context, source: .registration) { conn in
                    try await !conn.query(
                        """
                        SELECT 1 FROM user_profiles WHERE tenant_id = \(tenant) AND username = \(body.username) AND kind = \(kind) AND pii_ref = \(stored.ref)
                        """
                    ).isEmpty
                }
                throw error
            }
        }
        return SignUpAccount(userHandle: subject)
    }
}

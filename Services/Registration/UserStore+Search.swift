import FoundationEssentials
import Postgres
import Schema

extension UserStore {
    /// The tenant's users whose username starts with `prefix` (bytes, as PostgreSQL compares
    /// in the databases' `C.UTF-8` collation), after `after` in username order, at most
    /// `limit`, plus whether more follow.
    ///
    /// The range `username >= prefix` (or `> after`) starts a scan of the primary key at the
    /// first candidate; `starts_with` ends the page's worth of matches, never a whole tenant's
    /// users past the prefix (`LIMIT`).
    func search(tenant: String, prefix: String, after: String?, limit: Int) async throws -> UserSearchResult {
        let rows = try await pool.withConnection { conn in
            if let after {
                try await conn.query(
                    """
                    SELECT username, created_at, passkey_only FROM users
                    WHERE tenant_id = \(tenant) AND username > \(after) AND starts_with(username, \(prefix))
                    ORDER BY username LIMIT \(limit + 1)
                    """)
            } else {
                try await conn.query(
                    """
                    SELECT username, created_at, passkey_only FROM users
                    WHERE tenant_id = \(tenant) AND username >= \(prefix) AND starts_with(username, \(prefix))
                    ORDER BY username LIMIT \(limit + 1)
                    """)
            }
        }
        let users = rows.prefix(limit).compactMap { row -> UserSummary? in
            guard let username = row.string("username"), let createdAt = row.date("created_at") else { return nil }
            return UserSummary(username: username, createdAt: createdAt, passkeyOnly: row.bool("passkey_only") ?? false)
        }
        return UserSearchResult(users: users, next: rows.count > limit ? users.last?.username : nil)
    }
}

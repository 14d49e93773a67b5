import FoundationEssentials

/// `GET /v1/admin/tenants/{tenant}/users?prefix=&after=&limit=` (registration service, admin
/// token): a tenant's users whose username starts with `prefix`, in username order (bytes),
/// a page at a time. What operators search by; no personal data beyond the username.
public struct UserSearchResult: Codable, Sendable, Equatable {
    public var users: [UserSummary]
    /// The `after` of the next page; absent on the last one.
    public var next: String?

    public init(users: [UserSummary], next: String? = nil) {
        self.users = users
        self.next = next
    }

    /// The most users a page holds (`limit`, 20 when absent).
    public static let maximumLimit = 100
    /// The longest `prefix` or `after` (a username's bytes at most).
    public static let maximumPrefixBytes = 256

    public static var fullExample: UserSearchResult { UserSearchResult(users: [.fullExample], next: "alice") }
}

/// One user found by a search.
public struct UserSummary: Codable, Sendable, Equatable {
    public var username: String
    public var createdAt: Date
    /// Opened by a username-less sign-up: registers passkeys only.
    public var passkeyOnly: Bool

    public init(username: String, createdAt: Date, passkeyOnly: Bool) {
        self.username = username
        self.createdAt = createdAt
        self.passkeyOnly = passkeyOnly
    }

    public static var fullExample: UserSummary {
        UserSummary(username: "alice", createdAt: Date(timeIntervalSince1970: 1_767_225_600), passkeyOnly: false)
    }
}

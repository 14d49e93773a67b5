/// What an operator of the console may do. Each role includes the ones before it.
///
/// | role | may |
/// |---|---|
/// | `viewer` | read tenants, policies, rulesets and users; run the explain dry run |
/// | `operator` | also act on users: suspend and resume authenticators, revoke sessions, unlock, erase (not on the operators' own tenant: there, administrators only) |
/// | `administrator` | also change tenants, API keys, policies and rulesets |
public enum OperatorRole: String, Sendable, Comparable, CaseIterable {
    case viewer, `operator`, administrator

    private var rank: Int { Self.allCases.firstIndex(of: self)! }

    public static func < (a: OperatorRole, b: OperatorRole) -> Bool { a.rank < b.rank }
}

/// The operators of the console and their roles (`SIGNET_CONSOLE_OPERATORS`:
/// `name=role,name=role`). Usernames are those of the operators' tenant, compared by their
/// bytes (README "Security boundaries"), never by `String ==`.
public struct OperatorDirectory: Sendable {
    private let roles: [[UInt8]: OperatorRole]

    public init(_ entries: [(username: String, role: OperatorRole)]) {
        var roles: [[UInt8]: OperatorRole] = [:]
        for entry in entries { roles[Array(entry.username.utf8)] = entry.role }
        self.roles = roles
    }

    /// Parses `name=role,name=role`.
    ///
    /// - Returns: nil when an entry is not `name=role` with a known role and a valid username.
    public static func parse(_ text: String, isValidUsername: (String) -> Bool) -> OperatorDirectory? {
        var entries: [(String, OperatorRole)] = []
        for item in text.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
            guard parts.count == 2, isValidUsername(parts[0]), let role = OperatorRole(rawValue: parts[1]) else { return nil }
            entries.append((parts[0], role))
        }
        return OperatorDirectory(entries)
    }

    /// The role of `username`, or nil for someone who is not an operator.
    public func role(of username: String) -> OperatorRole? { roles[Array(username.utf8)] }

    public var isEmpty: Bool { roles.isEmpty }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}

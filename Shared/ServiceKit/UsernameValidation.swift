import HTTPServer
import Schema

/// Usernames at the HTTP boundary: every username a route reads, from a body or a path, passes
/// here, so that none that is not in ``UsernameRules`` form (NFC among others) reaches a query,
/// an ownership check, a token or an event.
extension UsernameRules {
    /// Returns `username` when valid.
    ///
    /// - Throws: 400 `invalid_field` naming `field`; the detail never echoes the value.
    @discardableResult
    public static func require(_ username: String, field: String = "username") throws -> String {
        guard isValid(username) else { throw HTTPError.invalid(field, requirement) }
        return username
    }
}

extension RequestContext {
    /// The `{username}` path parameter, checked by ``UsernameRules/require(_:field:)``.
    ///
    /// - Throws: 400 `invalid_field` (`username`).
    public func username() throws -> String {
        try UsernameRules.require(parameter("username"))
    }
}

extension Principal {
    /// Whether this principal is a user's session (or sign-up) token for another account than
    /// `username`, compared by ``UsernameRules/identical(_:_:)``. RP keys and admins act on any
    /// account of their tenant.
    public func isOtherUser(than username: String) -> Bool {
        switch self {
        case .user(_, let subject), .signingUp(_, let subject, _):
            return !UsernameRules.identical(subject, username)
        default:
            return false
        }
    }
}

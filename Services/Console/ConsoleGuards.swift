import Foundation
import Crypto
import HTTPServer

/// Authenticates the console's callers: an operator's session cookie, the role a route needs,
/// and, on every state-changing call, the session's CSRF token and the console's origin.
///
/// | guard | admits |
/// |---|---|
/// | `public` | anyone (the page, the sign-in and enrolment ceremonies) |
/// | `consoleViewer` | a live session of any role |
/// | `consoleOperator` | a session of an operator or administrator |
/// | `consoleAdministrator` | a session of an administrator |
/// | `consoleOperator[operatorsTenant:administrator]` | a session of an operator or administrator; on the operators' tenant, of an administrator |
///
/// The principal is the operator as a user of the operators' tenant.
public struct ConsoleGuards: Sendable {
    public let sessions: OperatorSessions
    public let cookie: SessionCookie
    public let operatorsTenant: String
    /// The console's origin (`SIGNET_CONSOLE_ORIGIN`): the only `Origin` state-changing calls
    /// may carry.
    public let origin: String

    public static let csrfHeader = "X-CSRF-Token"

    public init(sessions: OperatorSessions, cookie: SessionCookie, operatorsTenant: String, origin: String) {
        self.sessions = sessions
        self.cookie = cookie
        self.operatorsTenant = operatorsTenant
        self.origin = origin
    }

    /// A route for operators of at least `role`.
    public func at(_ role: OperatorRole) -> RouteGuard {
        RouteGuard(name: Self.name(role)) { request, _ in try await self.principal(request, role: role) }
    }

    /// A route that changes a tenant's users (erases one, suspends or resumes a credential,
    /// unlocks a method, revokes a session): operators of at least `role` on any tenant but the
    /// operators' own, administrators only on that one. Its users are the console's operators:
    /// an operator who could erase an administrator there, or suspend the administrator's
    /// passkeys, could lock every administrator out, or (with the enrolment code) enrol a
    /// passkey of their own under the administrator's name and sign in with that role.
    ///
    /// - Important: For routes whose path names the `{tenant}` (checked by
    ///   `signetParameterChecks` before the guard: lower-case ASCII, so comparing the bytes is
    ///   comparing the tenant).
    /// - Throws: as ``at(_:)``; 403 `console_role_insufficient` for an operator on the
    ///   operators' tenant.
    public func changingUsers(at role: OperatorRole) -> RouteGuard {
        RouteGuard(name: Self.name(role) + "[operatorsTenant:administrator]") { request, ctx in
            let operators = ctx.parameter("tenant").utf8.elementsEqual(operatorsTenant.utf8)
            return try await self.principal(request, role: operators ? .administrator : role)
        }
    }

    /// `consoleViewer`, `consoleOperator`, `consoleAdministrator`: as the authorization matrix
    /// names the guards.
    private static func name(_ role: OperatorRole) -> String {
        "console" + role.rawValue.prefix(1).uppercased() + role.rawValue.dropFirst()
    }

    private func principal(_ request: HTTPRequest, role: OperatorRole) async throws -> Principal {
        let session = try await session(request)
        guard session.role >= role else {
            throw HTTPError(.consoleRoleInsufficient, detail: "This needs the \(role.rawValue) role.")
        }
        return .user(tenant: operatorsTenant, username: session.username)
    }

    /// The live session of the request; on a state-changing method, also checks the origin
    /// and the CSRF token.
    ///
    /// - Throws: 401 `console_session_required`, 403 `console_origin_refused` or
    ///   `console_csrf_invalid`.
    public func session(_ request: HTTPRequest) async throws -> OperatorSession {
        if Self.changesState(request.method) { try checkOrigin(request) }
        guard let token = cookie.token(in: request), let session = await sessions.find(token: token) else {
            throw HTTPError(.consoleSessionRequired, detail: "Sign in to the console.")
        }
        if Self.changesState(request.method) {
            guard let presented = request.header(Self.csrfHeader), presented.utf8.count <= 256,
                ConstantTime.secretsEqual(presented, session.csrfToken)
            else { throw HTTPError(.consoleCSRFInvalid, detail: "State-changing calls carry the session's \(Self.csrfHeader).") }
        }
        return session
    }

    /// Refuses a request whose `Origin` is another site's. A request without one (not from a
    /// browser's fetch) passes: the cookie is `SameSite=Strict` and the CSRF token is checked.
    public func checkOrigin(_ request: HTTPRequest) throws {
        if let presented = request.header("Origin"), presented != origin {
            throw HTTPError(.consoleOriginRefused, detail: "Calls come from the console's own page.")
        }
    }

    static func changesState(_ method: String) -> Bool { !["GET", "HEAD", "OPTIONS"].contains(method) }
}

/// The session cookie: `HttpOnly`, `SameSite=Strict`, `Path=/console/`, and `Secure` when the
/// console is served over TLS.
public struct SessionCookie: Sendable {
    public let name = "signet_console"
    public let secure: Bool
    public let maxAge: Int

    public init(secure: Bool, maxAge: Int) {
        self.secure = secure
        self.maxAge = maxAge
    }

    /// The `Set-Cookie` value carrying `token`.
    public func setting(_ token: String) -> String {
        "\(name)=\(token); Path=/console/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// The `Set-Cookie` value that removes the cookie.
    public var clearing: String {
        "\(name)=; Path=/console/; Max-Age=0; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// The session token the request's `Cookie` header carries, if any.
    public func token(in request: HTTPRequest) -> String? {
        for header in request.headers where header.name.lowercased() == "cookie" {
            for pair in header.value.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                if parts[0].trimmingCharacters(in: .whitespaces) == name {
                    let value = parts[1].trimmingCharacters(in: .whitespaces)
                    return value.isEmpty ? nil : value
                }
            }
        }
        return nil
    }
}

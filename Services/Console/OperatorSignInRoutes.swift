import Crypto
import Foundation
import HTTPServer
import JSON
import Schema
import Tokens

/// Operators sign in to the console with a passkey of the operators' tenant: the console is
/// that tenant's relying party and runs the ceremonies through the registration and
/// authentication services' public APIs. What the browser gets is a console session cookie,
/// never the services' session token, the admin token or the tenant's API key.
///
/// - `POST /console/api/sign-in/options` `{}` → `{"handle","publicKey"}` (discoverable
///   credentials, user verification required)
/// - `POST /console/api/sign-in` `{"handle","credential"}` → `{"username","role","csrfToken"}`
///   and the session cookie; 403 `console_user_verification_required` for an assertion
///   without user verification (whatever options the handle came from), 403
///   `console_not_an_operator` for a user without a role
/// - `POST /console/api/enrolments/options` `{"username","code"}` → `{"handle","publicKey"}`:
///   an operator without a passkey yet enrols one with the enrolment code
///   (`SIGNET_CONSOLE_ENROLMENT_CODE`); 403 `console_enrolment_refused` otherwise
/// - `POST /console/api/enrolments` `{"handle","credential"}` → as sign-in; 403
///   `console_enrolment_refused` when the operator has a passkey by now (checked again before
///   the registration)
/// - Both: 403 `console_credential_inactive` for a passkey the registration service has
///   reported suspended or deleted; a session ends when its passkey is suspended or deleted
///   later (``OperatorsTenantEvents``)
/// - `GET /console/api/session` → `{"username","role","csrfToken"}`
/// - `POST /console/api/sign-out` → 204, the cookie cleared
struct OperatorSignInRoutes: Sendable {
    let upstream: any ConsoleUpstream
    let guards: ConsoleGuards
    let operators: OperatorDirectory
    /// Absent: enrolment is closed.
    let enrolmentCode: String?

    var tenant: String { guards.operatorsTenant }

    func register(on router: inout GuardedRouter) {
        router.post("/console/api/sign-in/options", .open) { request, _ in
            try guards.checkOrigin(request)
            let body = try JSONValueEncoder().encodeToBytes(AuthenticationOptionsRequest(userVerification: "required"))
            let answer = try await upstream.send(.authentication, "POST", "/v1/tenants/\(tenant)/webauthn/authentications/options", credential: .none, body: body)
            try answer.requireSuccess()
            return answer.asResponse
        }
        router.post("/console/api/sign-in", .open) { request, ctx in
            try guards.checkOrigin(request)
            let finish = try request.decode(CeremonyFinish.self)
            let body = try JSONValueEncoder().encodeToBytes(finish)
            let answer = try await upstream.send(.authentication, "POST", "/v1/tenants/\(tenant)/webauthn/authentications", credential: .none, body: body)
            let result = try answer.decode(SignedIn.self)
            // The options above ask for user verification, but the handle may come from the
            // authentication service's public options route, where a caller can ask for less
            // (`discouraged`): what counts is what the authenticator did, which the session
            // token's `amr` says.
            guard Self.userVerified(sessionToken: result.sessionToken) else {
                ctx.logger.notice("console sign-in refused: the authenticator did not verify the user")
                throw HTTPError(.consoleUserVerificationRequired, detail: "Sign in with a passkey that verifies you (PIN or biometric).")
            }
            guard let role = operators.role(of: result.username) else {
                ctx.logger.notice("console sign-in refused: not an operator")
                throw HTTPError(.consoleNotAnOperator, detail: "This passkey's user has no console role.")
            }
            // The authentication service checked a present `userHandle` against the credential's.
            let userHandle = finish.credential["response"]?["userHandle"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            return try await openSession(username: result.username, role: role, credentialID: result.credentialId, userHandle: userHandle, ctx)
        }
        router.post("/console/api/enrolments/options", .open) { request, ctx in try await enrolmentOptions(request, ctx) }
        router.post("/console/api/enrolments", .open) { request, ctx in
            try guards.checkOrigin(request)
            let finish = try request.decode(CeremonyFinish.self)
            guard let username = await guards.sessions.takeEnrolment(handle: finish.handle), let role = operators.role(of: username) else {
                throw HTTPError(.consoleEnrolmentRefused, detail: "Start the enrolment again.")
            }
            // Checked again right before the registration: the options' check is up to five
            // minutes old, and a passkey enrolled since (the operator's own, or any) means this
            // ceremony would add a second one to an account that is not the caller's to claim.
            guard try await !hasPasskey(username) else {
                ctx.logger.notice("console enrolment refused at finish: the operator has a passkey")
                throw HTTPError(.consoleEnrolmentRefused, detail: "This operator has a passkey; sign in with it.")
            }
            let body = try JSONValueEncoder().encodeToBytes(
                RegistrationFinishBody(handle: finish.handle, credential: finish.credential, friendlyName: "Signet console"))
            let answer = try await upstream.send(.registration, "POST", "/v1/tenants/\(tenant)/webauthn/registrations", credential: .operatorsRelyingParty, body: body)
            let enrolled = try answer.decode(EnrolledCredential.self)
            ctx.logger.info("console operator enrolled a passkey")
            return try await openSession(username: username, role: role, credentialID: enrolled.credentialId, userHandle: nil, ctx)
        }
        router.get("/console/api/session", guards.at(.viewer)) { request, _ in
            let session = try await guards.session(request)
            return try .json(SessionView(username: session.username, role: session.role.rawValue, csrfToken: session.csrfToken), headers: [("Cache-Control", "no-store")])
        }
        router.post("/console/api/sign-out", guards.at(.viewer)) { request, _ in
            if let token = guards.cookie.token(in: request) { await guards.sessions.close(token: token) }
            return HTTPResponse(status: 204, headers: [("Set-Cookie", guards.cookie.clearing), ("Cache-Control", "no-store")])
        }
    }

    /// - Throws: 403 `console_credential_inactive` when the registration service has reported
    ///   the credential suspended or deleted (the authentication service's copy may lag).
    private func openSession(
        username: String, role: OperatorRole, credentialID: String, userHandle: String?, _ ctx: RequestContext
    ) async throws -> HTTPResponse {
        guard let opened = await guards.sessions.open(username: username, role: role, credentialID: credentialID, userHandle: userHandle)
        else {
            ctx.logger.notice("console sign-in refused: the passkey is suspended or deleted")
            throw HTTPError(.consoleCredentialInactive, detail: "This passkey is suspended or deleted.")
        }
        let (token, session) = opened
        ctx.logger.info("console session opened", metadata: ["signet.console.role": .string(role.rawValue)])
        return try .json(
            SessionView(username: username, role: role.rawValue, csrfToken: session.csrfToken),
            headers: [("Set-Cookie", guards.cookie.setting(token)), ("Cache-Control", "no-store")])
    }

    /// Whether the authentication service's session token says the authenticator verified the
    /// user: its `amr` holds `mfa` (RFC 8176, as `SessionIssuer` writes it for an assertion
    /// with the UV flag).
    ///
    /// The token is read for its claims, not verified: it is the answer of the authentication
    /// service to the console's own call, the same answer whose `username` the console takes,
    /// so its signature would say nothing more about it. A token that does not parse, or
    /// without `amr`, counts as no user verification.
    static func userVerified(sessionToken: String) -> Bool {
        guard let jws = try? JWS(compact: sessionToken), let claims = try? JSONParser.parse(jws.payload, maximumDepth: 8) else { return false }
        return claims["amr"]?.stringArrayValue?.contains("mfa") == true
    }

    /// The enrolment code is checked first (in constant time), then the role, then that the
    /// operator has no passkey yet: a code that leaks can enrol nobody who already has one.
    private func enrolmentOptions(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        try guards.checkOrigin(request)
        let body = try request.decode(EnrolmentOptionsRequest.self)
        let refused = HTTPError(.consoleEnrolmentRefused, detail: "Enrolment needs the enrolment code and an operator without a passkey.")
        guard let enrolmentCode, body.code.utf8.count <= 256, ConstantTime.secretsEqual(body.code, enrolmentCode) else { throw refused }
        guard UsernameRules.isValid(body.username) else { throw HTTPError.invalid("username", "username is not a valid username.") }
        guard operators.role(of: body.username) != nil else { throw refused }
        guard try await !hasPasskey(body.username) else { throw refused }
        let options = RegistrationOptionsRequest(
            username: body.username, displayName: body.username,
            authenticatorSelection: AuthenticatorSelectionJSON(residentKey: "required", userVerification: "required"))
        let answer = try await upstream.send(
            .registration, "POST", "/v1/tenants/\(tenant)/webauthn/registrations/options", credential: .operatorsRelyingParty,
            body: try JSONValueEncoder().encodeToBytes(options))
        let response = try answer.decode(EnrolmentOptionsAnswer.self)
        await guards.sessions.expectEnrolment(handle: response.handle, username: body.username)
        ctx.logger.info("console enrolment started")
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: answer.body)
    }

    /// Whether `username` has a credential on the operators' tenant, in any status but deleted
    /// (a suspended passkey is still the operator's): asked at the enrolment's options and
    /// again right before its registration.
    ///
    /// - Throws: the registration service's problem, or 503 when it does not answer.
    private func hasPasskey(_ username: String) async throws -> Bool {
        let path = "/v1/tenants/\(tenant)/users/\(PathSegment.encode(username))/credentials"
        let existing = try await upstream.send(.registration, "GET", path, credential: .operatorsRelyingParty, body: nil)
        // 404: no such user yet, so no passkey.
        if existing.status == 404 { return false }
        return try !existing.decode(CredentialCount.self).credentials.isEmpty
    }
}

// MARK: - Bodies

struct EnrolmentOptionsRequest: Codable, Sendable {
    let username: String
    let code: String
}

/// A ceremony's finish as the page sends it; the credential goes on to the service, which
/// checks it strictly.
struct CeremonyFinish: Codable, Sendable {
    let handle: String
    let credential: JSONValue
}

struct RegistrationFinishBody: Codable, Sendable {
    let handle: String
    let credential: JSONValue
    let friendlyName: String
}

struct EnrolmentOptionsAnswer: Decodable, Sendable {
    let handle: String
}

struct SignedIn: Decodable, Sendable {
    let username: String
    /// The credential that signed in (base64url): the session ends when it is suspended or deleted.
    let credentialId: String
    /// The authentication service's session token: only its `amr` is read, and it goes no
    /// further than this process.
    let sessionToken: String
}

/// The registration service's answer to an enrolment (its `CredentialResource`): the id only.
struct EnrolledCredential: Decodable, Sendable {
    let credentialId: String
}

struct CredentialCount: Decodable, Sendable {
    let credentials: [JSONValue]
}

struct SessionView: Codable, Sendable {
    let username: String
    let role: String
    let csrfToken: String
}

/// Percent-encodes a value for one path segment of a call to a service.
enum PathSegment {
    static let allowed: CharacterSet = {
        CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    }()

    static func encode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}

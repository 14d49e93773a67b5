import Delivery
import FoundationEssentials
import HTTPServer
import Platform
import Schema
import Tokens

/// Verifies session tokens issued by the authentication service, for services that accept a
/// signed-in user's token (registration: a user adding a passkey to their own account).
///
/// The keys come from the authentication service's JWKS over HTTP
/// (`SIGNET_SESSION_JWKS_URL`), cached; a token whose `kid` is not in the cached set makes
/// one refetch (key rotation), at most every ``minimumRefetchInterval``, so a stream of
/// forged `kid`s cannot turn into a stream of fetches. ES256 only; `iss` must be the
/// configured issuer and `aud` the tenant of the request's path.
///
/// The key set is a refreshed cache, kept by an actor (``SessionKeyCache``): a verification
/// asks it for the keys once (one hop; this runs for the requests a signed-in user makes on
/// registration, not on the sign-in path), and requests that meet an unknown `kid` together
/// share one fetch.
///
/// A session token (the tenant's audience) must name its session (`sid`); a verifier built
/// ``checkingRevocations(_:)`` also refuses the token of a session the authentication service
/// revoked (``SessionRevocations``): every service that accepts session tokens builds its
/// verifier so.
public final class SessionTokenVerifier: Sendable {
    public let jwksURL: URL
    public let issuer: String
    public static let minimumRefetchInterval: Duration = .seconds(30)

    private let keys: SessionKeyCache
    private let revocations: SessionRevocations?

    public init(jwksURL: URL, issuer: String) {
        self.jwksURL = jwksURL
        self.issuer = issuer
        keys = SessionKeyCache(jwksURL: jwksURL, minimumRefetchInterval: Self.minimumRefetchInterval)
        revocations = nil
    }

    private init(_ other: SessionTokenVerifier, revocations: SessionRevocations) {
        jwksURL = other.jwksURL
        issuer = other.issuer
        keys = other.keys
        self.revocations = revocations
    }

    /// This verifier (its keys shared), also refusing the tokens of revoked sessions.
    public func checkingRevocations(_ revocations: SessionRevocations) -> SessionTokenVerifier {
        SessionTokenVerifier(self, revocations: revocations)
    }

    /// Whether this verifier refuses the tokens of revoked sessions.
    public var checksRevocations: Bool { revocations != nil }

    /// `SIGNET_SESSION_JWKS_URL` (default: the local stack's authentication service) and
    /// `SIGNET_SESSION_ISSUER` (default: the local stack's issuer).
    public static func fromEnvironment(_ env: Environment = Environment()) throws -> SessionTokenVerifier {
        let text = env.string("SIGNET_SESSION_JWKS_URL", default: "http://127.0.0.1:8082/.well-known/jwks.json")
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
            throw Environment.ConfigurationError(variable: "SIGNET_SESSION_JWKS_URL", reason: "expected an http(s) URL")
        }
        return SessionTokenVerifier(jwksURL: url, issuer: env.string("SIGNET_SESSION_ISSUER", default: "http://localhost:8080/authentication"))
    }

    /// The `aud` of sign-up and registration-only tokens (`sign_up` claim) of `tenant`: not
    /// the tenant's own, which only sessions carry, so that no verifier of sessions that checks
    /// `aud` accepts one. Tenant ids have no `/`.
    public static func registrationAudience(tenant: String) -> String { "\(tenant)/registration" }

    /// Whether `token` has the shape of a JWS compact serialisation (three base64url parts),
    /// as opposed to an RP API key.
    public static func looksLikeToken(_ token: String) -> Bool {
        token.utf8.count > 20 && token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The signed-in user of `token`, for `tenant`.
    ///
    /// - Throws: 401 `unauthorized` for any invalid token (the detail names the check, never
    ///   the token), a session token without `sid` and (``checkingRevocations(_:)``) one whose
    ///   session was revoked; 503 `service_unavailable` when the keys cannot be fetched.
    public func verify(_ token: String, tenant: String, now: Date = Date()) async throws -> Principal {
        let session = JWTValidationOptions(issuer: issuer, audience: tenant, allowedAlgorithms: [.es256], requiredClaims: ["sub"])
        let registration = JWTValidationOptions(
            issuer: issuer, audience: Self.registrationAudience(tenant: tenant), allowedAlgorithms: [.es256], requiredClaims: ["sub", "sign_up"])
        var options = session
        let refused = { (reason: String) in
            HTTPError(.unauthorized, detail: "The session token is not valid (\(reason)).", headers: [("WWW-Authenticate", "Bearer")])
        }
        var keys = try await self.keys.current()
        var refetched = false
        while true {
            let jwt: JWT
            do throws(JOSEError) {
                jwt = try JWTVerifier(keySet: keys, options: options).verify(token, now: now)
            } catch {
                // Sign-up and registration-only tokens are addressed to the registration
                // audience, so that a relying party checking `aud` against its tenant never
                // takes one for a session: tried once, when the session audience does not match.
                if error.code == .audienceMismatch, options.audience == tenant {
                    options = registration
                    continue
                }
                if error.code == .unknownKey, !refetched, let fresh = try await self.keys.refetchIfAllowed() {
                    refetched = true
                    keys = fresh
                    continue
                }
                throw refused(error.code.rawValue)
            }
            // A subject that is not a valid username (NFC among others) names no account.
            guard let subject = jwt.claims.subject, UsernameRules.isValid(subject) else { throw refused("missing_claim") }
            // A session (the tenant's audience) never has the `sign_up` claim; a sign-up or
            // registration-only token (the registration audience) always has it, true.
            if options.audience == tenant {
                guard jwt.claims[claim: "sign_up"] == nil else { throw refused("token_type") }
                // Every session token names its session: the one a revocation names.
                guard case .string(let sid)? = jwt.claims[claim: "sid"], (1...64).contains(sid.utf8.count) else { throw refused("missing_claim") }
                if let revocations, try await revocations.isRevoked(tenant: tenant, sid: sid) { throw refused("session_revoked") }
                return .user(tenant: tenant, username: subject)
            }
            guard let kind = RegistrationTokenKind(claims: jwt.claims) else { throw refused("token_type") }
            return .signingUp(tenant: tenant, username: subject, kind: kind)
        }
    }
}

/// The authentication service's JWKS, fetched when first needed and again (at most every
/// `minimumRefetchInterval`) when a token names a key it does not hold. Concurrent callers
/// that need a fetch share the one in flight.
actor SessionKeyCache {
    nonisolated let jwksURL: URL
    nonisolated let minimumRefetchInterval: Duration
    private var keys: JWKSet?
    private var fetchedAt: ContinuousClock.Instant?
    private var inFlight: Task<JWKSet, any Error>?

    init(jwksURL: URL, minimumRefetchInterval: Duration) {
        self.jwksURL = jwksURL
        self.minimumRefetchInterval = minimumRefetchInterval
    }

    /// The cached key set, fetched if there is none yet.
    func current() async throws -> JWKSet {
        if let keys { return keys }
        return try await fetch()
    }

    /// A fresh key set, unless one was fetched less than `minimumRefetchInterval` ago.
    func refetchIfAllowed(now: ContinuousClock.Instant = .now) async throws -> JWKSet? {
        if inFlight == nil, let fetchedAt, now - fetchedAt < minimumRefetchInterval { return nil }
        return try await fetch()
    }

    private func fetch() async throws -> JWKSet {
        if let inFlight { return try await inFlight.value }
        fetchedAt = .now
        let url = jwksURL
        let task = Task { try await Self.download(url) }
        inFlight = task
        defer { inFlight = nil }
        let fetched = try await task.value
        keys = fetched
        return fetched
    }

    private static func download(_ url: URL) async throws -> JWKSet {
        let unavailable = HTTPError(.unavailable, detail: "Session tokens cannot be checked right now; retry.")
        guard let answer = try? await HTTPClient.shared.send("GET", url.absoluteString, headers: ["Accept: application/json"], timeout: .seconds(5), responseLimit: 64 * 1024, followRedirects: true),
            answer.status == 200, !answer.truncated, let keys = try? JWKSet(json: answer.body)
        else { throw unavailable }
        return keys
    }
}

extension TenantDirectory {
    /// Authenticates an RP backend by API key, or a signed-in user by session token (when
    /// `sessions` is given), for `tenant`.
    ///
    /// - Throws: 401 `unauthorized` for a missing, unknown or invalid credential.
    public func authenticateRelyingPartyOrUser(
        _ request: HTTPRequest, tenant: String, sessions: SessionTokenVerifier?
    ) async throws -> Principal {
        if let sessions, let token = request.bearerToken, SessionTokenVerifier.looksLikeToken(token) {
            return try await sessions.verify(token, tenant: tenant)
        }
        return try await authenticateRelyingParty(request, tenant: tenant)
    }
}

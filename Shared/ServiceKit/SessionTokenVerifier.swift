import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPServer
import Platform
import Schema
import Synchronization
import Tokens

/// Verifies session tokens issued by the authentication service, for services that accept a
/// signed-in user's token (registration: a user adding a passkey to their own account).
///
/// The keys come from the authentication service's JWKS over HTTP
/// (`SIGNET_SESSION_JWKS_URL`), cached; a token whose `kid` is not in the cached set makes
/// one refetch (key rotation), at most every ``minimumRefetchInterval``, so a stream of
/// forged `kid`s cannot turn into a stream of fetches. ES256 only; `iss` must be the
/// configured issuer and `aud` the tenant of the request's path.
public final class SessionTokenVerifier: Sendable {
    public let jwksURL: URL
    public let issuer: String
    public static let minimumRefetchInterval: Duration = .seconds(30)

    private struct State {
        var keys: JWKSet?
        var fetchedAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    public init(jwksURL: URL, issuer: String) {
        self.jwksURL = jwksURL
        self.issuer = issuer
    }

    /// `SIGNET_SESSION_JWKS_URL` (default: the local stack's authentication service) and
    /// `SIGNET_SESSION_ISSUER` (default: the local stack's issuer).
    public static func fromEnvironment(_ env: Environment = Environment()) throws -> SessionTokenVerifier {
        let text = env.string("SIGNET_SESSION_JWKS_URL", default: "http://127.0.0.1:8082/.well-known/jwks.json")
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
            throw Environment.ConfigurationError(variable: "SIGNET_SESSION_JWKS_URL", reason: "expected an http(s) URL")
        }
        return SessionTokenVerifier(jwksURL: url, issuer: env.string("SIGNET_SESSION_ISSUER", default: "http://localhost:8080/authentication"))
    }

    /// Whether `token` has the shape of a JWS compact serialisation (three base64url parts),
    /// as opposed to an RP API key.
    public static func looksLikeToken(_ token: String) -> Bool {
        token.utf8.count > 20 && token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The signed-in user of `token`, for `tenant`.
    ///
    /// - Throws: 401 `unauthorized` for any invalid token (the detail names the check, never
    ///   the token); 503 `service_unavailable` when the keys cannot be fetched.
    public func verify(_ token: String, tenant: String, now: Date = Date()) async throws -> Principal {
        let options = JWTValidationOptions(issuer: issuer, audience: tenant, allowedAlgorithms: [.es256], requiredClaims: ["sub"])
        let refused = { (reason: String) in
            HTTPError(.unauthorized, detail: "The session token is not valid (\(reason)).", headers: [("WWW-Authenticate", "Bearer")])
        }
        var keys = try await currentKeys()
        for attempt in 0..<2 {
            do throws(JOSEError) {
                let jwt = try JWTVerifier(keySet: keys, options: options).verify(token, now: now)
                // A subject that is not a valid username (NFC among others) names no account.
                guard let subject = jwt.claims.subject, UsernameRules.isValid(subject) else { break }
                if jwt.claims[claim: "sign_up"] == .bool(true) { return .signingUp(tenant: tenant, username: subject) }
                return .user(tenant: tenant, username: subject)
            } catch {
                if error.code == .unknownKey, attempt == 0, let fresh = try await refetchIfAllowed() {
                    keys = fresh
                    continue
                }
                throw refused(error.code.rawValue)
            }
        }
        throw refused("missing_claim")
    }

    private func currentKeys() async throws -> JWKSet {
        if let keys = state.withLock({ $0.keys }) { return keys }
        return try await fetch()
    }

    /// A fresh key set, unless one was fetched less than ``minimumRefetchInterval`` ago.
    private func refetchIfAllowed() async throws -> JWKSet? {
        let allowed = state.withLock { s -> Bool in
            guard let at = s.fetchedAt else { return true }
            return ContinuousClock.now - at >= Self.minimumRefetchInterval
        }
        return allowed ? try await fetch() : nil
    }

    private func fetch() async throws -> JWKSet {
        state.withLock { $0.fetchedAt = .now }
        let unavailable = HTTPError(.unavailable, detail: "Session tokens cannot be checked right now; retry.")
        var request = URLRequest(url: jwksURL, timeoutInterval: 5)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        guard let (data, response) = try? await URLSession.shared.data(for: request), (response as? HTTPURLResponse)?.statusCode == 200,
            data.count <= 64 * 1024, let keys = try? JWKSet(json: Array(data))
        else { throw unavailable }
        state.withLock { $0.keys = keys }
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

import Crypto
import Delivery
import FoundationEssentials
import JSON
import Platform
import Tokens

/// The provider credentials of push delivery, from the environment. Either provider may be
/// absent: devices of its platform then get no push (they still see their pending approvals).
///
/// - APNs: `SIGNET_APNS_KEY_FILE` (the `.p8` token-signing key, PKCS#8 PEM, P-256),
///   `SIGNET_APNS_KEY_ID`, `SIGNET_APNS_TEAM_ID`, `SIGNET_APNS_URL` (default
///   `https://api.push.apple.com`; `https://api.sandbox.push.apple.com` for development apps).
/// - FCM: `SIGNET_FCM_SERVICE_ACCOUNT_FILE` (the service account's JSON key: `project_id`,
///   `client_email`, `private_key` RSA PEM, `token_uri`), `SIGNET_FCM_URL` (default
///   `https://fcm.googleapis.com`).
struct PushCredentials: Sendable {
    struct APNs: Sendable {
        let key: PrivateKey
        let keyID: String
        let teamID: String
        let url: String
    }

    struct FCM: Sendable {
        let key: PrivateKey
        let clientEmail: String
        let projectID: String
        let tokenURI: String
        let url: String
    }

    let apns: APNs?
    let fcm: FCM?

    /// Whether a push to a device of `platform` can be sent (its provider is configured).
    func provides(_ platform: String) -> Bool { platform == "ios" ? apns != nil : fcm != nil }

    static func fromEnvironment(_ env: Environment) throws -> PushCredentials {
        var apns: APNs?
        if let file = env.optionalString("SIGNET_APNS_KEY_FILE") {
            guard let pem = try? String(contentsOfFile: file, encoding: .utf8), let key = try? PrivateKey.fromPEM(pem), key.kind == .ec(.p256) else {
                throw Environment.ConfigurationError(variable: "SIGNET_APNS_KEY_FILE", reason: "expected a readable PKCS#8 PEM P-256 key (.p8)")
            }
            guard let keyID = env.optionalString("SIGNET_APNS_KEY_ID"), !keyID.isEmpty else {
                throw Environment.ConfigurationError(variable: "SIGNET_APNS_KEY_ID", reason: "required with SIGNET_APNS_KEY_FILE")
            }
            guard let teamID = env.optionalString("SIGNET_APNS_TEAM_ID"), !teamID.isEmpty else {
                throw Environment.ConfigurationError(variable: "SIGNET_APNS_TEAM_ID", reason: "required with SIGNET_APNS_KEY_FILE")
            }
            apns = APNs(key: key, keyID: keyID, teamID: teamID, url: env.string("SIGNET_APNS_URL", default: "https://api.push.apple.com"))
        }
        var fcm: FCM?
        if let file = env.optionalString("SIGNET_FCM_SERVICE_ACCOUNT_FILE") {
            let refused = Environment.ConfigurationError(
                variable: "SIGNET_FCM_SERVICE_ACCOUNT_FILE", reason: "expected a service account JSON key with project_id, client_email, private_key, token_uri")
            guard let data = FileManager.default.contents(atPath: file), case .object(let o)? = try? JSONParser.parse(Array(data)),
                let projectID = o["project_id"]?.stringValue, let email = o["client_email"]?.stringValue, let pem = o["private_key"]?.stringValue,
                let tokenURI = o["token_uri"]?.stringValue, let key = try? PrivateKey.fromPEM(pem)
            else { throw refused }
            fcm = FCM(key: key, clientEmail: email, projectID: projectID, tokenURI: tokenURI, url: env.string("SIGNET_FCM_URL", default: "https://fcm.googleapis.com"))
        }
        return PushCredentials(apns: apns, fcm: fcm)
    }
}

/// The APNs provider token: an ES256 JWT (`kid` the key id; `iss` the team id, `iat`) that
/// APNs accepts for an hour and refuses when renewed more than once per 20 minutes; it is
/// made again after ``lifetime`` (50 minutes).
actor APNsProviderToken {
    static let lifetime: TimeInterval = 50 * 60
    let credentials: PushCredentials.APNs
    private var token: (text: String, issuedAt: Date)?

    init(credentials: PushCredentials.APNs) { self.credentials = credentials }

    func current(now: Date = Date()) throws -> String {
        if let token, now.timeIntervalSince(token.issuedAt) < Self.lifetime { return token.text }
        let claims: JSONValue = .object(["iss": .string(credentials.teamID), "iat": .int(Int64(now.timeIntervalSince1970))])
        let text = try JWS.sign(payload: Array(claims.jsonString.utf8), header: JWSHeader(algorithm: .es256, keyID: credentials.keyID), key: credentials.key)
        token = (text, now)
        return text
    }
}

/// The FCM OAuth 2.0 access token, by the JWT bearer grant (RFC 7523) with the service
/// account's key (RS256; `iss` the account, `scope` firebase.messaging, `aud` the token URI),
/// cached until a minute before it expires. One request in flight is shared by its callers.
actor FCMAccessToken {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    let credentials: PushCredentials.FCM
    let transport: PushTransport
    private var token: (text: String, expiresAt: Date)?
    private var inFlight: Task<(String, Date), any Error>?

    init(credentials: PushCredentials.FCM, transport: PushTransport) {
        self.credentials = credentials
        self.transport = transport
    }

    func current(now: Date = Date()) async throws -> String {
        if let token, token.expiresAt.timeIntervalSince(now) > 60 { return token.text }
        if let inFlight { return try await inFlight.value.0 }
        let task = Task { [credentials, transport] in try await Self.fetch(credentials, transport, now: now) }
        inFlight = task
        defer { inFlight = nil }
        let fetched = try await task.value
        token = fetched
        return fetched.0
    }

    /// Drops the cached token (after the provider refused it).
    func invalidate() { token = nil }

    private static func fetch(_ c: PushCredentials.FCM, _ transport: PushTransport, now: Date) async throws -> (String, Date) {
        let iat = Int64(now.timeIntervalSince1970)
        let claims: JSONValue = .object([
            "iss": .string(c.clientEmail), "scope": .string(scope), "aud": .string(c.tokenURI), "iat": .int(iat), "exp": .int(iat + 3600),
        ])
        let algorithm: JWSAlgorithm = c.key.kind == .ec(.p256) ? .es256 : .rs256
        let assertion = try JWS.sign(payload: Array(claims.jsonString.utf8), header: JWSHeader(algorithm: algorithm, type: "JWT"), key: c.key)
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let response = try await transport.post(
            url: c.tokenURI, headers: ["Content-Type: application/x-www-form-urlencoded", "Accept: application/json"], body: Array(form.utf8))
        if let error = PushTransport.error(forStatus: response.status, provider: .oauth, body: response.body) { throw error }
        guard case .object(let o)? = try? JSONParser.parse(response.body), let access = o["access_token"]?.stringValue,
            let expiresIn = o["expires_in"]?.intValue, expiresIn > 0
        else { throw DeliveryErrorFactory.malformedTokenResponse }
        return (access, now.addingTimeInterval(Double(expiresIn)))
    }
}

/// Errors the service raises itself around delivery.
enum DeliveryErrorFactory {
    /// The token endpoint answered 2xx without a usable access token.
    static let malformedTokenResponse = PushCredentialError("the FCM token endpoint answered without access_token and expires_in")
}

/// A push credential that could not be used (never carries key material).
struct PushCredentialError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

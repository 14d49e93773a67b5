import FoundationEssentials

// Wire types of adaptive authentication: sign-in flows, sessions, rulesets and settings.

/// `POST /v1/tenants/{tenant}/signins` body.
public struct SignInStartRequest: Codable, Sendable, Equatable {
    /// Absent for discoverable credentials (the user is identified by the first method).
    public var username: String?
    /// What the device says about itself and its surroundings (`deviceModel`, `ip`, `geo`…).
    public var signals: [String: AnyJSON]?
    /// What the app says about the operation (`transactionAmount`, `transactionType`…).
    public var context: [String: AnyJSON]?

    public init(username: String? = nil, signals: [String: AnyJSON]? = nil, context: [String: AnyJSON]? = nil) {
        self.username = username
        self.signals = signals
        self.context = context
    }

    public static var fullExample: SignInStartRequest {
        SignInStartRequest(
            username: "user-4711",
            signals: ["deviceModel": .string("Pixel 9"), "ip": .string("203.0.113.7"), "newDevice": .bool(false),
                      "geo": .object(["lat": .double(48.8566), "lon": .double(2.3522)])],
            context: ["transactionAmount": .int(2500), "transactionType": .string("transfer")])
    }
}

/// What registration decision rules ask after a sign-in.
public struct RegistrationSuggestion: Codable, Sendable, Equatable {
    /// `SUGGEST_REGISTRATION` or `ENFORCE_REGISTRATION`.
    public var action: String
    /// Every method of ``sequences``, once each, in order (what clients read before sequences).
    public var methods: [String]
    public var matchedRule: String
    /// The sequences of methods the user may register, in the order the rule proposes them
    /// (`[["fido2"], ["totp", "sms_otp"]]`: a passkey, or TOTP and SMS OTP together); a rule
    /// in the older `methods` form offers each method as a sequence of its own. Absent from
    /// answers of services older than sequences.
    public var sequences: [[String]]?

    public init(action: String, methods: [String], matchedRule: String, sequences: [[String]]? = nil) {
        self.action = action
        self.methods = methods
        self.matchedRule = matchedRule
        self.sequences = sequences
    }
}

/// `POST /v1/tenants/{tenant}/signins` response (201).
public struct SignInStarted: Codable, Sendable, Equatable {
    public var signinId: String
    /// `ALLOW`, `DENY` or `TRIGGER_AUTHENTICATION`.
    public var action: String
    /// The sequences the user can complete (methods they cannot are removed); any one
    /// completes the sign-in.
    public var sequences: [[String]]
    public var matchedRule: String
    public var expiresAt: Date
    /// `IN_PROGRESS`, `SUCCEEDED` (ALLOW), `DENIED` or `FAILED` (no sequence can be completed).
    public var status: String
    public var sessionToken: String?
    public var refreshToken: String?
    /// Instead of a session, when the registration decision rules ENFORCE_REGISTRATION: a
    /// registration-only token (30 minutes) that registers a method at the registration service
    /// and nothing else; `POST …/signins/{signinId}/session` with it then gives the session.
    public var registrationToken: String?
    /// With ALLOW: what registration decision rules suggest or enforce, as after any sign-in.
    public var registration: RegistrationSuggestion?

    public init(
        signinId: String, action: String, sequences: [[String]], matchedRule: String, expiresAt: Date, status: String,
        sessionToken: String? = nil, refreshToken: String? = nil, registrationToken: String? = nil, registration: RegistrationSuggestion? = nil
    ) {
        self.registrationToken = registrationToken
        self.registration = registration
        self.signinId = signinId
        self.action = action
        self.sequences = sequences
        self.matchedRule = matchedRule
        self.expiresAt = expiresAt
        self.status = status
        self.sessionToken = sessionToken
        self.refreshToken = refreshToken
    }

    public static var fullExample: SignInStarted {
        SignInStarted(
            signinId: "si_4f1c2a9b8e7d6c5b4a3f2e1d0c9b8a7f", action: "ALLOW", sequences: [], matchedRule: "trusted-network",
            expiresAt: Date(timeIntervalSince1970: 1_764_000_300), status: "SUCCEEDED", sessionToken: "eyJhbGciOiJFUzI1NiJ9.e30.sig",
            refreshToken: "rt_3q2+7w", registrationToken: "eyJhbGciOiJFUzI1NiJ9.e30.cmVn",
            registration: RegistrationSuggestion(
                action: "SUGGEST_REGISTRATION", methods: ["fido2", "totp", "sms_otp"], matchedRule: "one-key-only", sequences: [["fido2"], ["totp", "sms_otp"]]))
    }
}

/// Response of a method's verify step, and of `GET /v1/tenants/{tenant}/signins/{signinId}`.
/// The transaction a sign-in confirms, as the sign-in's result shows it to the app.
public struct SignInTransaction: Codable, Sendable, Equatable {
    public var transactionId: String
    /// `PENDING` (the confirmation is on its way to the transaction service), `CONFIRMED`,
    /// `REJECTED`, `EXPIRED` or `CANCELLED`.
    public var status: String
    /// Once CONFIRMED: the tcToken the transaction service issued, to hand to the RP.
    public var tcToken: String?

    public init(transactionId: String, status: String, tcToken: String? = nil) {
        self.transactionId = transactionId
        self.status = status
        self.tcToken = tcToken
    }
}

public struct SignInProgress: Codable, Sendable, Equatable {
    /// `IN_PROGRESS`, `SUCCEEDED`, `FAILED` or `DENIED`.
    public var status: String
    public var completedMethods: [String]
    /// What is left of each sequence still possible.
    public var remainingSequences: [[String]]
    public var sessionToken: String?
    public var refreshToken: String?
    /// Instead of a session, when the registration decision rules ENFORCE_REGISTRATION: a
    /// registration-only token (30 minutes) that registers a method at the registration service
    /// and nothing else; `POST …/signins/{signinId}/session` with it then gives the session.
    public var registrationToken: String?
    /// When the session token (or the registration-only token) expires.
    public var expiresAt: Date?
    /// Set when registration decision rules suggest or enforce registering more methods.
    public var registration: RegistrationSuggestion?
    /// For a sign-in that confirms a transaction: where the transaction stands, and its
    /// tcToken once the transaction service confirmed it (read `GET …/signins/{id}` again
    /// after SUCCEEDED until the status is CONFIRMED).
    public var transaction: SignInTransaction?

    public init(
        status: String, completedMethods: [String], remainingSequences: [[String]], sessionToken: String? = nil, refreshToken: String? = nil,
        registrationToken: String? = nil, expiresAt: Date? = nil, registration: RegistrationSuggestion? = nil, transaction: SignInTransaction? = nil
    ) {
        self.registrationToken = registrationToken
        self.transaction = transaction
        self.status = status
        self.completedMethods = completedMethods
        self.remainingSequences = remainingSequences
        self.sessionToken = sessionToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.registration = registration
    }

    public static var fullExample: SignInProgress {
        SignInProgress(
            status: "SUCCEEDED", completedMethods: ["fido2", "fido2"], remainingSequences: [], sessionToken: "eyJhbGciOiJFUzI1NiJ9.e30.sig",
            refreshToken: "rt_3q2+7w", registrationToken: "eyJhbGciOiJFUzI1NiJ9.e30.cmVn", expiresAt: Date(timeIntervalSince1970: 1_764_000_900),
            registration: RegistrationSuggestion(
                action: "SUGGEST_REGISTRATION", methods: ["fido2", "totp", "sms_otp"], matchedRule: "one-key-only", sequences: [["fido2"], ["totp", "sms_otp"]]),
            transaction: SignInTransaction(
                transactionId: "tx_0f1e2d3c4b5a69788796a5b4c3d2e1f0", status: "CONFIRMED", tcToken: "eyJhbGciOiJFUzI1NiIsInR5cCI6InRjK2p3dCJ9.e30.c2ln"))
    }
}

/// `POST /v1/tenants/{tenant}/signins/{signinId}/methods/fido2/verify` body.
public struct FIDO2VerifyRequest: Codable, Sendable, Equatable {
    public var credential: AuthenticationResponseJSON
    public init(credential: AuthenticationResponseJSON) { self.credential = credential }
}

/// `POST /v1/tenants/{tenant}/sessions/refresh` and `…/sessions/revoke` body.
public struct RefreshTokenRequest: Codable, Sendable, Equatable {
    public var refreshToken: String
    public init(refreshToken: String) { self.refreshToken = refreshToken }
    public static var fullExample: RefreshTokenRequest { RefreshTokenRequest(refreshToken: "rt_3q2+7w") }
}

/// `POST /v1/tenants/{tenant}/signins/{signinId}/session` body: the registration-only token a
/// sign-in gave under ENFORCE_REGISTRATION, exchanged for a session once the user registered.
public struct RegistrationSessionRequest: Codable, Sendable, Equatable {
    public var registrationToken: String
    public init(registrationToken: String) { self.registrationToken = registrationToken }
    public static var fullExample: RegistrationSessionRequest { RegistrationSessionRequest(registrationToken: "eyJhbGciOiJFUzI1NiJ9.e30.cmVn") }
}

/// A new session token and the refresh token that replaces the one presented.
public struct SessionTokens: Codable, Sendable, Equatable {
    public var sessionToken: String
    public var refreshToken: String
    public var expiresAt: Date

    public init(sessionToken: String, refreshToken: String, expiresAt: Date) {
        self.sessionToken = sessionToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    public static var fullExample: SessionTokens {
        SessionTokens(sessionToken: "eyJhbGciOiJFUzI1NiJ9.e30.sig", refreshToken: "rt_3q2+7w", expiresAt: Date(timeIntervalSince1970: 1_764_000_900))
    }
}

/// `GET`/`PUT /v1/admin/tenants/{tenant}/rulesets/{kind}` response.
public struct RulesetResource: Codable, Sendable, Equatable {
    /// `authentication` or `registration`.
    public var kind: String
    /// 0 for the built-in default (no ruleset stored), then 1, 2…
    public var version: Int
    public var rules: [AnyJSON]
    public var updatedAt: Date?

    public init(kind: String, version: Int, rules: [AnyJSON], updatedAt: Date?) {
        self.kind = kind
        self.version = version
        self.rules = rules
        self.updatedAt = updatedAt
    }

    public static var fullExample: RulesetResource {
        RulesetResource(
            kind: "authentication", version: 3,
            rules: [.object([
                "name": .string("big-amount"), "action": .string("TRIGGER_AUTHENTICATION"),
                "when": .object(["fact": .string("context.transactionAmount"), "op": .string("gt"), "value": .int(1000)]),
                "sequences": .array([.array([.string("fido2"), .string("fido2")])]), "maxTimeSeconds": .int(300),
            ])],
            updatedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
}

/// `POST /v1/admin/tenants/{tenant}/rulesets/{kind}/explain` body.
public struct RulesetExplainRequest: Codable, Sendable, Equatable {
    public var facts: [String: AnyJSON]
    public init(facts: [String: AnyJSON]) { self.facts = facts }
    public static var fullExample: RulesetExplainRequest {
        RulesetExplainRequest(facts: ["context": .object(["transactionAmount": .int(50)]), "signals": .object(["ip": .string("203.0.113.7")])])
    }
}

/// A point on Earth, for named location lists (`withinKm`).
public struct GeoLocation: Codable, Sendable, Equatable {
    public var lat: Double
    public var lon: Double
    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }
}

/// A tenant's sign-in settings: `GET`/`PUT /v1/admin/tenants/{tenant}/authentication-settings`.
/// Every member is optional on `PUT` and defaults as documented.
public struct AuthenticationSettings: Codable, Sendable, Equatable {
    /// What GET answers in place of a secret (the password check's bearer token); sent back by
    /// PUT for the same verify URL, it keeps the stored secret.
    public static let redactedSecret = "***"
    /// IANA time zone of `time.hour` and `time.weekday` facts (default `UTC`).
    public var timeZone: String
    /// Consecutive failures of a method before probation starts (default 5).
    public var probationAfterFailures: Int
    /// The first probation, doubled at each further failure (default 30 s).
    public var probationSeconds: Int
    /// Consecutive failures that lock the method until an RP or admin unlocks it (default 10).
    public var lockAfterFailures: Int
    /// Accepted clock difference for quick authentication (default ±60 s).
    public var quickAuthWindowSeconds: Int
    /// Whether quick authentication (one round trip, `POST …/signins/quick`) is offered
    /// (default true); off, it is refused with 403 `quick_auth_disabled`.
    public var quickAuthEnabled: Bool
    /// Whether the direct sign-in routes (`POST …/webauthn/authentications/options` and
    /// `…/webauthn/authentications`, `POST …/uaf/authentications/requests` and
    /// `…/uaf/authentications`) issue sessions after one assertion, without the authentication
    /// ruleset. Absent (nil, the default): only while the tenant has no authentication ruleset of
    /// its own; `true`: always (passkey-only sign-in beside the rules); `false`: never. Refused,
    /// they answer 403 `direct_sign_in_disabled`.
    public var directSignIn: Bool?
    /// Sign-in starts and verifications per minute from one IP address (default 600).
    public var signInsPerMinutePerIP: Int
    /// Sign-in starts and verifications per second for the tenant (default 2000).
    public var signInsPerSecondPerTenant: Int
    /// Named location lists for `withinKm` conditions.
    public var locations: [String: [GeoLocation]]
    /// Lifetime of e-mail and SMS one-time codes (default 300 s).
    public var otpLifetimeSeconds: Int
    /// The `external_jwt` method: JWTs the RP's server issues, checked against its JWKS.
    public var externalJWT: ExternalJWTSettings?
    /// The `external_password` method: the RP's URL that checks a password.
    public var externalPassword: ExternalPasswordSettings?

    public init(
        timeZone: String = "UTC", probationAfterFailures: Int = 5, probationSeconds: Int = 30, lockAfterFailures: Int = 10,
        quickAuthWindowSeconds: Int = 60, signInsPerMinutePerIP: Int = 600, signInsPerSecondPerTenant: Int = 2000,
        locations: [String: [GeoLocation]] = [:], otpLifetimeSeconds: Int = 300, externalJWT: ExternalJWTSettings? = nil,
        externalPassword: ExternalPasswordSettings? = nil, quickAuthEnabled: Bool = true, directSignIn: Bool? = nil
    ) {
        self.quickAuthEnabled = quickAuthEnabled
        self.directSignIn = directSignIn
        self.otpLifetimeSeconds = otpLifetimeSeconds
        self.externalJWT = externalJWT
        self.externalPassword = externalPassword
        self.timeZone = timeZone
        self.probationAfterFailures = probationAfterFailures
        self.probationSeconds = probationSeconds
        self.lockAfterFailures = lockAfterFailures
        self.quickAuthWindowSeconds = quickAuthWindowSeconds
        self.signInsPerMinutePerIP = signInsPerMinutePerIP
        self.signInsPerSecondPerTenant = signInsPerSecondPerTenant
        self.locations = locations
    }

    enum CodingKeys: String, CodingKey {
        case timeZone, probationAfterFailures, probationSeconds, lockAfterFailures, quickAuthWindowSeconds, signInsPerMinutePerIP,
            signInsPerSecondPerTenant, locations, otpLifetimeSeconds, externalJWT, externalPassword, quickAuthEnabled, directSignIn
    }

    /// Members absent from the document take their defaults.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = AuthenticationSettings()
        timeZone = try c.decodeIfPresent(String.self, forKey: .timeZone) ?? d.timeZone
        probationAfterFailures = try c.decodeIfPresent(Int.self, forKey: .probationAfterFailures) ?? d.probationAfterFailures
        probationSeconds = try c.decodeIfPresent(Int.self, forKey: .probationSeconds) ?? d.probationSeconds
        lockAfterFailures = try c.decodeIfPresent(Int.self, forKey: .lockAfterFailures) ?? d.lockAfterFailures
        quickAuthWindowSeconds = try c.decodeIfPresent(Int.self, forKey: .quickAuthWindowSeconds) ?? d.quickAuthWindowSeconds
        quickAuthEnabled = try c.decodeIfPresent(Bool.self, forKey: .quickAuthEnabled) ?? d.quickAuthEnabled
        directSignIn = try c.decodeIfPresent(Bool.self, forKey: .directSignIn)
        signInsPerMinutePerIP = try c.decodeIfPresent(Int.self, forKey: .signInsPerMinutePerIP) ?? d.signInsPerMinutePerIP
        signInsPerSecondPerTenant = try c.decodeIfPresent(Int.self, forKey: .signInsPerSecondPerTenant) ?? d.signInsPerSecondPerTenant
        locations = try c.decodeIfPresent([String: [GeoLocation]].self, forKey: .locations) ?? d.locations
        otpLifetimeSeconds = try c.decodeIfPresent(Int.self, forKey: .otpLifetimeSeconds) ?? d.otpLifetimeSeconds
        externalJWT = try c.decodeIfPresent(ExternalJWTSettings.self, forKey: .externalJWT)
        externalPassword = try c.decodeIfPresent(ExternalPasswordSettings.self, forKey: .externalPassword)
    }

    /// The first rule the settings break, as (field, message).
    public func violation() -> (field: String, message: String)? {
        if TimeZone(identifier: timeZone) == nil { return ("timeZone", "timeZone must be an IANA time zone such as Europe/Paris.") }
        if !(1...100).contains(probationAfterFailures) { return ("probationAfterFailures", "probationAfterFailures must be 1-100.") }
        if !(1...86_400).contains(probationSeconds) { return ("probationSeconds", "probationSeconds must be 1-86400.") }
        if !(1...1000).contains(lockAfterFailures) || lockAfterFailures < probationAfterFailures {
            return ("lockAfterFailures", "lockAfterFailures must be 1-1000 and at least probationAfterFailures.")
        }
        if !(5...600).contains(quickAuthWindowSeconds) { return ("quickAuthWindowSeconds", "quickAuthWindowSeconds must be 5-600.") }
        if !(1...1_000_000).contains(signInsPerMinutePerIP) { return ("signInsPerMinutePerIP", "signInsPerMinutePerIP must be 1-1000000.") }
        if !(1...1_000_000).contains(signInsPerSecondPerTenant) { return ("signInsPerSecondPerTenant", "signInsPerSecondPerTenant must be 1-1000000.") }
        if !(30...3600).contains(otpLifetimeSeconds) { return ("otpLifetimeSeconds", "otpLifetimeSeconds must be 30-3600.") }
        if let j = externalJWT {
            guard Self.isHTTPURL(j.jwksURL) else { return ("externalJWT.jwksURL", "jwksURL must be an http(s) URL.") }
            guard !j.issuer.isEmpty, !j.audience.isEmpty else { return ("externalJWT", "issuer and audience are required.") }
        }
        if let p = externalPassword, !Self.isHTTPURL(p.verifyURL) { return ("externalPassword.verifyURL", "verifyURL must be an http(s) URL.") }
        if locations.count > 100 { return ("locations", "At most 100 location lists.") }
        for (name, points) in locations {
            guard (1...64).contains(name.count), name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                return ("locations", "Location list names are 1-64 letters, digits, - or _.")
            }
            guard (1...1000).contains(points.count) else { return ("locations.\(name)", "A location list has 1-1000 points.") }
            for p in points where !((-90...90).contains(p.lat) && (-180...180).contains(p.lon)) {
                return ("locations.\(name)", "Latitudes are -90…90 and longitudes -180…180.")
            }
        }
        return nil
    }

    static func isHTTPURL(_ s: String) -> Bool {
        guard let url = URL(string: s), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else { return false }
        return s.utf8.count <= 2048
    }

    public static var fullExample: AuthenticationSettings {
        AuthenticationSettings(
            timeZone: "Europe/Paris", locations: ["offices": [GeoLocation(lat: 48.8566, lon: 2.3522), GeoLocation(lat: 51.5072, lon: -0.1276)]],
            externalJWT: ExternalJWTSettings(issuer: "https://rp.example", audience: "signet", jwksURL: "https://rp.example/jwks.json"),
            externalPassword: ExternalPasswordSettings(verifyURL: "https://rp.example/password-check", bearerToken: "rp-secret"), directSignIn: true)
    }
}

/// `PUT /v1/tenants/{tenant}/users/{username}/registration-answer` body: the user's answer to
/// a registration suggestion.
public struct RegistrationAnswerRequest: Codable, Sendable, Equatable {
    /// `NOT_NOW` (no suggestion until a sign-in that used none of the methods suggested) or
    /// `NEVER` (no suggestion until the relying party resets it).
    public var answer: String
    public init(answer: String) { self.answer = answer }
    public static var fullExample: RegistrationAnswerRequest { RegistrationAnswerRequest(answer: "NOT_NOW") }
}

/// The `external_jwt` method of a tenant: the RP's server issues a JWT for the user (`sub` the
/// username), the client passes it, Signet checks it against the RP's JWKS.
public struct ExternalJWTSettings: Codable, Sendable, Equatable {
    public var issuer: String
    public var audience: String
    public var jwksURL: String
    public init(issuer: String, audience: String, jwksURL: String) {
        self.issuer = issuer
        self.audience = audience
        self.jwksURL = jwksURL
    }
}

/// The `external_password` method of a tenant: Signet posts `{"username","password"}` to the
/// RP's URL and counts a 2xx answer as success.
public struct ExternalPasswordSettings: Codable, Sendable, Equatable {
    public var verifyURL: String
    /// Sent as `Authorization: Bearer` so the RP knows the call is Signet's. Never returned by
    /// GET (answered as `"***"`, which PUT takes as "unchanged" for the same `verifyURL`).
    public var bearerToken: String?
    public init(verifyURL: String, bearerToken: String? = nil) {
        self.verifyURL = verifyURL
        self.bearerToken = bearerToken
    }
}

/// `POST /v1/internal/tenants/{tenant}/registration-decision` (authentication service, internal):
/// what the tenant's registration decision rules say about the user now.
public struct RegistrationDecisionRequest: Codable, Sendable, Equatable {
    public var username: String
    public init(username: String) { self.username = username }
}

/// The registration decision: `SUGGEST_REGISTRATION`/`ENFORCE_REGISTRATION` with the method
/// sequences offered, `DENY`, or `IGNORE_REGISTRATION` (no opinion: any method).
public struct RegistrationDecision: Codable, Sendable, Equatable {
    public var action: String
    /// Every method of ``sequences``, once each, in order; empty for DENY and IGNORE_REGISTRATION.
    public var methods: [String]
    public var matchedRule: String
    /// The user's remembered answer to suggestions, `NOT_NOW` or `NEVER` (until the RP resets
    /// it); absent when none. Sign-in results respect it; an app asking itself may too.
    public var answer: String?
    /// For SUGGEST_REGISTRATION and ENFORCE_REGISTRATION: the sequences of methods the user
    /// may register, in the order the rule proposes them. Absent for other actions, and from
    /// services older than sequences (then each of ``methods`` is a sequence of its own).
    public var sequences: [[String]]?
    public init(action: String, methods: [String], matchedRule: String, answer: String? = nil, sequences: [[String]]? = nil) {
        self.action = action
        self.methods = methods
        self.matchedRule = matchedRule
        self.answer = answer
        self.sequences = sequences
    }

    /// The sequences offered: ``sequences``, or each of ``methods`` alone when absent.
    public var offeredSequences: [[String]] { sequences ?? methods.map { [$0] } }
}

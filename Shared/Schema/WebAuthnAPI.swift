import FoundationEssentials
import Platform

/// `POST /v1/tenants/{tenant}/webauthn/registrations/options` body.
public struct RegistrationOptionsRequest: Codable, Sendable, Equatable {
    public var username: String
    public var displayName: String?
    public var authenticatorSelection: AuthenticatorSelectionJSON?
    public var attestation: String?
    public var hints: [String]?
    /// `conditional`: options for an automatic passkey creation (WebAuthn L3 conditional
    /// create), when the tenant's FIDO policy allows it (`autoCreatePasskey`).
    public var mediation: String?

    public init(
        username: String, displayName: String? = nil, authenticatorSelection: AuthenticatorSelectionJSON? = nil, attestation: String? = nil,
        hints: [String]? = nil, mediation: String? = nil
    ) {
        self.mediation = mediation
        self.username = username
        self.displayName = displayName
        self.authenticatorSelection = authenticatorSelection
        self.attestation = attestation
        self.hints = hints
    }
}

/// Options responses: a sealed ceremony handle and the options for the browser.
public struct RegistrationOptionsResponse: Codable, Sendable, Equatable {
    public var handle: String
    public var publicKey: CreationOptionsJSON
    /// `conditional` when these options are for an automatic passkey creation: call
    /// `navigator.credentials.create({mediation: "conditional", publicKey})`.
    public var mediation: String?
    public init(handle: String, publicKey: CreationOptionsJSON, mediation: String? = nil) {
        self.handle = handle
        self.publicKey = publicKey
        self.mediation = mediation
    }
}

/// `POST /v1/tenants/{tenant}/webauthn/registrations` body.
public struct RegistrationFinishRequest: Codable, Sendable, Equatable {
    public var handle: String
    public var credential: RegistrationResponseJSON
    /// A name the user gives the credential ("Work laptop").
    public var friendlyName: String?
    /// The device the app registered from, as the SDK names it ("Pixel 8", "Alice's iPhone").
    public var deviceName: String?
    public init(handle: String, credential: RegistrationResponseJSON, friendlyName: String? = nil, deviceName: String? = nil) {
        self.handle = handle
        self.credential = credential
        self.friendlyName = friendlyName
        self.deviceName = deviceName
    }
}

/// The registered credential, as the finish call and the credential list return it.
public struct CredentialResource: Codable, Sendable, Equatable {
    public var credentialId: String
    public var aaguid: String
    public var attestationFormat: String
    public var attestationType: String
    public var algorithm: Int
    public var userVerified: Bool
    public var backupEligible: Bool
    public var backupState: Bool
    public var transports: [String]
    public var friendlyName: String?
    public var status: String
    /// Why a suspended credential is suspended when it was not the relying party's doing:
    /// `clone_suspected` (its signature counter did not increase) or `authenticator_revoked`
    /// (FIDO metadata reports its model revoked or compromised).
    public var statusReason: String?
    public var createdAt: Date
    public var lastUsedAt: Date?
    /// Quick-authentication data, in the registration response only.
    public var quickAuth: QuickAuthData?
    /// The device the credential was registered from, as the SDK named it.
    public var deviceName: String?
    /// The authenticator model, from FIDO metadata (MDS3) by its AAGUID; absent for models the
    /// metadata does not list (most passkey providers, the all-zero AAGUID).
    public var model: AuthenticatorModel?

    public init(
        credentialId: String, aaguid: String, attestationFormat: String, attestationType: String, algorithm: Int, userVerified: Bool,
        backupEligible: Bool, backupState: Bool, transports: [String], friendlyName: String?, status: String, statusReason: String? = nil, createdAt: Date,
        lastUsedAt: Date?
    ) {
        self.credentialId = credentialId
        self.aaguid = aaguid
        self.attestationFormat = attestationFormat
        self.attestationType = attestationType
        self.algorithm = algorithm
        self.userVerified = userVerified
        self.backupEligible = backupEligible
        self.backupState = backupState
        self.transports = transports
        self.friendlyName = friendlyName
        self.status = status
        self.statusReason = statusReason
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.quickAuth = nil
    }
}

/// An authenticator model as FIDO metadata describes it.
public struct AuthenticatorModel: Codable, Sendable, Equatable {
    /// The metadata statement's `description`: the model's name ("YubiKey 5 Series").
    public var name: String
    /// Its icon, a `data:` URL, when the metadata has one.
    public var icon: String?
    /// `fido2`, `u2f` or `uaf`.
    public var protocolFamily: String
    public init(name: String, icon: String?, protocolFamily: String) {
        self.name = name
        self.icon = icon
        self.protocolFamily = protocolFamily
    }
}

/// `GET /v1/tenants/{tenant}/users/{username}/credentials`.
public struct CredentialList: Codable, Sendable, Equatable {
    public var credentials: [CredentialResource]
    /// The display name of a passkey-only account (username-less sign-up), as its user picked
    /// it when registering a passkey; absent for other accounts and before one was picked.
    public var displayName: String?
    public init(credentials: [CredentialResource], displayName: String? = nil) {
        self.credentials = credentials
        self.displayName = displayName
    }
}

/// `POST /v1/tenants/{tenant}/webauthn/authentications/options` body.
public struct AuthenticationOptionsRequest: Codable, Sendable, Equatable {
    /// Absent for discoverable credentials (conditional mediation, usernameless).
    public var username: String?
    public var userVerification: String?
    public var hints: [String]?
    public init(username: String? = nil, userVerification: String? = nil, hints: [String]? = nil) {
        self.username = username
        self.userVerification = userVerification
        self.hints = hints
    }
}

public struct AuthenticationOptionsResponse: Codable, Sendable, Equatable {
    public var handle: String
    public var publicKey: RequestOptionsJSON
    public init(handle: String, publicKey: RequestOptionsJSON) {
        self.handle = handle
        self.publicKey = publicKey
    }
}

/// `POST /v1/tenants/{tenant}/webauthn/authentications` body.
public struct AuthenticationFinishRequest: Codable, Sendable, Equatable {
    public var handle: String
    public var credential: AuthenticationResponseJSON
    public init(handle: String, credential: AuthenticationResponseJSON) {
        self.handle = handle
        self.credential = credential
    }
}

/// A successful sign-in.
public struct AuthenticationResult: Codable, Sendable, Equatable {
    public var sessionToken: String
    public var username: String
    public var credentialId: String
    public var expiresAt: Date
    public init(sessionToken: String, username: String, credentialId: String, expiresAt: Date) {
        self.sessionToken = sessionToken
        self.username = username
        self.credentialId = credentialId
        self.expiresAt = expiresAt
    }
}

/// Usernames: what the RP calls the account, 1-256 printable characters, no control
/// characters, in Unicode Normalization Form C. Recommended: an opaque account id rather than
/// an email address.
///
/// A username's identity is its exact UTF-8 bytes, everywhere: PostgreSQL compares text by bytes
/// (the clusters use the C.UTF-8 locale's deterministic collation), and Swift code compares
/// usernames with ``identical(_:_:)``, never `String ==`, which treats canonically equivalent
/// strings as equal (NFC `josé` and NFD `jose` + U+0301; `Kate` and U+212A KELVIN SIGN + `ate`)
/// and would let one account act on another that the database keeps apart. Non-NFC input is
/// refused at every boundary (bodies, path parameters, events), so two usernames that a reader
/// cannot tell apart by canonical equivalence can never both exist. Case and compatibility
/// variants (`kate`, fullwidth `Ｋate`) are different usernames, consistently.
public enum UsernameRules {
    public static let maximumLength = 256
    /// Not empty, at most 256 bytes of UTF-8, no control character (general category Cc:
    /// U+0000–U+001F, U+007F–U+009F), no space (category Zs, or U+200B) at either end (the
    /// same as trimming `CharacterSet.whitespaces` changing nothing, without Foundation on every
    /// sign-in), and in Normalization Form C.
    public static func isValid(_ s: String) -> Bool {
        guard !s.isEmpty, s.utf8.count <= maximumLength else { return false }
        let scalars = s.unicodeScalars
        guard !scalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else { return false }
        // Foundation's whitespace set is Zs, tab (a control, refused above) and U+200B.
        let isSpace = { (u: Unicode.Scalar) in u.properties.generalCategory == .spaceSeparator || u.value == 0x200B }
        guard !isSpace(scalars.first!), !isSpace(scalars.last!) else { return false }
        return isNFC(s)
    }

    /// Whether `s` is in Unicode Normalization Form C: its bytes are those of its canonical
    /// composition. ASCII is NFC by definition (the common case, no allocation).
    public static func isNFC(_ s: String) -> Bool {
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return true }
        return TextFolding.isNFC(s)
    }

    /// Whether two usernames are the same account: byte-for-byte equality of their UTF-8, as
    /// the database compares them (never `==`, see the type's documentation).
    public static func identical(_ a: String, _ b: String) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    /// Why `s` is refused, for the problem's detail (never echoes the value).
    public static let requirement = "username must be 1-256 bytes of UTF-8 in Unicode NFC, without control characters or surrounding spaces."
}

/// `PATCH /v1/tenants/{tenant}/users/{username}/credentials/{credentialId}` body: rename,
/// suspend or resume.
public struct CredentialUpdateRequest: Codable, Sendable, Equatable {
    public var friendlyName: String?
    /// `active` or `suspended`.
    public var status: String?

    public init(friendlyName: String? = nil, status: String? = nil) {
        self.friendlyName = friendlyName
        self.status = status
    }

    public static var fullExample: CredentialUpdateRequest { CredentialUpdateRequest(friendlyName: "Work laptop", status: "suspended") }
}

/// The WebAuthn L3 §5.11 related origins document (`/.well-known/webauthn`).
public struct RelatedOriginsDocument: Codable, Sendable, Equatable {
    /// Origins that may use the RP ID, the tenant's configured origins.
    public var origins: [String]
    public init(origins: [String]) { self.origins = origins }

    public static var fullExample: RelatedOriginsDocument {
        RelatedOriginsDocument(origins: ["https://bank.example", "https://bank.example.co.uk", "https://app.bank-partner.example"])
    }
}

/// What a client needs to sign in with a credential in one round trip (quick authentication),
/// returned when the credential is registered.
public struct QuickAuthData: Codable, Sendable, Equatable {
    public var version: Int
    public var tenant: String
    public var rpId: String
    /// base64url credential id.
    public var credentialId: String
    /// How the client derives the challenge from the current time (FIDO.QuickAuthChallenge).
    public var challengeDerivation: String

    public init(tenant: String, rpId: String, credentialId: String) {
        version = 1
        self.tenant = tenant
        self.rpId = rpId
        self.credentialId = credentialId
        challengeDerivation = QuickAuthData.derivation
    }

    public static let derivation =
        "SHA-256(\"signet-quick-auth-v1\" || 0x00 || UTF-8 tenant || 0x00 || credential id bytes || time as big-endian uint64 Unix seconds)"

    public static var fullExample: QuickAuthData {
        QuickAuthData(tenant: "demo", rpId: "localhost", credentialId: "9y1xA8Tmg1FEmT-c7_fvWZ_uoTuoih3OvR45_oAK-cw")
    }
}

/// `POST /v1/tenants/{tenant}/signins/quick` body.
public struct QuickSignInRequest: Codable, Sendable, Equatable {
    /// The Unix time (seconds) the challenge was derived from.
    public var time: Int64
    public var credential: AuthenticationResponseJSON
    public var signals: [String: AnyJSON]?
    public var context: [String: AnyJSON]?

    public init(time: Int64, credential: AuthenticationResponseJSON, signals: [String: AnyJSON]? = nil, context: [String: AnyJSON]? = nil) {
        self.time = time
        self.credential = credential
        self.signals = signals
        self.context = context
    }
}

/// `POST /v1/tenants/{tenant}/signins/quick` response: the sign-in with its first fido2 step
/// done; SUCCEEDED when the rules ask no more, IN_PROGRESS (continue with `signinId`) when
/// they do.
public struct QuickSignInResult: Codable, Sendable, Equatable {
    public var signinId: String
    public var action: String
    public var matchedRule: String
    public var status: String
    public var completedMethods: [String]
    public var remainingSequences: [[String]]
    public var sessionToken: String?
    public var refreshToken: String?
    /// Instead of a session, when the registration decision rules ENFORCE_REGISTRATION: a
    /// registration-only token (30 minutes) that registers a method at the registration service
    /// and nothing else; `POST …/signins/{signinId}/session` with it then gives the session.
    public var registrationToken: String?
    public var expiresAt: Date?
    /// When SUCCEEDED: what registration decision rules suggest or enforce, as after any sign-in.
    public var registration: RegistrationSuggestion?

    public init(
        signinId: String, action: String, matchedRule: String, status: String, completedMethods: [String], remainingSequences: [[String]],
        sessionToken: String? = nil, refreshToken: String? = nil, registrationToken: String? = nil, expiresAt: Date? = nil,
        registration: RegistrationSuggestion? = nil
    ) {
        self.registrationToken = registrationToken
        self.registration = registration
        self.signinId = signinId
        self.action = action
        self.matchedRule = matchedRule
        self.status = status
        self.completedMethods = completedMethods
        self.remainingSequences = remainingSequences
        self.sessionToken = sessionToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    public static var fullExample: QuickSignInResult {
        QuickSignInResult(
            signinId: "si_4f1c2a9b8e7d6c5b4a3f2e1d0c9b8a7f", action: "TRIGGER_AUTHENTICATION", matchedRule: "passkey", status: "SUCCEEDED",
            completedMethods: ["fido2"], remainingSequences: [], sessionToken: "eyJhbGciOiJFUzI1NiJ9.e30.sig", refreshToken: "rt_3q2+7w",
            registrationToken: "eyJhbGciOiJFUzI1NiJ9.e30.cmVn", expiresAt: Date(timeIntervalSince1970: 1_764_000_900),
            registration: RegistrationSuggestion(action: "SUGGEST_REGISTRATION", methods: ["fido2"], matchedRule: "one-key-only"))
    }
}

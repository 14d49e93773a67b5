import Foundation

/// `POST /v1/tenants/{tenant}/webauthn/registrations/options` body.
public struct RegistrationOptionsRequest: Codable, Sendable, Equatable {
    public var username: String
    public var displayName: String?
    public var authenticatorSelection: AuthenticatorSelectionJSON?
    public var attestation: String?
    public var hints: [String]?

    public init(username: String, displayName: String? = nil, authenticatorSelection: AuthenticatorSelectionJSON? = nil, attestation: String? = nil, hints: [String]? = nil) {
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
    public init(handle: String, publicKey: CreationOptionsJSON) {
        self.handle = handle
        self.publicKey = publicKey
    }
}

/// `POST /v1/tenants/{tenant}/webauthn/registrations` body.
public struct RegistrationFinishRequest: Codable, Sendable, Equatable {
    public var handle: String
    public var credential: RegistrationResponseJSON
    /// A name the user gives the credential ("Work laptop").
    public var friendlyName: String?
    public init(handle: String, credential: RegistrationResponseJSON, friendlyName: String? = nil) {
        self.handle = handle
        self.credential = credential
        self.friendlyName = friendlyName
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
    }
}

/// `GET /v1/tenants/{tenant}/users/{username}/credentials`.
public struct CredentialList: Codable, Sendable, Equatable {
    public var credentials: [CredentialResource]
    public init(credentials: [CredentialResource]) { self.credentials = credentials }
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
/// characters. Recommended: an opaque account id rather than an email address.
public enum UsernameRules {
    public static let maximumLength = 256
    public static func isValid(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= maximumLength && !s.unicodeScalars.contains { $0.properties.generalCategory == .control }
            && s == s.trimmingCharacters(in: .whitespaces)
    }
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

import FoundationEssentials

// WebAuthn Level 3 JSON forms (§5.1.8, §5.4 and §5.5 "…JSON" dictionaries), as browsers'
// PublicKeyCredential.parseCreationOptionsFromJSON / parseRequestOptionsFromJSON accept them
// and PublicKeyCredential.toJSON() produces them. Binary members are base64url strings.

/// `PublicKeyCredentialRpEntity`.
public struct RelyingPartyEntityJSON: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// `PublicKeyCredentialUserEntityJSON`.
public struct UserEntityJSON: Codable, Sendable, Equatable {
    /// The user handle, base64url (random, never the username).
    public var id: String
    public var name: String
    public var displayName: String
    public init(id: String, name: String, displayName: String) {
        self.id = id
        self.name = name
        self.displayName = displayName
    }
}

/// `PublicKeyCredentialParameters`.
public struct CredentialParametersJSON: Codable, Sendable, Equatable {
    public var type: String
    public var alg: Int
    public init(alg: Int) {
        type = "public-key"
        self.alg = alg
    }
}

/// `PublicKeyCredentialDescriptorJSON`.
public struct CredentialDescriptorJSON: Codable, Sendable, Equatable {
    public var type: String
    public var id: String
    public var transports: [String]?
    public init(id: String, transports: [String]?) {
        type = "public-key"
        self.id = id
        self.transports = transports
    }
}

/// `AuthenticatorSelectionCriteria`.
public struct AuthenticatorSelectionJSON: Codable, Sendable, Equatable {
    public var authenticatorAttachment: String?
    public var residentKey: String?
    public var requireResidentKey: Bool?
    public var userVerification: String?
    public init(authenticatorAttachment: String? = nil, residentKey: String? = nil, requireResidentKey: Bool? = nil, userVerification: String? = nil) {
        self.authenticatorAttachment = authenticatorAttachment
        self.residentKey = residentKey
        self.requireResidentKey = requireResidentKey
        self.userVerification = userVerification
    }
}

/// Client extension inputs Signet requests.
public struct ExtensionInputsJSON: Codable, Sendable, Equatable {
    public var credProps: Bool?
    public init(credProps: Bool? = nil) { self.credProps = credProps }
}

/// `PublicKeyCredentialCreationOptionsJSON`.
public struct CreationOptionsJSON: Codable, Sendable, Equatable {
    public var rp: RelyingPartyEntityJSON
    public var user: UserEntityJSON
    public var challenge: String
    public var pubKeyCredParams: [CredentialParametersJSON]
    public var timeout: Int?
    public var excludeCredentials: [CredentialDescriptorJSON]
    public var authenticatorSelection: AuthenticatorSelectionJSON?
    public var hints: [String]
    public var attestation: String
    public var extensions: ExtensionInputsJSON?
    public init(
        rp: RelyingPartyEntityJSON, user: UserEntityJSON, challenge: String, pubKeyCredParams: [CredentialParametersJSON], timeout: Int?,
        excludeCredentials: [CredentialDescriptorJSON], authenticatorSelection: AuthenticatorSelectionJSON?, hints: [String], attestation: String,
        extensions: ExtensionInputsJSON?
    ) {
        self.rp = rp
        self.user = user
        self.challenge = challenge
        self.pubKeyCredParams = pubKeyCredParams
        self.timeout = timeout
        self.excludeCredentials = excludeCredentials
        self.authenticatorSelection = authenticatorSelection
        self.hints = hints
        self.attestation = attestation
        self.extensions = extensions
    }
}

/// `PublicKeyCredentialRequestOptionsJSON`.
public struct RequestOptionsJSON: Codable, Sendable, Equatable {
    public var challenge: String
    public var timeout: Int?
    public var rpId: String
    public var allowCredentials: [CredentialDescriptorJSON]
    public var userVerification: String
    public var hints: [String]
    /// Present when the tenant has a U2F AppID (`{"appid": …}`).
    public var extensions: AuthenticationExtensionsJSON?
    public init(
        challenge: String, timeout: Int?, rpId: String, allowCredentials: [CredentialDescriptorJSON], userVerification: String, hints: [String],
        extensions: AuthenticationExtensionsJSON? = nil
    ) {
        self.extensions = extensions
        self.challenge = challenge
        self.timeout = timeout
        self.rpId = rpId
        self.allowCredentials = allowCredentials
        self.userVerification = userVerification
        self.hints = hints
    }
}

/// `RegistrationResponseJSON` (what `PublicKeyCredential.toJSON()` gives after `create()`).
public struct RegistrationResponseJSON: Codable, Sendable, Equatable {
    public struct Response: Codable, Sendable, Equatable {
        public var clientDataJSON: String
        public var attestationObject: String
        public var transports: [String]?
        public var authenticatorData: String?
        public var publicKey: String?
        public var publicKeyAlgorithm: Int?
        public init(clientDataJSON: String, attestationObject: String, transports: [String]? = nil) {
            self.clientDataJSON = clientDataJSON
            self.attestationObject = attestationObject
            self.transports = transports
        }
    }
    public var id: String
    public var rawId: String
    public var type: String
    public var response: Response
    public var authenticatorAttachment: String?
    public var clientExtensionResults: ClientExtensionResultsJSON?
    public init(id: String, rawId: String, response: Response, authenticatorAttachment: String? = nil) {
        self.id = id
        self.rawId = rawId
        type = "public-key"
        self.response = response
        self.authenticatorAttachment = authenticatorAttachment
        clientExtensionResults = ClientExtensionResultsJSON()
    }
}

/// `AuthenticationResponseJSON` (what `PublicKeyCredential.toJSON()` gives after `get()`).
public struct AuthenticationResponseJSON: Codable, Sendable, Equatable {
    public struct Response: Codable, Sendable, Equatable {
        public var clientDataJSON: String
        public var authenticatorData: String
        public var signature: String
        public var userHandle: String?
        public init(clientDataJSON: String, authenticatorData: String, signature: String, userHandle: String?) {
            self.clientDataJSON = clientDataJSON
            self.authenticatorData = authenticatorData
            self.signature = signature
            self.userHandle = userHandle
        }
    }
    public var id: String
    public var rawId: String
    public var type: String
    public var response: Response
    public var authenticatorAttachment: String?
    public var clientExtensionResults: ClientExtensionResultsJSON?
    public init(id: String, rawId: String, response: Response) {
        self.id = id
        self.rawId = rawId
        type = "public-key"
        self.response = response
        clientExtensionResults = ClientExtensionResultsJSON()
    }
}

/// Client extension outputs Signet reads (credProps.rk); others are ignored.
public struct ClientExtensionResultsJSON: Codable, Sendable, Equatable {
    public struct CredProps: Codable, Sendable, Equatable {
        public var rk: Bool?
        public init(rk: Bool? = nil) { self.rk = rk }
    }
    public var credProps: CredProps?
    /// The `appid` extension's output (WebAuthn L3 §10.1.1): true when the client used the
    /// AppID, so that the assertion's rpIdHash is the AppID's hash.
    public var appid: Bool?
    public init(credProps: CredProps? = nil, appid: Bool? = nil) {
        self.credProps = credProps
        self.appid = appid
    }
}

/// `AuthenticationExtensionsClientInputsJSON` of request options: the extensions Signet asks for.
public struct AuthenticationExtensionsJSON: Codable, Sendable, Equatable {
    /// The tenant's legacy U2F AppID (WebAuthn L3 §10.1.1), for U2F-registered credentials.
    public var appid: String?
    public init(appid: String? = nil) { self.appid = appid }
}

import FoundationEssentials
import JSON

/// `POST /v1/tenants/{tenant}/uaf/registrations/requests` body.
public struct UAFRegistrationRequestBody: Codable, Sendable, Equatable {
    public var username: String
    public init(username: String) { self.username = username }
}

/// A UAF request for the client: the `uafRequest` array (one message per protocol version
/// offered) to hand to the FIDO UAF client as is.
public struct UAFRequestEnvelope: Codable, Sendable, Equatable {
    /// RegistrationRequest or AuthenticationRequest messages (FIDO UAF Protocol §3.4.1, §3.5.1).
    public var uafRequest: [JSONValue]
    public var expiresAt: Date
    public init(uafRequest: [JSONValue], expiresAt: Date) {
        self.uafRequest = uafRequest
        self.expiresAt = expiresAt
    }
}

/// `POST …/uaf/registrations` and `POST …/uaf/authentications` body: the client's response.
public struct UAFResponseBody: Codable, Sendable, Equatable {
    /// The response message array as the UAF client returned it, as a JSON text.
    public var uafResponse: String
    public init(uafResponse: String) { self.uafResponse = uafResponse }
}

/// A registered UAF authenticator key.
public struct UAFRegistrationResource: Codable, Sendable, Equatable {
    public var aaid: String
    /// base64url KeyID.
    public var keyId: String
    /// `basic_full` or `basic_surrogate`.
    public var attestationType: String
    /// UAF Registry `UAF_ALG_SIGN_*`.
    public var signatureAlgorithm: Int
    /// The metadata statement's description, when the AAID has one.
    public var friendlyName: String?
    /// `active`, `suspended` or `deleted`.
    public var status: String
    public var createdAt: Date
    public init(aaid: String, keyId: String, attestationType: String, signatureAlgorithm: Int, friendlyName: String?, status: String, createdAt: Date) {
        self.aaid = aaid
        self.keyId = keyId
        self.attestationType = attestationType
        self.signatureAlgorithm = signatureAlgorithm
        self.friendlyName = friendlyName
        self.status = status
        self.createdAt = createdAt
    }
}

/// `POST …/uaf/registrations` result (201).
public struct UAFRegistrationResult: Codable, Sendable, Equatable {
    public var registrations: [UAFRegistrationResource]
    public init(registrations: [UAFRegistrationResource]) { self.registrations = registrations }
}

/// `PUT /v1/admin/tenants/{tenant}/uaf-settings` body and `GET` result (with `appId`).
public struct UAFSettingsDocument: Codable, Sendable, Equatable {
    /// The tenant's AppID (the URL of its facets document); set by the server.
    public var appId: String?
    public var facetIds: [String]
    /// A UAF `Policy` (`{"accepted": [[MatchCriteria]], "disallowed"?: [MatchCriteria]}`); absent: every authenticator Signet can verify.
    public var policy: JSONValue?
    /// Accept basic surrogate attestation from AAIDs without metadata (default true).
    public var allowSurrogateWithoutMetadata: Bool?
    public var revision: Int?
    public init(appId: String? = nil, facetIds: [String], policy: JSONValue? = nil, allowSurrogateWithoutMetadata: Bool? = nil, revision: Int? = nil) {
        self.appId = appId
        self.facetIds = facetIds
        self.policy = policy
        self.allowSurrogateWithoutMetadata = allowSurrogateWithoutMetadata
        self.revision = revision
    }
}

/// `POST /v1/tenants/{tenant}/uaf/authentications/requests` body.
public struct UAFAuthenticationRequestBody: Codable, Sendable, Equatable {
    /// A transaction of the transaction service to confirm.
    public struct TransactionReference: Codable, Sendable, Equatable {
        public var transactionId: String
        public init(transactionId: String) { self.transactionId = transactionId }
    }

    /// One form of a transaction the user confirms: a UAF `Transaction` (UAF Protocol §3.5.2).
    public struct TransactionContent: Codable, Sendable, Equatable {
        /// `text/plain` or `image/png`.
        public var contentType: String
        /// base64url of the content: UTF-8 text, or a PNG file.
        public var content: String
        /// For `image/png`, required: the image's `DisplayPNGCharacteristicsDescriptor`
        /// (`{"width","height","bitDepth","colorType","compression","filter","interlace","plte"?}`,
        /// FIDO Metadata Statement), which the PNG's header must match.
        public var tcDisplayPNGCharacteristics: JSONValue?
        public init(contentType: String, content: String, tcDisplayPNGCharacteristics: JSONValue? = nil) {
            self.contentType = contentType
            self.content = content
            self.tcDisplayPNGCharacteristics = tcDisplayPNGCharacteristics
        }
    }

    /// `transaction`: an object names a transaction of the transaction service, an array is the
    /// UAF Transaction list to show (the same transaction in several forms; the client shows one).
    public enum Transaction: Codable, Sendable, Equatable {
        case reference(TransactionReference)
        case contents([TransactionContent])

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if case .array? = try? container.decode(JSONValue.self) {
                self = .contents(try container.decode([TransactionContent].self))
            } else {
                self = .reference(try container.decode(TransactionReference.self))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .reference(let reference): try container.encode(reference)
            case .contents(let list): try container.encode(list)
            }
        }
    }

    /// The user signing in; absent: any registered authenticator of the tenant.
    public var username: String?
    /// Text to confirm (`text/plain`, at most 200 characters): the assertion is then a
    /// transaction confirmation.
    public var transactionText: String?
    /// `{"transactionId"}`: confirm a transaction created on the transaction service. The
    /// request offers ``TransactionDetails/uafDisplayText`` and the transaction's images; the
    /// authenticator shows one, signs its hash and the dynamic-linking challenge of the details; the transaction service checks the step again and issues the
    /// tcToken. The user is the transaction's (a different `username` is refused).
    /// `[Transaction]`: text or PNG content to confirm, checked (a PNG strictly, against its
    /// characteristics) and bound to the request; the assertion must sign the hash of one form.
    public var transaction: Transaction?
    public init(username: String? = nil, transactionText: String? = nil, transaction: Transaction? = nil) {
        self.username = username
        self.transactionText = transactionText
        self.transaction = transaction
    }
}

/// `POST /v1/tenants/{tenant}/uaf/authentications` result: a session, as a passkey sign-in gives.
public struct UAFAuthenticationResult: Codable, Sendable, Equatable {
    public var sessionToken: String
    public var username: String
    public var aaid: String
    public var keyId: String
    /// Whether the user confirmed the transaction text of the request.
    public var transactionConfirmed: Bool
    public var expiresAt: Date
    /// For a request with `{"transactionId"}`: the transaction, PENDING until the transaction
    /// service has checked the step and issued the tcToken (the RP reads it there).
    public var transaction: SignInTransaction?
    public init(
        sessionToken: String, username: String, aaid: String, keyId: String, transactionConfirmed: Bool, expiresAt: Date,
        transaction: SignInTransaction? = nil
    ) {
        self.sessionToken = sessionToken
        self.username = username
        self.aaid = aaid
        self.keyId = keyId
        self.transactionConfirmed = transactionConfirmed
        self.expiresAt = expiresAt
        self.transaction = transaction
    }
}

/// `DELETE …/users/{username}/uaf/registrations/{aaid}/{keyId}` result: the DeregistrationRequest
/// messages (UAF Protocol §3.6) the client must pass to its authenticator, one per version.
public struct UAFDeregistrationResult: Codable, Sendable, Equatable {
    public var uafRequest: [JSONValue]
    public init(uafRequest: [JSONValue]) { self.uafRequest = uafRequest }
}

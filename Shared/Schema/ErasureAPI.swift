import FoundationEssentials
import JSON

/// `DELETE /v1/tenants/{tenant}/users/{username}` (registration service): 202, the erasure started.
public struct ErasureStarted: Codable, Sendable, Equatable {
    public var erasureId: String
    public init(erasureId: String) { self.erasureId = erasureId }

    public static var fullExample: ErasureStarted { ErasureStarted(erasureId: "er_0f1e2d3c4b5a69788796a5b4c3d2e1f0") }
}

/// `GET /v1/tenants/{tenant}/erasures/{erasureId}`: an erasure's progress per service and,
/// once every service has answered, its receipt.
public struct ErasureResource: Codable, Sendable, Equatable {
    public var erasureId: String
    public var tenantId: String
    /// `PENDING` until every service has erased its part, then `COMPLETED`.
    public var status: String
    public var requestedAt: Date
    public var completedAt: Date?
    /// One entry per service, in ``ServiceName`` order.
    public var parts: [ErasurePart]
    /// COMPLETED only: a compact JWS (ES256, `typ erasure-receipt+jwt`) signed by the
    /// registration service's receipt key, published at its `/.well-known/jwks.json`; claims
    /// `iss`, `aud` (tenant), `jti` (erasure id), `iat`, `requested_at`, `completed_at` and
    /// `tallies` (service → kind → count).
    public var receipt: String?

    public init(
        erasureId: String, tenantId: String, status: String, requestedAt: Date, completedAt: Date?, parts: [ErasurePart], receipt: String?
    ) {
        self.erasureId = erasureId
        self.tenantId = tenantId
        self.status = status
        self.requestedAt = requestedAt
        self.completedAt = completedAt
        self.parts = parts
        self.receipt = receipt
    }

    public static var fullExample: ErasureResource {
        ErasureResource(
            erasureId: "er_0f1e2d3c4b5a69788796a5b4c3d2e1f0", tenantId: "demo", status: "COMPLETED",
            requestedAt: Date(timeIntervalSince1970: 1_764_000_000), completedAt: Date(timeIntervalSince1970: 1_764_000_002),
            parts: [ErasurePart.fullExample],
            receipt: "eyJhbGciOiJFUzI1NiIsImtpZCI6IksxIiwidHlwIjoiZXJhc3VyZS1yZWNlaXB0K2p3dCJ9.e30.c2ln")
    }
}

/// One service's part of an erasure.
public struct ErasurePart: Codable, Sendable, Equatable {
    /// `registration`, `authentication`, `transaction`, `oob` or `pii`.
    public var service: String
    /// `PENDING` or `COMPLETED`.
    public var status: String
    /// What it deleted, by kind (COMPLETED only).
    public var tallies: [String: Int]?
    public var completedAt: Date?

    public init(service: String, status: String, tallies: [String: Int]?, completedAt: Date?) {
        self.service = service
        self.status = status
        self.tallies = tallies
        self.completedAt = completedAt
    }

    public static var fullExample: ErasurePart {
        ErasurePart(service: "pii", status: "COMPLETED", tallies: ["dataKeys": 1, "values": 2], completedAt: Date(timeIntervalSince1970: 1_764_000_001))
    }
}

/// `POST /v1/internal/tenants/{tenant}/user-data` (every service but registration, internal
/// token): the user whose data the caller gathers. The answer is the service's part of
/// ``UserDataDocument`` (a JSON object).
public struct UserDataRequest: Codable, Sendable, Equatable {
    public var username: String
    /// The user's opaque subject (base64url user handle), for the pii service.
    public var subject: String?
    public init(username: String, subject: String?) {
        self.username = username
        self.subject = subject
    }

    public static var fullExample: UserDataRequest {
        UserDataRequest(username: "user-4711", subject: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U")
    }
}

/// `GET /v1/internal/tenants/{tenant}/erasures/{erasureId}/username` (registration service,
/// internal token): the username of an erasure in progress, for a service whose own rows are
/// keyed by username (``UserPurgeRequested`` carries the subject reference only). A completed
/// erasure has forgotten it (404).
public struct ErasureUsername: Codable, Sendable, Equatable {
    public var username: String
    public init(username: String) { self.username = username }

    public static var fullExample: ErasureUsername { ErasureUsername(username: "user-4711") }
}

/// `GET /v1/internal/tenants/{tenant}/subjects/{subjectRef}/username` (registration service,
/// internal token): the username of a subject reference, for the authentication service when a
/// sign-in finds a credential or UAF key without a username (``CredentialRegistered`` and
/// ``UAFAuthenticatorRegistered`` carry the reference only). 404 for an unknown or erased user.
public struct SubjectUsername: Codable, Sendable, Equatable {
    public var subjectRef: String
    public var username: String
    public init(subjectRef: String, username: String) {
        self.subjectRef = subjectRef
        self.username = username
    }

    public static var fullExample: SubjectUsername {
        SubjectUsername(subjectRef: "s1.bUerVXM0dmFdazr6tUixuPoRWb9nHrqRFYR6w8_r-lc", username: "user-4711")
    }
}

/// `GET /v1/tenants/{tenant}/users/{username}/data` (registration service): everything Signet
/// holds about the user, one part per service. A service that did not answer in time is named
/// in `missing` and has no part: a missing part is never shown as empty.
public struct UserDataDocument: Codable, Sendable, Equatable {
    public var tenantId: String
    public var username: String
    public var generatedAt: Date
    /// Service name → that service's data (each a JSON object of lists by kind).
    public var parts: [String: JSONValue]
    public var missing: [UserDataMissingPart]

    public init(tenantId: String, username: String, generatedAt: Date, parts: [String: JSONValue], missing: [UserDataMissingPart]) {
        self.tenantId = tenantId
        self.username = username
        self.generatedAt = generatedAt
        self.parts = parts
        self.missing = missing
    }

    public static var fullExample: UserDataDocument {
        UserDataDocument(
            tenantId: "demo", username: "user-4711", generatedAt: Date(timeIntervalSince1970: 1_764_000_000),
            parts: ["registration": ["users": [["username": "user-4711"]]]], missing: [UserDataMissingPart.fullExample])
    }
}

/// A part of ``UserDataDocument`` that could not be gathered.
public struct UserDataMissingPart: Codable, Sendable, Equatable {
    public var service: String
    /// `timeout`, `unavailable` or `refused`.
    public var reason: String
    public init(service: String, reason: String) {
        self.service = service
        self.reason = reason
    }

    public static var fullExample: UserDataMissingPart { UserDataMissingPart(service: "transaction", reason: "timeout") }
}

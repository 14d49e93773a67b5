import FoundationEssentials
import Platform

/// `PUT /v1/admin/tenants/{tenant}` body.
public struct TenantUpsertRequest: Codable, Sendable, Equatable {
    public var displayName: String
    public var rpId: String
    public var origins: [String]

    public init(displayName: String, rpId: String, origins: [String]) {
        self.displayName = displayName
        self.rpId = rpId
        self.origins = origins
    }

    /// The first rule the request breaks, as (field, message).
    public func violation() -> (field: String, message: String)? {
        let name = displayName.trimmingWhitespaceAndNewlines()
        if name.isEmpty || displayName.count > TenantValidation.maxDisplayName {
            return ("displayName", "displayName must be 1-\(TenantValidation.maxDisplayName) characters.")
        }
        if displayName.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return ("displayName", "displayName must not contain control characters.")
        }
        if !TenantValidation.isValidRPID(rpId) {
            return ("rpId", "rpId must be a lower-case domain name such as example.com or localhost.")
        }
        if origins.isEmpty || origins.count > TenantValidation.maxOrigins {
            return ("origins", "origins must list 1-\(TenantValidation.maxOrigins) origins.")
        }
        for (i, o) in origins.enumerated() where !TenantValidation.isValidOrigin(o) {
            return ("origins[\(i)]", "Each origin must be https://host[:port] (http only for localhost), without a path.")
        }
        if Set(origins).count != origins.count { return ("origins", "origins must not repeat.") }
        return nil
    }

    public static var fullExample: TenantUpsertRequest {
        TenantUpsertRequest(displayName: "Demo Bank", rpId: "localhost", origins: ["http://localhost:8080"])
    }
}

/// A tenant as every service returns it from `GET /v1/tenants/{tenant}`.
public struct TenantResource: Codable, Sendable, Equatable {
    public var id: String
    public var displayName: String
    public var rpId: String
    public var origins: [String]
    public var revision: Int
    public var updatedAt: Date

    public init(id: String, displayName: String, rpId: String, origins: [String], revision: Int, updatedAt: Date) {
        self.id = id
        self.displayName = displayName
        self.rpId = rpId
        self.origins = origins
        self.revision = revision
        self.updatedAt = updatedAt
    }

    public static var fullExample: TenantResource {
        TenantResource(id: "demo", displayName: "Demo Bank", rpId: "localhost", origins: ["http://localhost:8080"],
                       revision: 1, updatedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
}

/// `POST /v1/admin/tenants/{tenant}/api-keys` response: the key is shown once.
public struct APIKeyIssued: Codable, Sendable, Equatable {
    public var keyId: String
    /// The secret, `sk_<keyId>_<random>`; only its hash is stored.
    public var apiKey: String
    public var createdAt: Date

    public init(keyId: String, apiKey: String, createdAt: Date) {
        self.keyId = keyId
        self.apiKey = apiKey
        self.createdAt = createdAt
    }

    public static var fullExample: APIKeyIssued {
        APIKeyIssued(keyId: "k_3f9a1c2b7d4e5f60", apiKey: "sk_k_3f9a1c2b7d4e5f60_" + String(repeating: "A", count: 43),
                     createdAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
}

/// `/healthz` and `/readyz` bodies.
public struct HealthStatus: Codable, Sendable, Equatable {
    /// `ok` (ready, 200); `degraded` (503: the database works, but Kafka is unreachable or a
    /// consumer has been out of its group for too long, so events are delayed) or `unavailable`
    /// (503: PostgreSQL is unreachable, or the instance drains).
    public var status: String
    /// Per dependency: `postgres` and `kafka` (`ok` or `unavailable`), `consumers` (`ok` or
    /// `unassigned`), and `shutdown` (`draining`) while the instance drains. Absent for `/healthz`.
    public var checks: [String: String]?
    /// The build the process runs (`SIGNET_VERSION`, `dev` without it), so that operators see
    /// which version each instance serves.
    public var version: String?

    public init(status: String, checks: [String: String]?, version: String? = nil) {
        self.status = status
        self.checks = checks
        self.version = version
    }

    public static var fullExample: HealthStatus {
        HealthStatus(status: "ok", checks: ["postgres": "ok", "kafka": "ok", "consumers": "ok"], version: "v1.4.0-12-g949ffcb")
    }
}

/// `GET /v1/tenants/{tenant}/api-keys/current` response: which key the caller presented.
public struct APIKeyIdentity: Codable, Sendable, Equatable {
    public var tenantId: String
    public var keyId: String

    public init(tenantId: String, keyId: String) {
        self.tenantId = tenantId
        self.keyId = keyId
    }

    public static var fullExample: APIKeyIdentity { APIKeyIdentity(tenantId: "demo", keyId: "k_3f9a1c2b7d4e5f60") }
}

/// `PUT /v1/admin/tenants/{tenant}/api-keys/{keyId}` body: an operator-chosen RP API key
/// (e.g. the local stack's `SIGNET_DEMO_RP_API_KEY`). Only its SHA-256 is stored.
public struct APIKeyImportRequest: Codable, Sendable, Equatable {
    public var apiKey: String

    public init(apiKey: String) { self.apiKey = apiKey }

    public static var fullExample: APIKeyImportRequest { APIKeyImportRequest(apiKey: "dev-demo-rp-key") }
}

import Foundation
import HTTPServer
import JSON
import Schema

/// Tenants and their RP API keys, through the registration service's admin API. Viewers read;
/// administrators change. The services check every body strictly and their problems come back
/// as they are (same status, same code).
///
/// - `GET /console/api/tenants/{tenant}` → the tenant (`GET /v1/tenants/{tenant}`)
/// - `PUT /console/api/tenants/{tenant}` → `PUT /v1/admin/tenants/{tenant}`
/// - `POST /console/api/tenants/{tenant}/api-keys` → a new key, shown this once
/// - `POST /console/api/tenants/{tenant}/api-keys/{keyId}/rotate` → a new key, then `{keyId}`
///   revoked: `{"keyId","apiKey","createdAt","revokedKeyId"}`
/// - `DELETE /console/api/tenants/{tenant}/api-keys/{keyId}` → 204
struct TenantConsoleRoutes: Sendable {
    let upstream: any ConsoleUpstream
    let guards: ConsoleGuards

    func register(on router: inout GuardedRouter) {
        router.get("/console/api/tenants/{tenant}", guards.at(.viewer)) { _, ctx in
            try await upstream.send(.registration, "GET", "/v1/tenants/\(ctx.parameter("tenant"))", credential: .none, body: nil).asResponse
        }
        router.put("/console/api/tenants/{tenant}", guards.at(.administrator)) { request, ctx in
            let body = try request.decode(TenantUpsertRequest.self)
            let answer = try await upstream.send(
                .registration, "PUT", "/v1/admin/tenants/\(ctx.parameter("tenant"))", credential: .admin, body: try JSONValueEncoder().encodeToBytes(body))
            Self.audit(ctx, "tenant changed", answer)
            return answer.asResponse
        }
        router.post("/console/api/tenants/{tenant}/api-keys", guards.at(.administrator)) { _, ctx in
            let answer = try await upstream.send(.registration, "POST", "/v1/admin/tenants/\(ctx.parameter("tenant"))/api-keys", credential: .admin, body: nil)
            Self.audit(ctx, "api key issued", answer)
            return answer.asResponse
        }
        router.post("/console/api/tenants/{tenant}/api-keys/{keyId}/rotate", guards.at(.administrator)) { _, ctx in
            let tenant = ctx.parameter("tenant")
            let old = try Self.keyID(ctx)
            let issued = try await upstream.send(.registration, "POST", "/v1/admin/tenants/\(tenant)/api-keys", credential: .admin, body: nil)
            let key = try issued.decode(APIKeyIssued.self)
            let revoked = try await upstream.send(.registration, "DELETE", "/v1/admin/tenants/\(tenant)/api-keys/\(old)", credential: .admin, body: nil)
            Self.audit(ctx, "api key rotated", revoked)
            // The new key is shown whatever the revocation's outcome: it exists now, and this
            // answer is the only place it is ever shown.
            return try .json(
                RotatedKey(keyId: key.keyId, apiKey: key.apiKey, createdAt: key.createdAt, revokedKeyId: (200..<300).contains(revoked.status) ? old : nil),
                status: 201, headers: [("Cache-Control", "no-store")])
        }
        router.delete("/console/api/tenants/{tenant}/api-keys/{keyId}", guards.at(.administrator)) { _, ctx in
            let answer = try await upstream.send(
                .registration, "DELETE", "/v1/admin/tenants/\(ctx.parameter("tenant"))/api-keys/\(try Self.keyID(ctx))", credential: .admin, body: nil)
            Self.audit(ctx, "api key revoked", answer)
            return answer.asResponse
        }
    }

    /// The path's `{keyId}`: `k_` and 16 hex digits (checked here too: it becomes part of
    /// another URL).
    static func keyID(_ ctx: RequestContext) throws -> String {
        let keyID = ctx.parameter("keyId")
        guard TenantValidation.isValidKeyID(keyID) else { throw HTTPError.invalid("keyId", "Key ids are k_ and 16 hex digits.") }
        return keyID
    }

    /// Every change an operator makes is logged with who made it (the operator's username is
    /// an account of the operators' tenant, not a customer's personal data).
    static func audit(_ ctx: RequestContext, _ what: String, _ answer: UpstreamResponse) {
        guard case .user(_, let operatorName) = ctx.principal else { return }
        ctx.logger.notice(
            "console: \(what)", metadata: ["signet.console.operator": .string(operatorName), "signet.upstream.status": "\(answer.status)"])
    }
}

/// A rotation's answer: the new key (as the registration service issued it) and the key it
/// replaced, when that one was revoked.
struct RotatedKey: Codable, Sendable {
    let keyId: String
    let apiKey: String
    let createdAt: Date
    let revokedKeyId: String?
}

import HTTPServer
import JSON
import Schema

/// A tenant's users through the registration service's RP API, with the console's own key of
/// that tenant (``ConsoleTenantKeys``): a user's passkeys (viewer), and suspending or resuming
/// one (operator; administrator on the operators' tenant, ``ConsoleGuards/changingUsers(at:)``).
///
/// - `GET /console/api/tenants/{tenant}/users/{username}/credentials` → the user's credentials
/// - `PATCH /console/api/tenants/{tenant}/users/{username}/credentials/{credentialId}`
///   `{"status": "active"|"suspended"}` → 200, the credential as the service answers
struct UserConsoleRoutes: Sendable {
    let upstream: any ConsoleUpstream
    let guards: ConsoleGuards
    let keys: ConsoleTenantKeys

    func register(on router: inout GuardedRouter) {
        router.get("/console/api/tenants/{tenant}/users/{username}/credentials", guards.at(.viewer)) { _, ctx in
            let tenant = ctx.parameter("tenant")
            let path = "/v1/tenants/\(tenant)/users/\(try Self.username(ctx))/credentials"
            try await keys.ensure(tenant)
            return try await upstream.send(.registration, "GET", path, credential: .tenantRelyingParty(tenant), body: nil).asResponse
        }
        router.patch("/console/api/tenants/{tenant}/users/{username}/credentials/{credentialId}", guards.changingUsers(at: .operator)) { request, ctx in
            let tenant = ctx.parameter("tenant")
            let body = try request.decode(CredentialStatusChange.self)
            guard ["active", "suspended"].contains(body.status) else { throw HTTPError.invalid("status", "status must be active or suspended.") }
            let path = "/v1/tenants/\(tenant)/users/\(try Self.username(ctx))/credentials/\(try Self.credentialID(ctx))"
            try await keys.ensure(tenant)
            let answer = try await upstream.send(
                .registration, "PATCH", path, credential: .tenantRelyingParty(tenant), body: try JSONValueEncoder().encodeToBytes(body))
            TenantConsoleRoutes.audit(ctx, "credential \(body.status == "active" ? "resumed" : "suspended")", answer)
            return answer.asResponse
        }
    }

    /// The path's `{username}`, checked and percent-encoded for the service's URL.
    static func username(_ ctx: RequestContext) throws -> String {
        let username = ctx.parameter("username")
        guard UsernameRules.isValid(username) else { throw HTTPError.invalid("username", "username is not a valid username.") }
        return PathSegment.encode(username)
    }

    /// The path's `{credentialId}`: base64url.
    static func credentialID(_ ctx: RequestContext) throws -> String {
        let id = ctx.parameter("credentialId")
        guard id.utf8.allSatisfy(isBase64URL) else { throw HTTPError.invalid("credentialId", "Credential ids are base64url.") }
        return id
    }

    /// Whether `byte` is a character of the base64url alphabet.
    static func isBase64URL(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
    }
}

struct CredentialStatusChange: Codable, Sendable {
    let status: String
}

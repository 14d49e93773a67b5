import Crypto
import Delivery
import FoundationEssentials
import JSON
import Platform
import Schema
import ServiceKit
import Tokens

/// Signed callbacks: when an approval with a `callbackUrl` finishes, its outcome is POSTed
/// there as `application/jwt`, a JWT (`typ approval-callback+jwt`) signed with the tenant's
/// device identifier key (the RP verifies it with `GET /v1/tenants/{t}/.well-known/jwks.json`):
/// `iss` the service's issuer, `aud` the tenant, `iat`, `exp` five minutes later, `jti`, and
/// `approval` the ``ApprovalResource``. Any 2xx ends it; 429, 5xx and transport failures are
/// retried with backoff, other answers are not. The callback is queued durably in the
/// transaction that finishes the approval and sent by ``ApprovalDeliveryWorker`` (each
/// attempt signs a new JWT).
struct ApprovalCallbacks: Sendable {
    static let type = "approval-callback+jwt"
    let keys: DeviceTokenKeys
    let issuer: String
    let transport: PushTransport

    /// The origin (`scheme://host[:port]`, as tenants list theirs) of an acceptable callback
    /// URL: https, or http for localhost and 127.0.0.1; no user info, no fragment. Else nil.
    static func origin(of text: String) -> String? {
        guard (1...2048).contains(text.utf8.count), let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(),
            !host.isEmpty, url.user == nil, url.password == nil, url.fragment == nil
        else { return nil }
        guard scheme == "https" || (scheme == "http" && (host == "localhost" || host == "127.0.0.1")) else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    /// One attempt: POSTs the signed outcome of `approval` to `url`.
    ///
    /// - Throws: `DeliveryError` for a transport failure or an answer other than 2xx
    ///   (transient for 429 and 5xx).
    func post(_ approval: StoredApproval, to url: String) async throws {
        let ring = try await keys.ring(for: approval.tenant)
        let now = Date()
        let resource = try JSONParser.parse(try JSONValueEncoder().encodeToBytes(approval.resourceForRelyingParty))
        let claims = JWTClaims(
            issuer: issuer, audience: [approval.tenant], expiresAt: now.addingTimeInterval(300), issuedAt: now,
            id: Hex.encode(SecureRandom.bytes(16)), extra: ["approval": resource])
        let jwt = Array(try ring.signer.sign(claims, type: Self.type).utf8)
        let response = try await transport.post(url: url, headers: ["Content-Type: application/jwt"], body: jwt, requireHTTP2: false)
        if let error = PushTransport.error(forStatus: response.status, provider: .callback, body: []) { throw error }
    }
}

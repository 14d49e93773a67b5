import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Schema
import ServiceKit
import Tokens

/// QR registration's token (#17): the oob service, when a bound phone claims a `register` QR
/// session, asks for a registration-only token for the session's user
/// (`POST /v1/internal/tenants/{tenant}/qr-registration-tokens`, internal guard, oob only) and
/// hands it to the phone, which registers an authenticator with the registration service's
/// ceremonies (guard `relyingPartyOrRegistrant`, as a sign-up token).
///
/// The token is the sign-up kind (`sign_up: true`, `aud` the registration audience, so no
/// verifier of sessions accepts it) with the `qr` claim naming the session, and lives until the
/// session expires (at most ``maximumLifetime``). It never becomes a session: the sign-up finish
/// refuses a token with `qr`, and the sign-in exchange needs a `signin` claim it lacks.
struct QRRegistrationTokens: Sendable {
    let issuer: SessionIssuer
    let calls: InternalCalls
    /// A QR session lives at most 600 s; its token no longer.
    static let maximumLifetime: TimeInterval = 600

    func register(on router: inout GuardedRouter) {
        router.post("/v1/internal/tenants/{tenant}/qr-registration-tokens", calls.guardInternal) { request, ctx in
            // Only the oob service, which owns QR sessions and the phones' binding, asks.
            guard ctx.principal == .service("oob") else { throw HTTPError(.forbidden, detail: "Only the oob service asks for QR registration tokens.") }
            let body = try request.decode(QRRegistrationTokenRequest.self)
            try UsernameRules.require(body.username)
            guard QRSessionID.isValid(body.qrSessionId) else { throw HTTPError.invalid("qrSessionId", "qrSessionId is qr_ and 32 hex digits.") }
            let now = Date()
            let lifetime = body.expiresAt.timeIntervalSince(now)
            guard lifetime > 0, lifetime <= Self.maximumLifetime + 5 else {
                throw HTTPError.invalid("expiresAt", "expiresAt is in the next \(Int(Self.maximumLifetime)) seconds.")
            }
            let issued = try issue(tenant: ctx.parameter("tenant"), username: body.username, qrSessionId: body.qrSessionId, expiresAt: body.expiresAt, at: now)
            ctx.logger.info("qr registration token issued", metadata: ["signet.qr.id": .string(body.qrSessionId)])
            return try .json(issued, status: 201, headers: [("Cache-Control", "no-store")])
        }
    }

    /// A registration-only token for `username` bound to the QR session `qrSessionId`.
    func issue(tenant: String, username: String, qrSessionId: String, expiresAt: Date, at now: Date) throws -> QRRegistrationToken {
        let expires = min(expiresAt, now.addingTimeInterval(Self.maximumLifetime))
        let claims = JWTClaims(
            issuer: issuer.issuer, subject: username, audience: [SessionTokenVerifier.registrationAudience(tenant: tenant)], expiresAt: expires,
            issuedAt: now, id: SecureRandom.token(byteCount: 16), extra: ["sign_up": .bool(true), "qr": .string(qrSessionId)])
        return QRRegistrationToken(registrationToken: try issuer.keys.current.sign(claims), expiresAt: expires)
    }
}

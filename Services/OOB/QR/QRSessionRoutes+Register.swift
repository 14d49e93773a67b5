import Crypto
import FoundationEssentials
import HTTPServer
import Platform
import Schema
import ServiceKit

/// QR registration (`purpose: register`, #17): the page (through its RP) shows a code for a
/// user; that user's bound phone claims it and receives a registration-only token for the
/// user (issued by the authentication service, `qr` claim naming the session, valid until the
/// session expires); with it the phone registers an authenticator through the registration
/// service's ceremonies, then answers ACCEPT naming the new `credentialId`. The session
/// SUCCEEDED only when the registration service confirms that the user has that credential,
/// active, registered after the code was created; otherwise it FAILED
/// (`credential_not_registered`). The page learns the outcome as for `authenticate`.
extension QRSessionRoutes {
    /// Clocks of two services may differ a little: a credential registered up to this long
    /// before the session's creation (by the other service's clock) still counts as newer.
    static let clockSkew: TimeInterval = 30

    /// The registration-only token the phone registers with.
    ///
    /// - Throws: 503 when the authentication service cannot answer (the claim is not made).
    func registrationToken(for session: StoredQRSession, username: String) async throws -> QRRegistrationToken {
        let ask = QRRegistrationTokenRequest(username: username, qrSessionId: session.id, expiresAt: session.expiresAt)
        return try await calls.post(
            "\(settings.authenticationURL)/v1/internal/tenants/\(session.tenant)/qr-registration-tokens", ask, as: QRRegistrationToken.self)
    }

    /// Whether `username` has the credential `credentialId`, active and registered after the
    /// session was created, by the registration service.
    ///
    /// - Throws: 503 when the registration service cannot answer (the decision is not taken;
    ///   the phone may send it again).
    func credentialRegistered(_ credentialId: String, username: String, session: StoredQRSession) async throws -> Bool {
        let url = "\(context.configuration.registrationURL)/v1/internal/tenants/\(session.tenant)/users/\(Self.pathSegment(username))/credentials/\(credentialId)"
        do {
            let credential = try await calls.get(url, as: CredentialResource.self)
            return credential.credentialId == credentialId && credential.status == "active"
                && credential.createdAt >= session.createdAt.addingTimeInterval(-Self.clockSkew)
        } catch let error as HTTPError where error.code.status == 404 {
            return false
        }
    }

    /// The `credentialId` of a decision: canonical base64url of 1-1023 bytes (WebAuthn's bound).
    static func checkedCredentialID(_ text: String?) throws -> String {
        guard let text, text.utf8.count <= 1364, let bytes = Base64URL.decode(text), (1...1023).contains(bytes.count) else {
            throw HTTPError.invalid("credentialId", "A register session's ACCEPT names the registered credential (base64url).")
        }
        return text
    }

    /// A username as one percent-encoded path segment.
    static func pathSegment(_ username: String) -> String {
        // Foundation's `CharacterSet.urlPathAllowed` without "/", "%", "?" and "#": RFC 3986
        // unreserved and the sub-delimiters, ":" and "@".
        PercentEncoding.encode(username) { byte in
            PercentEncoding.isUnreserved(byte) || "!$&'()*+,;=:@".utf8.contains(byte)
        }
    }
}

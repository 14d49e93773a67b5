import Foundation

/// A sign-in step succeeded with a credential: the registration service records it as the
/// credential's last use. Carries no username; the credential id is the reference.
public struct AuthenticationSucceeded: EventPayload {
    public static let eventType = "signet.authentication.succeeded.v1"
    public static let topic = Topic.authentication

    public var tenantId: String
    /// The method that succeeded (`fido2`).
    public var method: String
    /// base64url credential id.
    public var credentialId: String
    /// The signature counter after this use (0 for authenticators without one).
    public var signCount: Int
    /// The backup state (BS) flag of this assertion.
    public var backupState: Bool
    /// Whether the authenticator verified the user (UV).
    public var userVerified: Bool
    /// The session id (`sid`) of the session token issued, when one was.
    public var sessionId: String?
    public var authenticatedAt: Date

    public init(
        tenantId: String, method: String, credentialId: String, signCount: Int, backupState: Bool, userVerified: Bool, sessionId: String?,
        authenticatedAt: Date
    ) {
        self.tenantId = tenantId
        self.method = method
        self.credentialId = credentialId
        self.signCount = signCount
        self.backupState = backupState
        self.userVerified = userVerified
        self.sessionId = sessionId
        self.authenticatedAt = authenticatedAt
    }

    public static var fullExample: AuthenticationSucceeded {
        AuthenticationSucceeded(
            tenantId: "demo", method: "fido2", credentialId: "9y1xA8Tmg1FEmT-c7_fvWZ_uoTuoih3OvR45_oAK-cw", signCount: 12, backupState: true,
            userVerified: true, sessionId: "s_3f1c9a0b7d2e4c6f8a1b3c5d7e9f0a2b", authenticatedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: AuthenticationSucceeded {
        var e = fullExample
        e.sessionId = nil
        return e
    }

    public static let methods = ["fido2"]

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard AuthenticationSucceeded.methods.contains(method) else { throw EventDecodingError.invalidData("method") }
        guard isBase64URL(credentialId, maxBytes: 1023) else { throw EventDecodingError.invalidData("credentialId") }
        guard (0...Int(UInt32.max)).contains(signCount) else { throw EventDecodingError.invalidData("signCount") }
        if let s = sessionId, !(1...64).contains(s.utf8.count) { throw EventDecodingError.invalidData("sessionId") }
    }
}

/// An assertion's signature counter did not increase: the authenticator may have been cloned.
/// The authentication service has stopped accepting the credential; an administrator decides.
public struct CredentialCloneSuspected: EventPayload {
    public static let eventType = "signet.authentication.credential.clone.suspected.v1"
    public static let topic = Topic.authentication

    public var tenantId: String
    /// base64url credential id.
    public var credentialId: String
    /// The counter the service held.
    public var storedSignCount: Int
    /// The counter the assertion presented (not greater than the stored one).
    public var presentedSignCount: Int
    public var detectedAt: Date

    public init(tenantId: String, credentialId: String, storedSignCount: Int, presentedSignCount: Int, detectedAt: Date) {
        self.tenantId = tenantId
        self.credentialId = credentialId
        self.storedSignCount = storedSignCount
        self.presentedSignCount = presentedSignCount
        self.detectedAt = detectedAt
    }

    public static var fullExample: CredentialCloneSuspected {
        CredentialCloneSuspected(
            tenantId: "demo", credentialId: "9y1xA8Tmg1FEmT-c7_fvWZ_uoTuoih3OvR45_oAK-cw", storedSignCount: 12, presentedSignCount: 7,
            detectedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: CredentialCloneSuspected { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard isBase64URL(credentialId, maxBytes: 1023) else { throw EventDecodingError.invalidData("credentialId") }
        guard (0...Int(UInt32.max)).contains(storedSignCount) else { throw EventDecodingError.invalidData("storedSignCount") }
        guard (0...Int(UInt32.max)).contains(presentedSignCount) else { throw EventDecodingError.invalidData("presentedSignCount") }
    }
}

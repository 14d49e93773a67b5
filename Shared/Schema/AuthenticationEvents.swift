import FoundationEssentials

/// A sign-in step succeeded with a credential: the registration service records it as the
/// credential's last use. Carries no username; the credential id is the reference.
public struct AuthenticationSucceeded: EventPayload {
    public static let eventType = "signet.authentication.succeeded.v1"
    public static let topic = Topic.authentication

    public var tenantId: String
    /// The method that succeeded (`fido2` or `uaf`).
    public var method: String
    /// base64url credential id (for `uaf`, the KeyID).
    public var credentialId: String
    /// `uaf` only: the authenticator's AAID (a UAF key is named by AAID and KeyID).
    public var aaid: String?
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
        authenticatedAt: Date, aaid: String? = nil
    ) {
        self.tenantId = tenantId
        self.method = method
        self.credentialId = credentialId
        self.aaid = aaid
        self.signCount = signCount
        self.backupState = backupState
        self.userVerified = userVerified
        self.sessionId = sessionId
        self.authenticatedAt = authenticatedAt
    }

    /// A UAF sign-in (the only method with `aaid`).
    public static var fullExample: AuthenticationSucceeded {
        AuthenticationSucceeded(
            tenantId: "demo", method: "uaf", credentialId: "ZMCPn92yHv1Ip-iCiBb6i4ADq6ZOv569KFQCvYSJfNg", signCount: 12, backupState: false,
            userVerified: true, sessionId: "s_3f1c9a0b7d2e4c6f8a1b3c5d7e9f0a2b", authenticatedAt: Date(timeIntervalSince1970: 1_764_000_000),
            aaid: "FFFF#0001")
    }
    /// A passkey assertion without a session (a step of a flow that is not finished).
    public static var minimalExample: AuthenticationSucceeded {
        AuthenticationSucceeded(
            tenantId: "demo", method: "fido2", credentialId: "9y1xA8Tmg1FEmT-c7_fvWZ_uoTuoih3OvR45_oAK-cw", signCount: 12, backupState: true,
            userVerified: true, sessionId: nil, authenticatedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }

    public static let methods = ["fido2", "uaf"]

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard AuthenticationSucceeded.methods.contains(method) else { throw EventDecodingError.invalidData("method") }
        // A UAF key is named by its AAID and KeyID (up to 2,048 bytes); a WebAuthn credential by its id.
        guard (method == "uaf") == (aaid != nil), aaid.map(UAFValidation.isAAID) ?? true else { throw EventDecodingError.invalidData("aaid") }
        guard isBase64URL(credentialId, maxBytes: method == "uaf" ? 2048 : 1023) else { throw EventDecodingError.invalidData("credentialId") }
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
    /// base64url credential id (for a UAF key, the KeyID).
    public var credentialId: String
    /// A UAF key only: the authenticator's AAID.
    public var aaid: String?
    /// The counter the service held.
    public var storedSignCount: Int
    /// The counter the assertion presented (not greater than the stored one).
    public var presentedSignCount: Int
    public var detectedAt: Date

    public init(tenantId: String, credentialId: String, storedSignCount: Int, presentedSignCount: Int, detectedAt: Date, aaid: String? = nil) {
        self.tenantId = tenantId
        self.credentialId = credentialId
        self.aaid = aaid
        self.storedSignCount = storedSignCount
        self.presentedSignCount = presentedSignCount
        self.detectedAt = detectedAt
    }

    public static var fullExample: CredentialCloneSuspected {
        CredentialCloneSuspected(
            tenantId: "demo", credentialId: "9y1xA8Tmg1FEmT-c7_fvWZ_uoTuoih3OvR45_oAK-cw", storedSignCount: 12, presentedSignCount: 7,
            detectedAt: Date(timeIntervalSince1970: 1_764_000_000), aaid: "FFFF#0001")
    }
    public static var minimalExample: CredentialCloneSuspected {
        var e = fullExample
        e.aaid = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard aaid.map(UAFValidation.isAAID) ?? true else { throw EventDecodingError.invalidData("aaid") }
        guard isBase64URL(credentialId, maxBytes: aaid == nil ? 1023 : 2048) else { throw EventDecodingError.invalidData("credentialId") }
        guard (0...Int(UInt32.max)).contains(storedSignCount) else { throw EventDecodingError.invalidData("storedSignCount") }
        guard (0...Int(UInt32.max)).contains(presentedSignCount) else { throw EventDecodingError.invalidData("presentedSignCount") }
    }
}

/// A session was issued at the end of a sign-in flow. No username: the session id is the
/// reference, and the user handle (registration's opaque user id) when the user has one.
public struct SessionIssued: EventPayload {
    public static let eventType = "signet.authentication.session.issued.v1"
    public static let topic = Topic.authentication

    public var tenantId: String
    public var sessionId: String
    /// base64url user handle, when the user has credentials.
    public var userHandle: String?
    /// The methods completed (`amr`) and the sequence satisfied (`acr`).
    public var amr: [String]
    public var acr: String
    public var issuedAt: Date
    public var expiresAt: Date

    public init(tenantId: String, sessionId: String, userHandle: String?, amr: [String], acr: String, issuedAt: Date, expiresAt: Date) {
        self.tenantId = tenantId
        self.sessionId = sessionId
        self.userHandle = userHandle
        self.amr = amr
        self.acr = acr
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    public static var fullExample: SessionIssued {
        SessionIssued(
            tenantId: "demo", sessionId: "s_3f1c9a0b7d2e4c6f8a1b3c5d7e9f0a2b", userHandle: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U",
            amr: ["fido2"], acr: "fido2", issuedAt: Date(timeIntervalSince1970: 1_764_000_000), expiresAt: Date(timeIntervalSince1970: 1_766_592_000))
    }
    public static var minimalExample: SessionIssued {
        var e = fullExample
        e.userHandle = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard (1...64).contains(sessionId.utf8.count) else { throw EventDecodingError.invalidData("sessionId") }
        if let h = userHandle, !isBase64URL(h, maxBytes: 64) { throw EventDecodingError.invalidData("userHandle") }
        guard amr.count <= 16, (0...256).contains(acr.utf8.count) else { throw EventDecodingError.invalidData("amr") }
    }
}

/// A session ended before its expiry: logout, an RP's revocation, or a refresh token used twice.
public struct SessionRevoked: EventPayload {
    public static let eventType = "signet.authentication.session.revoked.v1"
    public static let topic = Topic.authentication

    public var tenantId: String
    public var sessionId: String
    /// `logout`, `relying_party` or `refresh_token_reuse`.
    public var reason: String
    public var revokedAt: Date

    public init(tenantId: String, sessionId: String, reason: String, revokedAt: Date) {
        self.tenantId = tenantId
        self.sessionId = sessionId
        self.reason = reason
        self.revokedAt = revokedAt
    }

    public static let reasons = ["logout", "relying_party", "refresh_token_reuse"]

    public static var fullExample: SessionRevoked {
        SessionRevoked(tenantId: "demo", sessionId: "s_3f1c9a0b7d2e4c6f8a1b3c5d7e9f0a2b", reason: "refresh_token_reuse", revokedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: SessionRevoked { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard (1...64).contains(sessionId.utf8.count) else { throw EventDecodingError.invalidData("sessionId") }
        guard SessionRevoked.reasons.contains(reason) else { throw EventDecodingError.invalidData("reason") }
    }
}

/// A user's method was locked after too many consecutive failures (anti-hammering), or
/// unlocked by the relying party or an administrator.
public struct MethodLockChanged: EventPayload {
    public static let eventType = "signet.authentication.method.lock.changed.v1"
    public static let topic = Topic.authentication

    public var tenantId: String
    /// base64url user handle, when the user has credentials (never the username).
    public var userHandle: String?
    public var method: String
    public var locked: Bool
    public var failures: Int
    public var changedAt: Date

    public init(tenantId: String, userHandle: String?, method: String, locked: Bool, failures: Int, changedAt: Date) {
        self.tenantId = tenantId
        self.userHandle = userHandle
        self.method = method
        self.locked = locked
        self.failures = failures
        self.changedAt = changedAt
    }

    public static var fullExample: MethodLockChanged {
        MethodLockChanged(
            tenantId: "demo", userHandle: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U", method: "fido2", locked: true, failures: 10,
            changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: MethodLockChanged {
        var e = fullExample
        e.userHandle = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        if let h = userHandle, !isBase64URL(h, maxBytes: 64) { throw EventDecodingError.invalidData("userHandle") }
        guard (1...32).contains(method.utf8.count) else { throw EventDecodingError.invalidData("method") }
        guard failures >= 0 else { throw EventDecodingError.invalidData("failures") }
    }
}

/// A tenant's authentication policy changed: a ruleset (`authentication`, `registration`) or
/// the sign-in settings (`settings`). Every replica drops its compiled copy.
public struct AuthenticationPolicyChanged: EventPayload {
    public static let eventType = "signet.authentication.policy.changed.v1"
    public static let topic = Topic.authenticationPolicy

    public var tenantId: String
    /// `authentication`, `registration` or `settings`.
    public var part: String
    public var version: Int
    public var changedAt: Date

    public init(tenantId: String, part: String, version: Int, changedAt: Date) {
        self.tenantId = tenantId
        self.part = part
        self.version = version
        self.changedAt = changedAt
    }

    public static let parts = ["authentication", "registration", "settings"]

    public static var fullExample: AuthenticationPolicyChanged {
        AuthenticationPolicyChanged(tenantId: "demo", part: "authentication", version: 3, changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: AuthenticationPolicyChanged { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard AuthenticationPolicyChanged.parts.contains(part) else { throw EventDecodingError.invalidData("part") }
        guard version >= 0 else { throw EventDecodingError.invalidData("version") }
    }
}

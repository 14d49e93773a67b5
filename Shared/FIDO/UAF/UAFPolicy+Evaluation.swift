import Crypto

/// What a policy is matched against: one authenticator, as its assertion, its registration
/// and its metadata (if any) describe it.
public struct UAFAuthenticatorDescription: Sendable {
    public var aaid: String
    /// Known for authentications (and for registrations once the KRD is read).
    public var keyID: [UInt8]?
    public var signatureAlgorithm: UAFSignatureAlgorithm
    /// The attestation tag (0x3E07 / 0x3E08).
    public var attestationType: UAFTag
    public var authenticatorVersion: UInt16
    /// The metadata statement's `userVerificationDetails`: alternatives, each a list of method
    /// names (`fingerprint_internal`…); nil when no metadata is known.
    public var userVerificationDetails: [[String]]?
    /// The metadata statement's `keyProtection` names (`hardware`, `software`…); nil when no
    /// metadata is known.
    public var keyProtection: [String]?

    /// - Parameters:
    ///   - userVerificationDetails: as the metadata statement had them (at sign-in, as the
    ///     registration stored them); nil when none is known.
    ///   - keyProtection: likewise.
    public init(
        aaid: String, keyID: [UInt8]?, signatureAlgorithm: UAFSignatureAlgorithm, attestationType: UAFTag,
        authenticatorVersion: UInt16, userVerificationDetails: [[String]]?, keyProtection: [String]?
    ) {
        self.aaid = aaid
        self.keyID = keyID
        self.signatureAlgorithm = signatureAlgorithm
        self.attestationType = attestationType
        self.authenticatorVersion = authenticatorVersion
        self.userVerificationDetails = userVerificationDetails
        self.keyProtection = keyProtection
    }

    /// An authenticator described by its metadata statement (nil: none is known).
    public init(
        aaid: String, keyID: [UInt8]?, signatureAlgorithm: UAFSignatureAlgorithm, attestationType: UAFTag,
        authenticatorVersion: UInt16, statement: MetadataStatement?
    ) {
        self.init(
            aaid: aaid, keyID: keyID, signatureAlgorithm: signatureAlgorithm, attestationType: attestationType,
            authenticatorVersion: authenticatorVersion, userVerificationDetails: statement?.userVerificationDetails,
            keyProtection: statement?.keyProtection)
    }
}

extension UAFMatchCriteria {
    /// Whether the authenticator satisfies every field set in these criteria (UAF Protocol
    /// §3.2.1: the fields combine with AND; a list matches when one of its values does).
    ///
    /// Fields only metadata can answer (`userVerification`, `keyProtection`) need the
    /// authenticator's metadata characteristics: without them (nil) such criteria do not match;
    /// `matcherProtection`, `attachmentHint`, `tcDisplay` and `exts` are not
    /// carried by Signet's metadata statements, so criteria that set them never match.
    public func matches(_ authenticator: UAFAuthenticatorDescription) -> Bool {
        let aaid = authenticator.aaid.uppercased()
        if let list = self.aaid, !list.contains(where: { $0.uppercased() == aaid }) { return false }
        if let list = vendorID, !list.contains(where: { $0.uppercased() == aaid.prefix(4) }) { return false }
        if let list = keyIDs {
            guard let keyID = authenticator.keyID, list.contains(Base64URL.encode(keyID)) else { return false }
        }
        if let list = authenticationAlgorithms, !list.contains(authenticator.signatureAlgorithm.rawValue) { return false }
        if let list = assertionSchemes, !list.contains("UAFV1TLV") { return false }
        if let list = attestationTypes, !list.contains(authenticator.attestationType.rawValue) { return false }
        if let version = authenticatorVersion, authenticator.authenticatorVersion < version { return false }
        if let wanted = userVerification {
            guard let details = authenticator.userVerificationDetails else { return false }
            let offered = details.map { $0.reduce(UInt32(0)) { $0 | Self.userVerificationBit($1) } }
            // USER_VERIFY_ALL (0x400): one combination must hold every method asked for.
            if wanted & 0x400 != 0 {
                let methods = wanted & ~0x400
                guard offered.contains(where: { $0 & methods == methods }) else { return false }
            } else {
                guard offered.contains(where: { $0 & wanted != 0 }) else { return false }
            }
        }
        if let wanted = keyProtection {
            guard let names = authenticator.keyProtection else { return false }
            let offered = names.reduce(UInt16(0)) { $0 | Self.keyProtectionBit($1) }
            guard offered & wanted != 0 else { return false }
        }
        if matcherProtection != nil || attachmentHint != nil || tcDisplay != nil || exts?.isEmpty == false { return false }
        return true
    }

    /// UAF Registry §3.1 USER_VERIFY_* by metadata name.
    static func userVerificationBit(_ name: String) -> UInt32 {
        switch name {
        case "presence_internal": 0x01
        case "fingerprint_internal": 0x02
        case "passcode_internal": 0x04
        case "voiceprint_internal": 0x08
        case "faceprint_internal": 0x10
        case "location_internal": 0x20
        case "eyeprint_internal": 0x40
        case "pattern_internal": 0x80
        case "handprint_internal": 0x100
        case "none": 0x200
        case "all": 0x400
        case "passcode_external": 0x800
        case "pattern_external": 0x1000
        default: 0
        }
    }

    /// UAF Registry §3.2 KEY_PROTECTION_* by metadata name.
    static func keyProtectionBit(_ name: String) -> UInt16 {
        switch name {
        case "software": 0x01
        case "hardware": 0x02
        case "tee": 0x04
        case "secure_element": 0x08
        case "remote_handle": 0x10
        default: 0
        }
    }
}

extension UAFPolicy {
    /// The policy Signet uses when a tenant has set none: every authenticator Signet can verify.
    public static let acceptAll = UAFPolicy(accepted: [[UAFMatchCriteria(assertionSchemes: ["UAFV1TLV"])]])

    /// Enforces the policy on one authenticator of a response (UAF Protocol §3.4.6.5 step 4.a,
    /// §3.5.7.5 step 4.a): a `disallowed` match refuses it; otherwise it must match one of the
    /// criteria of some `accepted` alternative.
    ///
    /// - Important: each authenticator is judged alone here; ``enforceCombination(_:rule:)``
    ///   then checks that the response's authenticators together satisfy one alternative.
    /// - Throws: ``UAFError/Code/policyDisallowed``, ``UAFError/Code/policyNotAccepted``.
    public func enforce(_ authenticator: UAFAuthenticatorDescription, rule: @autoclosure () -> String) throws(UAFError) {
        if let index = disallowed?.firstIndex(where: { $0.matches(authenticator) }) {
            throw UAFError(.policyDisallowed, rule: rule(), "the authenticator matches disallowed[\(index)]")
        }
        guard accepted.contains(where: { set in set.contains { $0.matches(authenticator) } }) else {
            throw UAFError(.policyNotAccepted, rule: rule(), "the authenticator matches no accepted criteria")
        }
    }

    /// Enforces the policy on a response's authenticators together (UAF Protocol §3.4.6.5
    /// step 4.a, §3.5.7.5 step 4.a, §3.2.2: `accepted` is a list of alternatives, each a set of
    /// authenticators to be used together): some alternative must have each of its criteria
    /// matched by a different authenticator of the response. An alternative of one criterion
    /// is satisfied by any one authenticator it matches, as ``enforce(_:rule:)`` judges alone.
    ///
    /// - Throws: ``UAFError/Code/policyNotAccepted`` naming the number of authenticators.
    public func enforceCombination(_ authenticators: [UAFAuthenticatorDescription], rule: @autoclosure () -> String) throws(UAFError) {
        guard !accepted.contains(where: { Self.assigns($0[...], to: authenticators, used: []) }) else { return }
        throw UAFError(
            .policyNotAccepted, rule: rule(),
            "the \(authenticators.count) authenticator(s) of the response satisfy no accepted combination (each combination's criteria need different authenticators)")
    }

    /// Whether each of `criteria` can be matched by a distinct authenticator not in `used`
    /// (backtracking; a policy's combinations are short).
    private static func assigns(_ criteria: ArraySlice<UAFMatchCriteria>, to authenticators: [UAFAuthenticatorDescription], used: Set<Int>) -> Bool {
        guard let first = criteria.first else { return true }
        for (index, authenticator) in authenticators.enumerated() where !used.contains(index) && first.matches(authenticator) {
            if assigns(criteria.dropFirst(), to: authenticators, used: used.union([index])) { return true }
        }
        return false
    }

    /// The first criterion field Signet cannot evaluate, as a JSON path and a reason, or nil.
    /// Signet's metadata statements do not carry `matcherProtection`, `attachmentHint` or
    /// `tcDisplay`, and Signet knows no extension, so criteria with them would never match: a
    /// tenant's policy with them is refused when it is set, not silently unmatched later.
    public var unsupportedCriterion: (path: String, reason: String)? {
        func check(_ c: UAFMatchCriteria, _ path: String) -> (path: String, reason: String)? {
            if c.matcherProtection != nil { return ("\(path).matcherProtection", "Signet's metadata does not carry matcherProtection") }
            if c.attachmentHint != nil { return ("\(path).attachmentHint", "Signet's metadata does not carry attachmentHint") }
            if c.tcDisplay != nil { return ("\(path).tcDisplay", "Signet's metadata does not carry tcDisplay") }
            if c.exts?.isEmpty == false { return ("\(path).exts", "Signet supports no UAF extension") }
            return nil
        }
        for (i, set) in accepted.enumerated() {
            for (j, c) in set.enumerated() { if let found = check(c, "accepted[\(i)][\(j)]") { return found } }
        }
        for (i, c) in (disallowed ?? []).enumerated() { if let found = check(c, "disallowed[\(i)]") { return found } }
        return nil
    }
}

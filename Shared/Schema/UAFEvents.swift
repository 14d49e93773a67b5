import FoundationEssentials
import JSON

/// A FIDO UAF authenticator key was registered: what the authentication service needs to
/// verify its assertions (the public key, never a secret). The user is named by subject
/// reference, never by username (#18; see ``CredentialRegistered``).
public struct UAFAuthenticatorRegistered: EventPayload {
    public static let eventType = "signet.registration.uaf.registered.v2"
    public static let topic = Topic.registration

    public var tenantId: String
    /// The user's subject reference (`s1.`…).
    public var subjectRef: String
    /// `VVVV#MMMM`, upper case.
    public var aaid: String
    /// base64url KeyID.
    public var keyId: String
    /// base64url public key, in `keyEncoding`.
    public var publicKey: String
    /// UAF Registry `UAF_ALG_KEY_*` (0x0100–0x0104).
    public var keyEncoding: Int
    /// UAF Registry `UAF_ALG_SIGN_*` (1–0x12).
    public var signatureAlgorithm: Int
    public var signCounter: Int
    /// `basic_full` or `basic_surrogate`.
    public var attestationType: String
    public var registeredAt: Date
    /// The tenant's AppID as the registration service serves it (`SIGNET_UAF_APP_ID_BASE` +
    /// `/v1/tenants/{tenant}/uaf/facets`): the authentication service checks at start-up that it
    /// makes the same AppIDs.
    public var appId: String?
    /// The metadata statement's `userVerificationDetails` the registration was judged with:
    /// alternatives, each a list of method names (``UAFValidation/userVerificationMethods``);
    /// absent when it registered without a statement. Sign-in matches the tenant's UAF policy
    /// (`userVerification`) on them (UAF Protocol §3.5.7.5 step 4.a).
    public var userVerificationDetails: [[String]]?
    /// The metadata statement's `keyProtection` names (``UAFValidation/keyProtectionTypes``);
    /// absent as `userVerificationDetails`. For the policy's `keyProtection`.
    public var keyProtection: [String]?

    public init(
        tenantId: String, subjectRef: String, aaid: String, keyId: String, publicKey: String, keyEncoding: Int, signatureAlgorithm: Int,
        signCounter: Int, attestationType: String, registeredAt: Date, appId: String? = nil, userVerificationDetails: [[String]]? = nil,
        keyProtection: [String]? = nil
    ) {
        self.appId = appId
        self.userVerificationDetails = userVerificationDetails
        self.keyProtection = keyProtection
        self.tenantId = tenantId
        self.subjectRef = subjectRef
        self.aaid = aaid
        self.keyId = keyId
        self.publicKey = publicKey
        self.keyEncoding = keyEncoding
        self.signatureAlgorithm = signatureAlgorithm
        self.signCounter = signCounter
        self.attestationType = attestationType
        self.registeredAt = registeredAt
    }

    public static var fullExample: UAFAuthenticatorRegistered {
        UAFAuthenticatorRegistered(
            tenantId: "demo", subjectRef: "s1.bUerVXM0dmFdazr6tUixuPoRWb9nHrqRFYR6w8_r-lc", aaid: "FFFF#0001", keyId: "ZMCPn92yHv1Ip-iCiBb6i4ADq6ZOv569KFQCvYSJfNg",
            publicKey: "BJsvEtUsVKh7tmYHhJ2FBm3kHU-OCdWiUYVijgYa81MfkjQ1z6UiHbKP9_nRzIN9anprHqDGcR6q7O20q_yctZA", keyEncoding: 256,
            signatureAlgorithm: 1, signCounter: 0, attestationType: "basic_surrogate", registeredAt: Date(timeIntervalSince1970: 1_764_000_000),
            appId: "http://localhost:8080/registration/v1/tenants/demo/uaf/facets",
            userVerificationDetails: [["fingerprint_internal"], ["passcode_internal", "presence_internal"]], keyProtection: ["hardware", "tee"])
    }
    public static var minimalExample: UAFAuthenticatorRegistered {
        var e = fullExample
        e.appId = nil
        e.userVerificationDetails = nil
        e.keyProtection = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard SubjectRefFormat.isValid(subjectRef) else { throw EventDecodingError.invalidData("subjectRef") }
        guard UAFValidation.isAAID(aaid) else { throw EventDecodingError.invalidData("aaid") }
        guard isBase64URL(keyId, maxBytes: 2048) else { throw EventDecodingError.invalidData("keyId") }
        guard isBase64URL(publicKey, maxBytes: 2048) else { throw EventDecodingError.invalidData("publicKey") }
        guard (0x0100...0x0104).contains(keyEncoding) else { throw EventDecodingError.invalidData("keyEncoding") }
        guard (1...0x12).contains(signatureAlgorithm) else { throw EventDecodingError.invalidData("signatureAlgorithm") }
        guard signCounter >= 0, signCounter <= Int(UInt32.max) else { throw EventDecodingError.invalidData("signCounter") }
        guard ["basic_full", "basic_surrogate"].contains(attestationType) else { throw EventDecodingError.invalidData("attestationType") }
        if let a = appId, !((a.hasPrefix("https://") || a.hasPrefix("http://")) && a.utf8.count <= 2048) { throw EventDecodingError.invalidData("appId") }
        if let details = userVerificationDetails, !UAFValidation.isUserVerificationDetails(details) {
            throw EventDecodingError.invalidData("userVerificationDetails")
        }
        if let names = keyProtection, !UAFValidation.isKeyProtection(names) { throw EventDecodingError.invalidData("keyProtection") }
    }
}

/// A UAF authenticator key's status changed: `deleted` (deregistered), `suspended` or `active`.
public struct UAFAuthenticatorStatusChanged: EventPayload {
    public static let eventType = "signet.registration.uaf.status.changed.v1"
    public static let topic = Topic.registration

    public var tenantId: String
    public var aaid: String
    /// base64url KeyID.
    public var keyId: String
    /// `active`, `suspended` or `deleted`.
    public var status: String
    public var changedAt: Date

    public init(tenantId: String, aaid: String, keyId: String, status: String, changedAt: Date) {
        self.tenantId = tenantId
        self.aaid = aaid
        self.keyId = keyId
        self.status = status
        self.changedAt = changedAt
    }

    public static var fullExample: UAFAuthenticatorStatusChanged {
        UAFAuthenticatorStatusChanged(
            tenantId: "demo", aaid: "FFFF#0001", keyId: "ZMCPn92yHv1Ip-iCiBb6i4ADq6ZOv569KFQCvYSJfNg", status: "deleted",
            changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: UAFAuthenticatorStatusChanged { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard UAFValidation.isAAID(aaid) else { throw EventDecodingError.invalidData("aaid") }
        guard isBase64URL(keyId, maxBytes: 2048) else { throw EventDecodingError.invalidData("keyId") }
        guard ["active", "suspended", "deleted"].contains(status) else { throw EventDecodingError.invalidData("status") }
    }
}

/// A tenant's UAF settings changed: its trusted facet IDs and its UAF policy, which the
/// authentication service needs to check FinalChallengeParams and enforce the policy.
public struct UAFSettingsChanged: EventPayload {
    public static let eventType = "signet.registration.uaf.settings.changed.v1"
    public static let topic = Topic.registration

    public var tenantId: String
    /// Facet IDs of the TrustedFacets document (web origins, `android:apk-key-hash:…`, `ios:bundle-id:…`).
    public var facetIds: [String]
    /// The UAF `Policy` object (`accepted`, `disallowed`), as the admin API stores it.
    public var policy: JSONValue
    /// Whether basic surrogate attestation is accepted from AAIDs without metadata.
    public var allowSurrogateWithoutMetadata: Bool
    public var revision: Int
    public var changedAt: Date

    public init(tenantId: String, facetIds: [String], policy: JSONValue, allowSurrogateWithoutMetadata: Bool, revision: Int, changedAt: Date) {
        self.tenantId = tenantId
        self.facetIds = facetIds
        self.policy = policy
        self.allowSurrogateWithoutMetadata = allowSurrogateWithoutMetadata
        self.revision = revision
        self.changedAt = changedAt
    }

    public static var fullExample: UAFSettingsChanged {
        UAFSettingsChanged(
            tenantId: "demo", facetIds: ["https://demo.example", "android:apk-key-hash:bE0f1WtRJrZv/C0y9CM73bAUqiI"],
            policy: ["accepted": [[["assertionSchemes": ["UAFV1TLV"]]]]], allowSurrogateWithoutMetadata: true, revision: 1,
            changedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: UAFSettingsChanged { fullExample }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard facetIds.count <= UAFValidation.maximumFacets, facetIds.allSatisfy(UAFValidation.isFacetID) else {
            throw EventDecodingError.invalidData("facetIds")
        }
        guard policy.objectValue?["accepted"]?.arrayValue != nil else { throw EventDecodingError.invalidData("policy") }
        guard revision >= 1 else { throw EventDecodingError.invalidData("revision") }
    }
}

/// Shared rules for UAF values on the wire.
public enum UAFValidation {
    /// More trusted facets than this are refused.
    public static let maximumFacets = 32

    /// The user verification method names of metadata statements (UAF Registry §3.1,
    /// USER_VERIFY_*; FIDO Metadata Statement §3.1 `userVerificationMethod`).
    public static let userVerificationMethods: Set<String> = [
        "presence_internal", "fingerprint_internal", "passcode_internal", "voiceprint_internal", "faceprint_internal",
        "location_internal", "eyeprint_internal", "pattern_internal", "handprint_internal", "none", "all",
        "passcode_external", "pattern_external",
    ]
    /// The key protection names of metadata statements (UAF Registry §3.2, KEY_PROTECTION_*).
    public static let keyProtectionTypes: Set<String> = ["software", "hardware", "tee", "secure_element", "remote_handle"]
    /// The most `userVerificationDetails` alternatives an event carries: C(13, 6), the largest
    /// set of alternatives of the 13 method names none of which holds another (Sperner), which
    /// is what ``eventUserVerificationDetails(_:)`` keeps. Real statements list a handful.
    public static let maximumUserVerificationAlternatives = 1716

    /// `userVerificationDetails` as an event carries them: at most
    /// ``maximumUserVerificationAlternatives`` alternatives, each of known method names, each
    /// name once (so at most 13). An alternative may be empty.
    public static func isUserVerificationDetails(_ details: [[String]]) -> Bool {
        details.count <= maximumUserVerificationAlternatives
            && details.allSatisfy { Set($0).count == $0.count && $0.allSatisfy(userVerificationMethods.contains) }
    }

    /// `keyProtection` as an event carries it: known names, each once.
    public static func isKeyProtection(_ names: [String]) -> Bool {
        Set(names).count == names.count && names.allSatisfy(keyProtectionTypes.contains)
    }

    /// A metadata statement's `userVerificationDetails` made fit for an event, matched by a
    /// policy exactly as the statement's own: unknown names dropped (they offer no USER_VERIFY
    /// bit), each name once, and only the alternatives no other one holds, each once (an
    /// alternative that another holds matches nothing the other does not: `userVerification`
    /// asks for one method of an alternative, or with USER_VERIFY_ALL for all of them in one).
    /// What remains holds no alternative in another, so it is never more than
    /// ``maximumUserVerificationAlternatives``: every statement is carried, none is dropped to
    /// "no metadata" (which a `disallowed` criterion would not refuse).
    public static func eventUserVerificationDetails(_ details: [[String]]) -> [[String]] {
        let order = userVerificationMethods.sorted()
        // Each alternative as a set of names (a 13-bit mask), in the statement's order; the
        // first spelling of each set kept.
        var masks: [UInt16] = []
        var spelled: [UInt16: [String]] = [:]
        for alternative in details {
            var seen = Set<String>()
            let kept = alternative.filter { userVerificationMethods.contains($0) && seen.insert($0).inserted }
            let mask = kept.reduce(UInt16(0)) { $0 | UInt16(1) << UInt16(order.firstIndex(of: $1)!) }
            if spelled[mask] == nil {
                spelled[mask] = kept
                masks.append(mask)
            }
        }
        // At most 2^13 distinct masks: the quadratic pass is bounded whatever the statement.
        return masks.filter { mask in !masks.contains { $0 != mask && $0 & mask == mask } }.map { spelled[$0]! }
    }

    /// A metadata statement's `keyProtection` made fit for an event: known names, each once, in
    /// their order (an unknown name offers no KEY_PROTECTION bit).
    public static func eventKeyProtection(_ names: [String]) -> [String] {
        var seen = Set<String>()
        return names.filter { keyProtectionTypes.contains($0) && seen.insert($0).inserted }
    }

    /// `VVVV#MMMM` in upper-case hexadecimal.
    public static func isAAID(_ s: String) -> Bool {
        let u = Array(s.utf8)
        func hex(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) || (0x41...0x46).contains(b) }
        return u.count == 9 && u[4] == UInt8(ascii: "#") && u[..<4].allSatisfy(hex) && u[5...].allSatisfy(hex)
    }

    /// A facet ID: an `https://` web origin (no path), `android:apk-key-hash:<base64>` or
    /// `ios:bundle-id:<id>`; printable ASCII, at most 512 bytes. (`http://localhost…` origins
    /// are accepted for development.)
    public static func isFacetID(_ s: String) -> Bool {
        guard !s.isEmpty, s.utf8.count <= 512, s.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return false }
        if s.hasPrefix("android:apk-key-hash:") || s.hasPrefix("ios:bundle-id:") {
            return s.split(separator: ":").last.map { !$0.isEmpty } ?? false
        }
        for scheme in ["https://", "http://localhost", "http://127.0.0.1"] where s.hasPrefix(scheme) {
            let rest = s.dropFirst(scheme == "https://" ? scheme.count : "http://".count)
            return !rest.isEmpty && !rest.contains("/")
        }
        return false
    }
}

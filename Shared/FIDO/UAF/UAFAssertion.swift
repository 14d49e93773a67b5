/// ASSERTION_INFO (Authenticator Commands §6.2.3 / §6.3.3): what the authenticator says about
/// itself and the assertion.
public struct UAFAssertionInfo: Sendable, Hashable {
    /// Vendor-assigned authenticator version.
    public let authenticatorVersion: UInt16
    /// 0x01: the user was verified; 0x02: the user was verified after seeing the transaction
    /// content (authentication only).
    public let authenticationMode: UInt8
    public let signatureAlgorithm: UAFSignatureAlgorithm
    /// Registration only: the encoding of PUB_KEY.
    public let publicKeyEncoding: UAFKeyEncoding?
}

/// The attestation of a registration assertion.
public enum UAFAttestation: Sendable, Hashable {
    /// TAG_ATTESTATION_BASIC_FULL: KRD signed by the attestation key; the first certificate is
    /// the attestation certificate, the rest may help build its path.
    case basicFull(signature: [UInt8], certificates: [[UInt8]])
    /// TAG_ATTESTATION_BASIC_SURROGATE: KRD signed by the new key itself.
    case basicSurrogate(signature: [UInt8])

    /// The metadata name (`basic_full`, `basic_surrogate`).
    public var typeName: String {
        switch self {
        case .basicFull: "basic_full"
        case .basicSurrogate: "basic_surrogate"
        }
    }

    /// The registry tag, as metadata `attestationTypes` and policies use it.
    public var tag: UAFTag {
        switch self {
        case .basicFull: .attestationBasicFull
        case .basicSurrogate: .attestationBasicSurrogate
        }
    }
}

/// Field bounds shared by both assertions (Authenticator Commands §6, UAF Protocol §3.4.6,
/// and bounds of our own where the specification has none).
enum UAFFieldBounds {
    static let aaid = 9...9
    static let finalChallengeHash = 1...64
    static let keyID = 1...2048
    static let publicKey = 1...2048
    static let signature = 1...1024
    static let authenticatorNonce = 8...64
    static let transactionContentHash = 0...64
    static let certificate = 1...16 * 1024
    static let certificates = 1...8
}

/// Parses an AAID: `VVVV#MMMM`, four hexadecimal digits each (UAF Protocol §3.1.4). Returned
/// in upper case: AAIDs compare case-insensitively.
func parseAAID(_ bytes: ArraySlice<UInt8>, rule: String) throws(UAFError) -> String {
    func isHex(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b) }
    let s = bytes.startIndex
    guard bytes.count == 9, bytes[s + 4] == UInt8(ascii: "#"), bytes[s..<(s + 4)].allSatisfy(isHex), bytes[(s + 5)...].allSatisfy(isHex) else {
        throw UAFError(.malformedTLV, rule: rule, "AAID is not VVVV#MMMM in hexadecimal")
    }
    // ASCII upper case on the bytes (hex digits only), without the Unicode case mapping of
    // `String.uppercased()`: every assertion's AAID goes through here.
    return String(decoding: bytes.map { (0x61...0x66).contains($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
}

// Little-endian fields at `at` from the slice's start (TLV values are read in place).
private func uint16(_ b: ArraySlice<UInt8>, _ at: Int) -> UInt16 {
    let i = b.startIndex + at
    return UInt16(b[i]) | UInt16(b[i + 1]) << 8
}
private func uint32(_ b: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
    let i = b.startIndex + at
    return UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
}

/// A registration assertion, `TAG_UAFV1_REG_ASSERTION` (Authenticator Commands §6.2.3),
/// read strictly: every mandatory tag present once, no tag out of place, lengths checked.
public struct UAFRegistrationAssertion: Sendable {
    public let aaid: String
    public let info: UAFAssertionInfo
    public let finalChallengeHash: [UInt8]
    public let keyID: [UInt8]
    public let signCounter: UInt32
    public let regCounter: UInt32
    public let publicKey: [UInt8]
    /// The KRD TLV exactly as sent: what the attestation signature covers.
    public let krd: [UInt8]
    public let attestation: UAFAttestation
    /// Extensions inside the KRD and beside it.
    public let extensions: [UAFExtension]

    /// - Throws: ``UAFError`` (`uaf_malformed_tlv`, `uaf_unknown_tag`, `uaf_duplicate_tag`,
    ///   `uaf_missing_tag`, `uaf_unsupported_attestation`).
    public init(bytes: [UInt8]) throws(UAFError) {
        let rule = "AuthnrCmds §6.2.3 TAG_UAFV1_REG_ASSERTION"
        let top = try UAFTLV.parseOne(bytes)
        guard top.tag == .regAssertion else {
            throw UAFError(.unknownTag, rule: rule, "top-level tag \(top.tag) is not TAG_UAFV1_REG_ASSERTION")
        }
        if top.children.contains(where: { $0.tag == .attestationECDAA || $0.tag == .attestationAttCA }) {
            throw UAFError(.unsupportedAttestation, rule: rule, "ECDAA and AttCA attestation are not supported")
        }
        let outer = try UAFTLVFields(
            top, allowed: [.krd, .attestationBasicFull, .attestationBasicSurrogate], allowsExtensions: true, rule: rule)
        let krdElement = try outer.required(.krd, rule: rule)
        let krd = try UAFTLVFields(
            krdElement, allowed: [.aaid, .assertionInfo, .finalChallengeHash, .keyID, .counters, .publicKey],
            allowsExtensions: true, rule: rule)
        aaid = try parseAAID(krd.slice(.aaid, lengths: UAFFieldBounds.aaid, rule: rule), rule: rule)
        let info = try krd.slice(.assertionInfo, lengths: 7...7, rule: rule)
        self.info = UAFAssertionInfo(
            authenticatorVersion: uint16(info, 0), authenticationMode: info[info.startIndex + 2],
            signatureAlgorithm: UAFSignatureAlgorithm(rawValue: uint16(info, 3)),
            publicKeyEncoding: UAFKeyEncoding(rawValue: uint16(info, 5)))
        finalChallengeHash = try krd.value(.finalChallengeHash, lengths: UAFFieldBounds.finalChallengeHash, rule: rule)
        keyID = try krd.value(.keyID, lengths: UAFFieldBounds.keyID, rule: rule)
        let counters = try krd.slice(.counters, lengths: 8...8, rule: rule)
        signCounter = uint32(counters, 0)
        regCounter = uint32(counters, 4)
        publicKey = try krd.value(.publicKey, lengths: UAFFieldBounds.publicKey, rule: rule)
        self.krd = krdElement.encoded

        switch (outer.optional(.attestationBasicFull), outer.optional(.attestationBasicSurrogate)) {
        case (let full?, nil):
            let fields = try UAFTLVFields(full, allowed: [.signature], repeatable: [.attestationCert], allowsExtensions: false, rule: rule)
            let signature = try fields.value(.signature, lengths: UAFFieldBounds.signature, rule: rule)
            let certificates = fields.all(.attestationCert).map(\.value)
            guard UAFFieldBounds.certificates.contains(certificates.count),
                certificates.allSatisfy({ UAFFieldBounds.certificate.contains($0.count) })
            else {
                throw UAFError(.missingTag, rule: rule, "basic full attestation needs 1–8 TAG_ATTESTATION_CERT of at most 16 KiB")
            }
            attestation = .basicFull(signature: signature, certificates: certificates)
        case (nil, let surrogate?):
            let fields = try UAFTLVFields(surrogate, allowed: [.signature], allowsExtensions: false, rule: rule)
            attestation = .basicSurrogate(signature: try fields.value(.signature, lengths: UAFFieldBounds.signature, rule: rule))
        case (nil, nil):
            throw UAFError(.missingTag, rule: rule, "no attestation (basic full or basic surrogate)")
        case (.some, .some):
            throw UAFError(.duplicateTag, rule: rule, "both basic full and basic surrogate attestation")
        }
        extensions = krd.extensions + outer.extensions
    }
}

/// An authentication assertion, `TAG_UAFV1_AUTH_ASSERTION` (Authenticator Commands §6.3.3).
public struct UAFAuthenticationAssertion: Sendable, Hashable {
    public let aaid: String
    public let info: UAFAssertionInfo
    public let authenticatorNonce: [UInt8]
    public let finalChallengeHash: [UInt8]
    /// Empty when no transaction was confirmed.
    public let transactionContentHash: [UInt8]
    public let keyID: [UInt8]
    public let signCounter: UInt32
    /// The SIGNED_DATA TLV exactly as sent: what the signature covers.
    public let signedData: [UInt8]
    public let signature: [UInt8]
    public let extensions: [UAFExtension]

    private static let outerTags: [UAFTag] = [.signedData, .signature]
    private static let signedTags: [UAFTag] = [
        .aaid, .assertionInfo, .authenticatorNonce, .finalChallengeHash, .transactionContentHash, .keyID, .counters,
    ]

    /// Reads the assertion in place (``UAFTLVInPlace``): on the path of every UAF sign-in.
    /// Gives what ``init(tree:)`` gives, or throws the same code.
    ///
    /// - Throws: ``UAFError`` (`uaf_malformed_tlv`, `uaf_unknown_tag`, `uaf_duplicate_tag`, `uaf_missing_tag`).
    public init(bytes: [UInt8]) throws(UAFError) {
        let rule = "AuthnrCmds §6.3.3 TAG_UAFV1_AUTH_ASSERTION"
        let tlv = UAFTLVInPlace(bytes: bytes)
        try tlv.validateOne()
        guard tlv.tag(at: 0) == .authAssertion else {
            throw UAFError(.unknownTag, rule: rule, "top-level tag \(tlv.tag(at: 0)) is not TAG_UAFV1_AUTH_ASSERTION")
        }
        let outer = try tlv.fields(of: 0, allowed: Self.outerTags, allowsExtensions: true, rule: rule)
        let signedOffset = try outer.required(.signedData, rule: rule)
        let signed = try tlv.fields(of: signedOffset, allowed: Self.signedTags, allowsExtensions: true, rule: rule)
        aaid = try parseAAID(tlv.slice(signed, .aaid, lengths: UAFFieldBounds.aaid, rule: rule), rule: rule)
        let info = try tlv.slice(signed, .assertionInfo, lengths: 5...5, rule: rule)
        self.info = UAFAssertionInfo(
            authenticatorVersion: uint16(info, 0), authenticationMode: info[info.startIndex + 2],
            signatureAlgorithm: UAFSignatureAlgorithm(rawValue: uint16(info, 3)), publicKeyEncoding: nil)
        authenticatorNonce = Array(try tlv.slice(signed, .authenticatorNonce, lengths: UAFFieldBounds.authenticatorNonce, rule: rule))
        finalChallengeHash = Array(try tlv.slice(signed, .finalChallengeHash, lengths: UAFFieldBounds.finalChallengeHash, rule: rule))
        transactionContentHash = Array(
            try tlv.slice(signed, .transactionContentHash, lengths: UAFFieldBounds.transactionContentHash, rule: rule))
        keyID = Array(try tlv.slice(signed, .keyID, lengths: UAFFieldBounds.keyID, rule: rule))
        signCounter = uint32(try tlv.slice(signed, .counters, lengths: 4...4, rule: rule), 0)
        signature = Array(try tlv.slice(outer, .signature, lengths: UAFFieldBounds.signature, rule: rule))
        signedData = Array(bytes[signedOffset..<tlv.valueRange(at: signedOffset).upperBound])
        extensions = signed.extensions + outer.extensions
    }

    /// The reference reading, through the ``UAFTLV`` tree and ``UAFTLVFields``: what
    /// ``init(bytes:)`` must agree with (tests and `UAFFuzz` compare the two).
    ///
    /// - Throws: ``UAFError`` (`uaf_malformed_tlv`, `uaf_unknown_tag`, `uaf_duplicate_tag`, `uaf_missing_tag`).
    public init(tree bytes: [UInt8]) throws(UAFError) {
        let rule = "AuthnrCmds §6.3.3 TAG_UAFV1_AUTH_ASSERTION"
        let top = try UAFTLV.parseOne(bytes)
        guard top.tag == .authAssertion else {
            throw UAFError(.unknownTag, rule: rule, "top-level tag \(top.tag) is not TAG_UAFV1_AUTH_ASSERTION")
        }
        let outer = try UAFTLVFields(top, allowed: [.signedData, .signature], allowsExtensions: true, rule: rule)
        let signedElement = try outer.required(.signedData, rule: rule)
        let signed = try UAFTLVFields(
            signedElement,
            allowed: [.aaid, .assertionInfo, .authenticatorNonce, .finalChallengeHash, .transactionContentHash, .keyID, .counters],
            allowsExtensions: true, rule: rule)
        aaid = try parseAAID(signed.slice(.aaid, lengths: UAFFieldBounds.aaid, rule: rule), rule: rule)
        let info = try signed.slice(.assertionInfo, lengths: 5...5, rule: rule)
        self.info = UAFAssertionInfo(
            authenticatorVersion: uint16(info, 0), authenticationMode: info[info.startIndex + 2],
            signatureAlgorithm: UAFSignatureAlgorithm(rawValue: uint16(info, 3)), publicKeyEncoding: nil)
        authenticatorNonce = try signed.value(.authenticatorNonce, lengths: UAFFieldBounds.authenticatorNonce, rule: rule)
        finalChallengeHash = try signed.value(.finalChallengeHash, lengths: UAFFieldBounds.finalChallengeHash, rule: rule)
        transactionContentHash = try signed.value(.transactionContentHash, lengths: UAFFieldBounds.transactionContentHash, rule: rule)
        keyID = try signed.value(.keyID, lengths: UAFFieldBounds.keyID, rule: rule)
        signCounter = uint32(try signed.slice(.counters, lengths: 4...4, rule: rule), 0)
        signature = try outer.value(.signature, lengths: UAFFieldBounds.signature, rule: rule)
        signedData = signedElement.encoded
        extensions = signed.extensions + outer.extensions
    }
}

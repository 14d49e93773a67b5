/// A UAFV1TLV tag (FIDO UAF Authenticator Commands §5.1, UAF Registry §3.1).
///
/// Tags are 16-bit little-endian on the wire. A tag with bit 0x1000 set is *composite*: its
/// value is itself a sequence of TLVs (Authenticator Commands §5.1, "recursive" tags).
public struct UAFTag: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// TAG_UAFV1_REG_ASSERTION: the registration assertion (KRD + attestation).
    public static let regAssertion = UAFTag(rawValue: 0x3E01)
    /// TAG_UAFV1_AUTH_ASSERTION: the authentication assertion (signed data + signature).
    public static let authAssertion = UAFTag(rawValue: 0x3E02)
    /// TAG_UAFV1_KRD: Key Registration Data, what the attestation signs.
    public static let krd = UAFTag(rawValue: 0x3E03)
    /// TAG_UAFV1_SIGNED_DATA: what an authentication signature signs.
    public static let signedData = UAFTag(rawValue: 0x3E04)
    /// TAG_ATTESTATION_CERT: one DER X.509 certificate; the first is the attestation certificate.
    public static let attestationCert = UAFTag(rawValue: 0x2E05)
    /// TAG_SIGNATURE.
    public static let signature = UAFTag(rawValue: 0x2E06)
    /// TAG_ATTESTATION_BASIC_FULL: signature + attestation certificate chain.
    public static let attestationBasicFull = UAFTag(rawValue: 0x3E07)
    /// TAG_ATTESTATION_BASIC_SURROGATE: signature by the new key itself.
    public static let attestationBasicSurrogate = UAFTag(rawValue: 0x3E08)
    /// TAG_ATTESTATION_ECDAA (UAF 1.1+; not supported by Signet).
    public static let attestationECDAA = UAFTag(rawValue: 0x3E09)
    /// TAG_ATTESTATION_ATTCA (UAF 1.2; not supported by Signet).
    public static let attestationAttCA = UAFTag(rawValue: 0x3E0A)
    /// TAG_KEYID.
    public static let keyID = UAFTag(rawValue: 0x2E09)
    /// TAG_FINAL_CHALLENGE_HASH.
    public static let finalChallengeHash = UAFTag(rawValue: 0x2E0A)
    /// TAG_AAID.
    public static let aaid = UAFTag(rawValue: 0x2E0B)
    /// TAG_PUB_KEY.
    public static let publicKey = UAFTag(rawValue: 0x2E0C)
    /// TAG_COUNTERS: signCounter (and regCounter in a KRD), 32-bit little-endian each.
    public static let counters = UAFTag(rawValue: 0x2E0D)
    /// TAG_ASSERTION_INFO.
    public static let assertionInfo = UAFTag(rawValue: 0x2E0E)
    /// TAG_AUTHENTICATOR_NONCE.
    public static let authenticatorNonce = UAFTag(rawValue: 0x2E0F)
    /// TAG_TRANSACTION_CONTENT_HASH.
    public static let transactionContentHash = UAFTag(rawValue: 0x2E10)
    /// TAG_EXTENSION (critical: `fail_if_unknown` is true).
    public static let extensionCritical = UAFTag(rawValue: 0x3E11)
    /// TAG_EXTENSION (non-critical).
    public static let extensionNonCritical = UAFTag(rawValue: 0x3E12)
    /// TAG_EXTENSION_ID.
    public static let extensionID = UAFTag(rawValue: 0x2E13)
    /// TAG_EXTENSION_DATA.
    public static let extensionData = UAFTag(rawValue: 0x2E14)

    /// Whether the value is a nested TLV sequence.
    public var isComposite: Bool { rawValue & 0x1000 != 0 }

    /// `0x3E01`, for details and tests.
    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}

/// One UAFV1TLV element: a tag, its value and, for a composite tag, the elements inside it.
///
/// ``encoded`` keeps the element's exact bytes (tag, length and value): signatures cover the
/// KRD and SignedData TLVs as sent, never a re-encoding.
///
/// A parsed element shares the buffer it was read from and keeps only the ranges of its
/// encoding and value: ``value`` and ``encoded`` copy out when asked. Parsing an assertion
/// therefore allocates no byte arrays but the children lists (on the path of every UAF
/// verification; see ``UAFPublicKeyCache`` for the figures). Equality is by tag and bytes.
public struct UAFTLV: Sendable, Hashable {
    public let tag: UAFTag
    /// The nested elements of a composite tag, in order; empty for a leaf.
    public let children: [UAFTLV]
    /// The buffer holding the element (the whole input for a parsed one).
    private let storage: [UInt8]
    /// Where tag ‖ length ‖ value lies in ``storage``.
    private let encodedRange: Range<Int>

    /// The value bytes (for a composite tag, the encoding of ``children``).
    public var value: [UInt8] { Array(storage[(encodedRange.lowerBound + 4)..<encodedRange.upperBound]) }
    /// The value bytes in place (sharing the parsed buffer), for fields read, not kept.
    public var valueSlice: ArraySlice<UInt8> { storage[(encodedRange.lowerBound + 4)..<encodedRange.upperBound] }
    /// The value's length, without copying it.
    public var valueCount: Int { encodedRange.count - 4 }
    /// Tag ‖ length ‖ value, exactly as read.
    public var encoded: [UInt8] {
        encodedRange == storage.indices ? storage : Array(storage[encodedRange])
    }

    /// A leaf element.
    public init(_ tag: UAFTag, _ value: [UInt8]) {
        precondition(value.count <= Int(UInt16.max), "a UAF TLV value holds at most 65535 bytes")
        self.tag = tag
        children = []
        storage = UAFTLV.header(tag, value.count) + value
        encodedRange = storage.indices
    }

    /// A composite element built from `children`.
    public init(_ tag: UAFTag, children: [UAFTLV]) {
        let value = children.flatMap(\.encoded)
        precondition(value.count <= Int(UInt16.max), "a UAF TLV value holds at most 65535 bytes")
        self.tag = tag
        self.children = children
        storage = UAFTLV.header(tag, value.count) + value
        encodedRange = storage.indices
    }

    private init(tag: UAFTag, children: [UAFTLV], storage: [UInt8], encodedRange: Range<Int>) {
        self.tag = tag
        self.children = children
        self.storage = storage
        self.encodedRange = encodedRange
    }

    private static func header(_ tag: UAFTag, _ length: Int) -> [UInt8] {
        [UInt8(tag.rawValue & 0xFF), UInt8(tag.rawValue >> 8), UInt8(length & 0xFF), UInt8(length >> 8)]
    }

    public static func == (a: UAFTLV, b: UAFTLV) -> Bool {
        a.tag == b.tag && a.storage[a.encodedRange].elementsEqual(b.storage[b.encodedRange])
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(tag)
        hasher.combine(encodedRange.count)
        for byte in storage[encodedRange] { hasher.combine(byte) }
    }

    // MARK: - Parsing

    /// Nesting deeper than this is refused (an assertion needs 3: assertion › KRD/extension › leaf).
    public static let maximumDepth = 4
    /// More elements than this in one sequence are refused.
    public static let maximumElements = 64

    /// Parses `bytes` as a sequence of UAFV1TLV elements, recursing into composite tags.
    ///
    /// Strict: every length must fit inside its parent exactly, nothing may trail, a composite
    /// value must itself parse to the end, and nesting is bounded by ``maximumDepth``.
    ///
    /// - Throws: ``UAFError/Code/malformedTLV``.
    public static func parseSequence(_ bytes: [UInt8]) throws(UAFError) -> [UAFTLV] {
        try parse(bytes, from: 0, to: bytes.count, depth: 0)
    }

    /// Parses `bytes` as exactly one element.
    public static func parseOne(_ bytes: [UInt8]) throws(UAFError) -> UAFTLV {
        let elements = try parseSequence(bytes)
        guard elements.count == 1 else {
            throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "expected exactly one top-level TLV, found \(elements.count)")
        }
        return elements[0]
    }

    private static func parse(_ bytes: [UInt8], from start: Int, to end: Int, depth: Int) throws(UAFError) -> [UAFTLV] {
        guard depth < maximumDepth else {
            throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "TLV nesting deeper than \(maximumDepth)")
        }
        var elements: [UAFTLV] = []
        var i = start
        while i < end {
            guard end - i >= 4 else {
                throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "truncated TLV header at byte \(i)")
            }
            let tag = UAFTag(rawValue: UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8)
            let length = Int(bytes[i + 2]) | Int(bytes[i + 3]) << 8
            let valueStart = i + 4
            guard length <= end - valueStart else {
                throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "length of tag \(tag) at byte \(i) runs past its container")
            }
            let valueEnd = valueStart + length
            let children = tag.isComposite ? try parse(bytes, from: valueStart, to: valueEnd, depth: depth + 1) : []
            elements.append(UAFTLV(tag: tag, children: children, storage: bytes, encodedRange: i..<valueEnd))
            guard elements.count <= maximumElements else {
                throw UAFError(.malformedTLV, rule: "AuthnrCmds §5.1", "more than \(maximumElements) TLVs in one sequence")
            }
            i = valueEnd
        }
        return elements
    }
}

// MARK: - Reading a structure

/// The children of one composite element, read by tag: each expected tag at most once (unless
/// declared repeatable), nothing unexpected, extensions gathered apart.
struct UAFTLVFields {
    // A handful of children each: linear scans of small arrays cost less than hashing.
    private var single: [UAFTLV] = []
    private var repeated: [UAFTLV] = []
    private(set) var extensions: [UAFExtension] = []
    let container: UAFTag

    /// - Parameters:
    ///   - allowed: the tags that may appear once.
    ///   - repeatable: the tags that may appear several times.
    ///   - allowsExtensions: whether TAG_EXTENSION elements may appear here.
    init(_ element: UAFTLV, allowed: [UAFTag], repeatable: [UAFTag] = [], allowsExtensions: Bool, rule: String) throws(UAFError) {
        container = element.tag
        single.reserveCapacity(element.children.count)
        for child in element.children {
            if child.tag == .extensionCritical || child.tag == .extensionNonCritical {
                guard allowsExtensions else {
                    throw UAFError(.unknownTag, rule: rule, "no extension may appear in tag \(element.tag)")
                }
                extensions.append(try UAFExtension(child))
            } else if repeatable.contains(child.tag) {
                repeated.append(child)
            } else if allowed.contains(child.tag) {
                guard !single.contains(where: { $0.tag == child.tag }) else {
                    throw UAFError(.duplicateTag, rule: rule, "tag \(child.tag) appears twice in tag \(element.tag)")
                }
                single.append(child)
            } else {
                throw UAFError(.unknownTag, rule: rule, "tag \(child.tag) has no place in tag \(element.tag)")
            }
        }
    }

    func optional(_ tag: UAFTag) -> UAFTLV? { single.first { $0.tag == tag } }

    func all(_ tag: UAFTag) -> [UAFTLV] { repeated.filter { $0.tag == tag } }

    func required(_ tag: UAFTag, rule: String) throws(UAFError) -> UAFTLV {
        guard let element = optional(tag) else {
            throw UAFError(.missingTag, rule: rule, "tag \(tag) is missing from tag \(container)")
        }
        return element
    }

    /// A required leaf whose length is in `lengths`.
    func value(_ tag: UAFTag, lengths: ClosedRange<Int>, rule: String) throws(UAFError) -> [UInt8] {
        Array(try slice(tag, lengths: lengths, rule: rule))
    }

    /// ``value(_:lengths:rule:)`` in place, for a field read and not kept (no copy).
    func slice(_ tag: UAFTag, lengths: ClosedRange<Int>, rule: String) throws(UAFError) -> ArraySlice<UInt8> {
        let element = try required(tag, rule: rule)
        guard lengths.contains(element.valueCount) else {
            throw UAFError(.malformedTLV, rule: rule, "tag \(tag) has length \(element.valueCount), expected \(lengths)")
        }
        return element.valueSlice
    }
}

/// A UAF extension carried in an assertion (UAF Protocol §3.2, Authenticator Commands §5.2).
public struct UAFExtension: Sendable, Hashable {
    /// The extension identifier.
    public let id: String
    /// Its data (opaque bytes).
    public let data: [UInt8]
    /// `fail_if_unknown`: TAG_EXTENSION 0x3E11 rather than 0x3E12.
    public let critical: Bool

    init(_ element: UAFTLV) throws(UAFError) {
        let rule = "AuthnrCmds §5.2 extensions"
        let fields = try UAFTLVFields(element, allowed: [.extensionID, .extensionData], allowsExtensions: false, rule: rule)
        let idBytes = try fields.value(.extensionID, lengths: 1...32, rule: rule)
        guard let id = String(validating: idBytes, as: UTF8.self),
            id.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { throw UAFError(.malformedTLV, rule: rule, "extension id is not printable ASCII") }
        self.id = id
        data = try fields.required(.extensionData, rule: rule).value
        critical = element.tag == .extensionCritical
    }

    public init(id: String, data: [UInt8], critical: Bool) {
        self.id = id
        self.data = data
        self.critical = critical
    }

    /// The extension as its TLV.
    public var tlv: UAFTLV {
        UAFTLV(critical ? .extensionCritical : .extensionNonCritical, children: [
            UAFTLV(.extensionID, Array(id.utf8)), UAFTLV(.extensionData, data),
        ])
    }
}

import Crypto

/// The parts of Android Key Attestation's `KeyDescription` (certificate extension
/// 1.3.6.1.4.1.11129.2.1.17) that WebAuthn L3 §8.4 checks.
///
/// ```
/// KeyDescription ::= SEQUENCE {
///     attestationVersion         INTEGER,
///     attestationSecurityLevel   SecurityLevel,       -- ENUMERATED
///     keyMintVersion             INTEGER,             -- keymasterVersion before KeyMint
///     keyMintSecurityLevel       SecurityLevel,
///     attestationChallenge       OCTET STRING,
///     uniqueId                   OCTET STRING,
///     softwareEnforced           AuthorizationList,
///     hardwareEnforced           AuthorizationList }  -- "teeEnforced" in WebAuthn
/// ```
///
/// Every component is read and the structure must end where its DER says; inside an
/// AuthorizationList only `purpose [1]`, `allApplications [600]` and `origin [702]` are
/// interpreted, the other tags are skipped, and a tag that appears twice is refused.
struct AndroidKeyDescription: Sendable, Hashable {
    /// One AuthorizationList (the tags WebAuthn needs).
    struct AuthorizationList: Sendable, Hashable {
        /// `purpose [1] EXPLICIT SET OF INTEGER`; nil when absent.
        var purposes: [Int]?
        /// Whether `allApplications [600] EXPLICIT NULL` is present.
        var allApplications = false
        /// `origin [702] EXPLICIT INTEGER`; nil when absent.
        var origin: Int?
    }

    /// KM_ORIGIN_GENERATED: the key was generated in the keystore.
    static let originGenerated = 0
    /// KM_PURPOSE_SIGN.
    static let purposeSign = 2

    let attestationChallenge: [UInt8]
    let softwareEnforced: AuthorizationList
    let teeEnforced: AuthorizationList

    /// Parses the extension's value (the contents of extnValue).
    ///
    /// - Throws: ``CryptoError`` naming the DER rule broken.
    init(extensionValue: [UInt8]) throws {
        var outer = X509DERReader(extensionValue)
        var description = try outer.readSequence()
        try outer.finish()
        _ = try description.readInt()  // attestationVersion
        _ = try description.readEnumerated()  // attestationSecurityLevel
        _ = try description.readInt()  // keyMintVersion / keymasterVersion
        _ = try description.readEnumerated()  // keyMintSecurityLevel
        attestationChallenge = try description.readOctetString()
        _ = try description.readOctetString()  // uniqueId
        softwareEnforced = try Self.authorizationList(&description)
        teeEnforced = try Self.authorizationList(&description)
        try description.finish()
    }

    private static func authorizationList(_ reader: inout X509DERReader) throws -> AuthorizationList {
        var list = try reader.readSequence()
        var result = AuthorizationList()
        var seen = Set<UInt32>()
        while !list.isAtEnd {
            let element = try list.readElement()
            guard element.tag.tagClass == .contextSpecific, element.tag.isConstructed else {
                throw CryptoError("DER: AuthorizationList entries are [n] EXPLICIT")
            }
            guard seen.insert(element.tag.number).inserted else { throw CryptoError("DER: AuthorizationList tag repeated") }
            var value = try element.reader()
            switch element.tag.number {
            case 1:
                var set = try value.readSet()
                var purposes: [Int] = []
                while !set.isAtEnd { purposes.append(try set.readInt()) }
                result.purposes = purposes
            case 600:
                try value.readNull()
                result.allApplications = true
            case 702:
                result.origin = try value.readInt()
            default:
                continue  // not interpreted; its content is the keystore's business
            }
            try value.finish()
        }
        return result
    }
}

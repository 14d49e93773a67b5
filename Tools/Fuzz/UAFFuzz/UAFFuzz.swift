import FIDO
import FuzzSupport

/// FIDO UAF: the UAFV1TLV parser, both assertion readers and the message decoders, the first
/// byte choosing which (0 TLV sequence, 1 registration assertion, 2 authentication assertion,
/// 3 a `uafResponse` text, 4 an `fcParams` text, 5 FinalChallengeParams JSON).
///
/// Properties: refusals are `UAFError`s (typed throws); a parsed sequence re-encodes to its
/// exact input, every composite element's children to its value, and a rebuilt element equals
/// the parsed one; an accepted assertion's signed bytes (KRD, SignedData) are a slice of the
/// input that parses again, its fields have the lengths the specification fixes; a decoded
/// response has 1–8 assertions; the in-place authentication assertion reading equals the tree
/// reading (or refuses with the same code), and the one-pass FinalChallengeParams reader
/// answers only with what the strict parser's reading gives.
@main
enum UAFFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    static func checkTree(_ element: UAFTLV) {
        if element.encoded.count != element.value.count + 4 { Fuzz.fail("encoded length") }
        if element.tag.isComposite {
            if element.children.flatMap(\.encoded) != element.value { Fuzz.fail("children do not re-encode to the value") }
            if UAFTLV(element.tag, children: element.children) != element { Fuzz.fail("rebuilt composite differs") }
            element.children.forEach(checkTree)
        } else {
            if !element.children.isEmpty { Fuzz.fail("a leaf with children") }
            if UAFTLV(element.tag, element.value) != element { Fuzz.fail("rebuilt leaf differs") }
        }
    }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let all = Fuzz.bytes(data, size)
        guard let mode = all.first else { return 0 }
        let bytes = Array(all.dropFirst())
        switch mode % 6 {
        case 0:
            guard let elements = try? UAFTLV.parseSequence(bytes) else { return 0 }
            if elements.flatMap(\.encoded) != bytes { Fuzz.fail("sequence does not re-encode to its input") }
            elements.forEach(checkTree)
        case 1:
            guard let a = try? UAFRegistrationAssertion(bytes: bytes) else { return 0 }
            if !contains(bytes, a.krd) || (try? UAFTLV.parseOne(a.krd))?.tag != .krd { Fuzz.fail("KRD is not a slice that parses") }
            if a.aaid.utf8.count != 9 || a.keyID.isEmpty || a.publicKey.isEmpty || a.finalChallengeHash.isEmpty { Fuzz.fail("field lengths") }
            if a.info.publicKeyEncoding == nil { Fuzz.fail("registration without a key encoding") }
            if case .basicFull(_, let certificates) = a.attestation, certificates.isEmpty { Fuzz.fail("basic full without a certificate") }
        case 2:
            // The in-place reading (every sign-in's) and the tree reading agree: the same
            // assertion, or a refusal with the same code.
            let fast = Result { () throws(UAFError) in try UAFAuthenticationAssertion(bytes: bytes) }
            let tree = Result { () throws(UAFError) in try UAFAuthenticationAssertion(tree: bytes) }
            switch (fast, tree) {
            case (.success(let x), .success(let y)) where x != y: Fuzz.fail("the in-place and tree readings differ")
            case (.failure(let x), .failure(let y)) where x.code != y.code: Fuzz.fail("the readings refuse with different codes")
            case (.success, .failure), (.failure, .success): Fuzz.fail("one reading accepts what the other refuses")
            default: break
            }
            guard let a = try? UAFAuthenticationAssertion(bytes: bytes) else { return 0 }
            if !contains(bytes, a.signedData) || (try? UAFTLV.parseOne(a.signedData))?.tag != .signedData {
                Fuzz.fail("SignedData is not a slice that parses")
            }
            if a.aaid.utf8.count != 9 || a.authenticatorNonce.count < 8 || a.signature.isEmpty { Fuzz.fail("field lengths") }
        case 3:
            guard let response = try? UAFMessageDecoding.response(String(decoding: bytes, as: UTF8.self)) else { return 0 }
            if !(1...UAFMessageDecoding.maximumAssertions).contains(response.assertions.count) { Fuzz.fail("assertion count") }
            _ = try? UAFMessageDecoding.finalChallengeParams(response.fcParams)
        case 4:
            _ = try? UAFMessageDecoding.finalChallengeParams(String(decoding: bytes, as: UTF8.self))
        default:
            // FinalChallengeParams JSON: the one-pass reader answers only with what the strict
            // parser's reading gives.
            if let fast = UAFMessageDecoding.plainFinalChallengeParams(json: bytes) {
                guard let general = try? UAFMessageDecoding.finalChallengeParams(json: bytes) else {
                    Fuzz.fail("the one-pass reader accepts fcParams JSON the parser refuses")
                }
                if general != fast { Fuzz.fail("the one-pass reader and the parser read fcParams differently") }
            }
        }
        return 0
    }
}

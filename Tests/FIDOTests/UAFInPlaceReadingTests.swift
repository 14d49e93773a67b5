import Crypto
@testable import FIDO
import Foundation
import Testing
import TestSupport

/// The readers on the path of every UAF sign-in agree with the general ones they stand in for:
/// `UAFFinalChallengeParamsReader` with the strict JSON parser's reading of fcParams, and the
/// in-place `UAFAuthenticationAssertion(bytes:)` with the tree reading `init(tree:)`, on valid
/// inputs and on every truncation and byte change of them.
@Suite struct UAFInPlaceReadingTests {
    // MARK: - FinalChallengeParams

    static let usual = #"{"appID":"https://example.test/uaf/facets","challenge":"c-1","facetID":"https://example.test","channelBinding":{}}"#

    /// JSON texts the one-pass reader answers for: the general path gives the same value.
    static let plain: [String] = [
        usual,
        #"{"channelBinding":{"tlsUnique":"tu","serverEndPoint":null,"cid_pubkey":"k","tlsServerCertificate":"c"},"facetID":"f","challenge":"c","appID":"a"}"#,
        " \t\r\n{ \"appID\" : \"a\" , \"challenge\":\"c\",\"facetID\":\"f\",\n\"channelBinding\" : { \"serverEndPoint\" : \"s\" } } \n",
        #"{"appID":"","challenge":"","facetID":"","channelBinding":{"tlsUnique":null}}"#,
        // Raw UTF-8 (no escape) is the parser's fast path too.
        #"{"appID":"https://exämple.test","challenge":"ç","facetID":"android:apk-key-hash:☃","channelBinding":{}}"#,
    ]

    /// JSON texts the reader leaves to the general path (nil), valid or not.
    static let general: [String] = [
        // Escapes, in values and names.
        #"{"appID":"a\/b","challenge":"c","facetID":"f","channelBinding":{}}"#,
        #"{"app\u0049D":"a","challenge":"c","facetID":"f","channelBinding":{}}"#,
        #"{"appID":"a","challenge":"\ud83d\ude00","facetID":"f","channelBinding":{}}"#,
        #"{"appID":"a","challenge":"\ud83d","facetID":"f","channelBinding":{}}"#,
        // Another member, at either level (ignored by the general path).
        #"{"appID":"a","challenge":"c","facetID":"f","channelBinding":{},"x":1}"#,
        #"{"appID":"a","challenge":"c","facetID":"f","channelBinding":{"other":"o"}}"#,
        // Duplicates (refused), missing members and wrong types (refused).
        #"{"appID":"a","appID":"a","challenge":"c","facetID":"f","channelBinding":{}}"#,
        #"{"appID":"a","challenge":"c","facetID":"f","channelBinding":{"tlsUnique":"t","tlsUnique":null}}"#,
        #"{"appID":"a","challenge":"c","channelBinding":{}}"#,
        #"{"appID":1,"challenge":"c","facetID":"f","channelBinding":{}}"#,
        #"{"appID":"a","challenge":"c","facetID":"f","channelBinding":null}"#,
        #"{"appID":"a","challenge":"c","facetID":"f","channelBinding":{"tlsUnique":true}}"#,
        #"{"appID":"a","challenge":"c","facetID":"f","channelBinding":{"tlsUnique":nul}}"#,
        #"{"appID":"a","challenge":"c","facetID":"f","channelBinding":{"tlsUnique":nullx}}"#,
        // Not an object, trailing content, a byte-order mark, a control character, cut short.
        #"["appID"]"#,
        usual + "x",
        usual + "{}",
        "\u{FEFF}" + usual,
        #"{"appID":"a"#,
        "",
    ]

    @Test(arguments: plain)
    func theOnePassReaderAnswersForTheUsualShapeAsTheParserDoes(_ json: String) throws {
        let bytes = Array(json.utf8)
        let fast = try #require(UAFMessageDecoding.plainFinalChallengeParams(json: bytes))
        #expect(fast == (try UAFMessageDecoding.finalChallengeParams(json: bytes)))
        // And through the whole decode, padded or not.
        let encoded = Base64URL.encode(bytes)
        #expect(try UAFMessageDecoding.finalChallengeParams(encoded) == fast)
    }

    @Test(arguments: general)
    func everythingElseGoesToTheGeneralPath(_ json: String) {
        let bytes = Array(json.utf8)
        #expect(UAFMessageDecoding.plainFinalChallengeParams(json: bytes) == nil)
        // The whole decode then answers exactly as the general path.
        let general = Result { () throws(UAFError) in try UAFMessageDecoding.finalChallengeParams(json: bytes) }
        let whole = Result { () throws(UAFError) in try UAFMessageDecoding.finalChallengeParams(Base64URL.encode(bytes)) }
        switch (general, whole) {
        case (.success(let a), .success(let b)): #expect(a == b)
        case (.failure(let a), .failure(let b)): #expect(a.code == b.code)
        default: Issue.record("the decode and the general path disagree on \(json)")
        }
    }

    @Test func theGeneralPathValuesOfTheFallbacks() throws {
        // An escape and another member: accepted, with the value the parser gives.
        let escaped = try UAFMessageDecoding.finalChallengeParams(Base64URL.encode(Array(Self.general[0].utf8)))
        #expect(escaped.appID == "a/b")
        let extra = try UAFMessageDecoding.finalChallengeParams(Base64URL.encode(Array(Self.general[4].utf8)))
        #expect(extra.facetID == "f")
        // A duplicate, a lone surrogate, invalid UTF-8: refused with the fcParams code.
        for bad in [Self.general[6], Self.general[3]] {
            let error = #expect(throws: UAFError.self) { try UAFMessageDecoding.finalChallengeParams(Base64URL.encode(Array(bad.utf8))) }
            #expect(error?.code == .malformedFinalChallengeParams)
        }
        var invalid = Array(Self.usual.utf8)
        invalid[invalid.firstIndex(of: UInt8(ascii: "c"))!] = 0xC3  // a lead byte without its continuation
        #expect(UAFMessageDecoding.plainFinalChallengeParams(json: invalid) == nil)
        let error = #expect(throws: UAFError.self) { try UAFMessageDecoding.finalChallengeParams(Base64URL.encode(invalid)) }
        #expect(error?.code == .malformedFinalChallengeParams)
    }

    @Test func everyTruncationAndByteChangeOfTheUsualShapeAgrees() {
        let base = Array(Self.usual.utf8)
        var inputs = (0..<base.count).map { Array(base[..<$0]) }
        for i in base.indices {
            for b: UInt8 in [0x00, 0x22, 0x5C, 0x7B, 0x7D, 0x2C, 0x3A, 0x20, 0x80, 0xFF, 0x61] where base[i] != b {
                var changed = base
                changed[i] = b
                inputs.append(changed)
            }
        }
        var answered = 0
        for input in inputs {
            guard let fast = UAFMessageDecoding.plainFinalChallengeParams(json: input) else { continue }
            answered += 1
            #expect((try? UAFMessageDecoding.finalChallengeParams(json: input)) == fast, "\(input)")
        }
        #expect(answered > 0)
    }

    // MARK: - The authentication assertion

    static func assertions() throws -> [[UInt8]] {
        let authenticator = SoftUAFAuthenticator(facetID: "https://example.test")
        _ = try authenticator.registrationAssertion(fcParams: "r")
        var list = [
            try authenticator.authenticationAssertion(fcParams: "fc"),
            try authenticator.authenticationAssertion(fcParams: "fc", transactionContent: Array("Pay 10 EUR".utf8)),
        ]
        // With extensions, critical and not, inside SignedData and beside it.
        let ext = UAFExtension(id: "ext-1", data: [1, 2, 3], critical: false).tlv
        let critical = UAFExtension(id: "ext-2", data: [], critical: true).tlv
        let top = try UAFTLV.parseOne(list[0])
        let signed = top.children[0]
        list.append(UAFTLV(.authAssertion, children: [UAFTLV(.signedData, children: signed.children + [ext]), top.children[1], critical]).encoded)
        for entry in VectorFiles.entries("uaf_messages.json") where entry["kind"] as? String == "uaf_auth_assertion" {
            if let bytes = (entry["assertion_b64url"] as? String).flatMap(Lenient.bytes) { list.append(bytes) }
        }
        return list
    }

    /// Both readings of `bytes`: equal assertions, or the same code.
    static func agree(_ bytes: [UInt8]) -> Bool {
        let fast = Result { () throws(UAFError) in try UAFAuthenticationAssertion(bytes: bytes) }
        let tree = Result { () throws(UAFError) in try UAFAuthenticationAssertion(tree: bytes) }
        switch (fast, tree) {
        case (.success(let a), .success(let b)): return a == b
        case (.failure(let a), .failure(let b)): return a.code == b.code
        default: return false
        }
    }

    @Test func theInPlaceReadingEqualsTheTreeReading() throws {
        let list = try Self.assertions()
        #expect(list.count >= 3)
        // The soft authenticator's three are accepted; the vector files' too, but for eBay's
        // 8-byte TAG_COUNTERS, which both readings refuse with uaf_malformed_tlv (UAFVectorTests).
        for bytes in list.prefix(3) {
            let fast = try UAFAuthenticationAssertion(bytes: bytes)
            #expect(fast == (try UAFAuthenticationAssertion(tree: bytes)))
            #expect(ByteSlices.contains(fast.signedData, of: bytes))
        }
        for bytes in list.dropFirst(3) { #expect(Self.agree(bytes)) }
        let withExtensions = try UAFAuthenticationAssertion(bytes: list[2])
        #expect(withExtensions.extensions.map(\.id) == ["ext-1", "ext-2"])
        #expect(withExtensions.extensions.map(\.critical) == [false, true])
    }

    @Test func everyTruncationAndByteChangeIsReadAlikeOrRefusedWithTheSameCode() throws {
        var checked = 0
        for bytes in try Self.assertions().prefix(3) {
            for n in 0..<bytes.count where !Self.agree(Array(bytes[..<n])) { Issue.record("truncation to \(n) bytes") }
            for i in bytes.indices {
                for change: UInt8 in [0x01, 0x10, 0x80, 0xFF] {
                    var changed = bytes
                    changed[i] ^= change
                    if !Self.agree(changed) { Issue.record("byte \(i) ^ \(change)") }
                    checked += 1
                }
            }
            if !Self.agree(bytes + [0]) { Issue.record("a trailing byte") }
        }
        #expect(checked > 1000)
    }

    @Test func structuralRefusalsKeepTheirCodes() throws {
        let good = try Self.assertions()[0]
        func code(_ bytes: [UInt8]) -> UAFError.Code? {
            do throws(UAFError) { _ = try UAFAuthenticationAssertion(bytes: bytes) } catch { return error.code }
            return nil
        }
        #expect(code(good) == nil)
        #expect(code(good + good) == .malformedTLV, "two top-level elements")
        #expect(code(Array(good.dropLast())) == .malformedTLV)
        var regTag = good
        regTag[0] = 0x01  // 0x3E01, a registration assertion
        #expect(code(regTag) == .unknownTag)
        let top = try UAFTLV.parseOne(good)
        let signed = top.children[0]
        let signature = top.children[1]
        #expect(code(UAFTLV(.authAssertion, children: [signed, signature, signature]).encoded) == .duplicateTag)
        #expect(code(UAFTLV(.authAssertion, children: [signature]).encoded) == .missingTag)
        #expect(code(UAFTLV(.authAssertion, children: [signed, signature, UAFTLV(.keyID, [1])]).encoded) == .unknownTag)
        let withoutNonce = UAFTLV(.signedData, children: signed.children.filter { $0.tag != .authenticatorNonce })
        #expect(code(UAFTLV(.authAssertion, children: [withoutNonce, signature]).encoded) == .missingTag)
        let shortInfo = UAFTLV(.signedData, children: signed.children.map { $0.tag == .assertionInfo ? UAFTLV(.assertionInfo, [1, 0, 1, 1]) : $0 })
        #expect(code(UAFTLV(.authAssertion, children: [shortInfo, signature]).encoded) == .malformedTLV)
        // An extension that does not parse (no id) is refused as the tree reading refuses it.
        let broken = UAFTLV(.extensionNonCritical, children: [UAFTLV(.extensionData, [])])
        let brokenCode = code(UAFTLV(.authAssertion, children: [signed, signature, broken]).encoded)
        #expect(brokenCode == .missingTag)
    }
}

/// Whether one byte string occurs in another.
enum ByteSlices {
    static func contains(_ needle: [UInt8], of haystack: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}

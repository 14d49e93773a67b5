import Crypto
@testable import FIDO
import Testing

@Suite struct UAFTLVTests {
    private func header(_ tag: UInt16, _ length: Int) -> [UInt8] {
        [UInt8(tag & 0xFF), UInt8(tag >> 8), UInt8(length & 0xFF), UInt8(length >> 8)]
    }

    @Test func encodesLittleEndianAndParsesBack() throws {
        let tlv = UAFTLV(.krd, children: [UAFTLV(.aaid, Array("ABCD#0001".utf8)), UAFTLV(.keyID, [1, 2, 3])])
        #expect(tlv.encoded.prefix(4) == [0x03, 0x3E, UInt8(tlv.value.count), 0x00])
        let parsed = try UAFTLV.parseOne(tlv.encoded)
        #expect(parsed == tlv)
        #expect(parsed.children.map(\.tag) == [.aaid, .keyID])
        #expect(UAFTag.regAssertion.isComposite && !UAFTag.signature.isComposite)
    }

    @Test func refusesATruncatedHeader() {
        #expect(throws: UAFError.self) { try UAFTLV.parseSequence([0x06, 0x2E, 0x01]) }
        let error = #expect(throws: UAFError.self) { try UAFTLV.parseSequence([0x06, 0x2E, 0x01]) }
        #expect(error?.code == .malformedTLV)
    }

    @Test func refusesALengthPastItsContainer() {
        let error = #expect(throws: UAFError.self) { try UAFTLV.parseSequence(header(0x2E06, 5) + [1, 2, 3, 4]) }
        #expect(error?.code == .malformedTLV)
        // The inner length runs past the outer value even though the buffer has the bytes.
        let inner = header(0x2E06, 4) + [1, 2, 3, 4]
        let outer = header(0x3E04, 6) + inner
        let nested = #expect(throws: UAFError.self) { try UAFTLV.parseSequence(outer) }
        #expect(nested?.code == .malformedTLV)
    }

    @Test func refusesTrailingBytesAfterTheAssertion() {
        let one = UAFTLV(.signature, [1]).encoded
        let error = #expect(throws: UAFError.self) { try UAFTLV.parseOne(one + one) }
        #expect(error?.code == .malformedTLV)
    }

    @Test func boundsNesting() {
        var element = UAFTLV(.signature, [1])
        for _ in 0..<UAFTLV.maximumDepth { element = UAFTLV(.signedData, children: [element]) }
        let error = #expect(throws: UAFError.self) { try UAFTLV.parseOne(element.encoded) }
        #expect(error?.code == .malformedTLV)
    }

    // MARK: - Structures

    private func authAssertion(signed: [UAFTLV], outer: [UAFTLV] = []) -> [UInt8] {
        UAFTLV(.authAssertion, children: [UAFTLV(.signedData, children: signed), UAFTLV(.signature, [1, 2])] + outer).encoded
    }

    private var signedFields: [UAFTLV] {
        [
            UAFTLV(.aaid, Array("abcd#00ff".utf8)), UAFTLV(.assertionInfo, [1, 0, 1, 1, 0]),
            UAFTLV(.authenticatorNonce, [UInt8](repeating: 7, count: 8)), UAFTLV(.finalChallengeHash, [UInt8](repeating: 1, count: 32)),
            UAFTLV(.transactionContentHash, []), UAFTLV(.keyID, [9, 9]), UAFTLV(.counters, [5, 0, 0, 0]),
        ]
    }

    @Test func readsAnAuthenticationAssertion() throws {
        let assertion = try UAFAuthenticationAssertion(bytes: authAssertion(signed: signedFields))
        #expect(assertion.aaid == "ABCD#00FF")
        #expect(assertion.signCounter == 5)
        #expect(assertion.info.signatureAlgorithm == .secp256r1ECDSASHA256Raw)
        #expect(assertion.info.authenticationMode == 1)
        #expect(assertion.keyID == [9, 9])
    }

    @Test func refusesAnUnknownTagInSignedData() {
        let error = #expect(throws: UAFError.self) {
            try UAFAuthenticationAssertion(bytes: authAssertion(signed: signedFields + [UAFTLV(UAFTag(rawValue: 0x2EEE), [0])]))
        }
        #expect(error?.code == .unknownTag)
    }

    @Test func refusesADuplicateTag() {
        let error = #expect(throws: UAFError.self) {
            try UAFAuthenticationAssertion(bytes: authAssertion(signed: signedFields + [UAFTLV(.keyID, [1])]))
        }
        #expect(error?.code == .duplicateTag)
    }

    @Test func refusesAMissingTag() {
        let error = #expect(throws: UAFError.self) {
            try UAFAuthenticationAssertion(bytes: authAssertion(signed: signedFields.filter { $0.tag != .counters }))
        }
        #expect(error?.code == .missingTag)
    }

    @Test func refusesAWrongFixedLength() {
        let fields = signedFields.map { $0.tag == .counters ? UAFTLV(.counters, [1, 0, 0, 0, 0]) : $0 }
        let error = #expect(throws: UAFError.self) { try UAFAuthenticationAssertion(bytes: authAssertion(signed: fields)) }
        #expect(error?.code == .malformedTLV)
    }

    @Test func refusesAMalformedAAID() {
        let fields = signedFields.map { $0.tag == .aaid ? UAFTLV(.aaid, Array("ABCDX0001".utf8)) : $0 }
        let error = #expect(throws: UAFError.self) { try UAFAuthenticationAssertion(bytes: authAssertion(signed: fields)) }
        #expect(error?.code == .malformedTLV)
    }

    @Test func readsExtensionsAndTheirCriticality() throws {
        let critical = UAFExtension(id: "ext-a", data: [1], critical: true)
        let optional = UAFExtension(id: "ext-b", data: [], critical: false)
        let assertion = try UAFAuthenticationAssertion(bytes: authAssertion(signed: signedFields + [critical.tlv], outer: [optional.tlv]))
        #expect(assertion.extensions == [critical, optional])
    }

    @Test func refusesECDAAAttestation() {
        let bytes = UAFTLV(.regAssertion, children: [UAFTLV(.krd, children: []), UAFTLV(.attestationECDAA, children: [])]).encoded
        let error = #expect(throws: UAFError.self) { try UAFRegistrationAssertion(bytes: bytes) }
        #expect(error?.code == .unsupportedAttestation)
    }

    @Test func decodesRSADEROctetStringSignatures() {
        #expect(UAFSignatureAlgorithm.octetStringContents([0x04, 0x02, 0xAA, 0xBB]) == [0xAA, 0xBB])
        #expect(UAFSignatureAlgorithm.octetStringContents([0x03, 0x02, 0xAA, 0xBB]) == nil)
        #expect(UAFSignatureAlgorithm.octetStringContents([0x04, 0x03, 0xAA, 0xBB]) == nil)
        #expect(UAFSignatureAlgorithm.octetStringContents([0x04, 0x81, 0x02, 0xAA, 0xBB]) == nil)  // not minimal
    }
}

import Testing
@testable import Crypto

@Suite struct X509DERReaderTests {
    typealias Tag = X509DERReader.Tag

    @Test func walksNestedStructures() throws {
        // SEQUENCE { INTEGER 3, BOOLEAN TRUE, OCTET STRING 'ab', [1] EXPLICIT SET OF INTEGER { 2, 3 },
        //            NULL, OID 1.2.840.10045.4.3.2, ENUMERATED 1, [701] EXPLICIT INTEGER 0 }
        let der = DER.sequence(
            [0x02, 0x01, 0x03], [0x01, 0x01, 0xFF], DER.tlv(0x04, [0x61, 0x62]),
            DER.tlv(0xA1, DER.tlv(0x31, [0x02, 0x01, 0x02, 0x02, 0x01, 0x03])),
            DER.null, DER.oid("1.2.840.10045.4.3.2"), [0x0A, 0x01, 0x01],
            [0xBF, 0x85, 0x3D, 0x03, 0x02, 0x01, 0x00])
        try X509DERReader.validate(der)
        var outer = X509DERReader(der)
        var sequence = try outer.readSequence()
        try outer.finish()
        #expect(try sequence.readInt() == 3)
        #expect(try sequence.readBoolean())
        #expect(try sequence.readOctetString() == [0x61, 0x62])
        #expect(try sequence.readOptionalExplicit(0) == nil)
        var tagged = try #require(try sequence.readOptionalExplicit(1))
        var set = try tagged.readSet()
        try tagged.finish()
        #expect(try set.readInt() == 2)
        #expect(try set.readInt() == 3)
        #expect(set.isAtEnd)
        try sequence.readNull()
        #expect(try sequence.readObjectIdentifier() == "1.2.840.10045.4.3.2")
        #expect(try sequence.readEnumerated() == 1)
        // Android's high tag numbers: [701] is BF 85 3D.
        #expect(try sequence.peekTag() == .contextSpecific(701))
        var creation = try sequence.readExplicit(701)
        #expect(try creation.readInt() == 0)
        try creation.finish()
        try sequence.finish()
        #expect(try sequence.peekTag() == nil)
        #expect(try sequence.readOptionalElement(.integer) == nil)
    }

    @Test func elementsExposeTheirEncoding() throws {
        let der: [UInt8] = [0x30, 0x06, 0x02, 0x01, 0x05, 0x04, 0x01, 0xAA]
        var reader = X509DERReader(der)
        let element = try reader.readElement()
        #expect(element.tag == .sequence)
        #expect(Array(element.encoded) == der)
        #expect(element.contentBytes == Array(der[2...]))
        var inner = try element.reader()
        let all = try inner.readAllElements()
        #expect(all.map(\.tag) == [.integer, .octetString])
        #expect(throws: CryptoError("DER: UNIVERSAL 2 (primitive) is not constructed")) { try all[0].reader() }
    }

    @Test(arguments: [
        ("1.2.840.113549.1.1.11", [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0B] as [UInt8]),
        ("2.999.3", [0x88, 0x37, 0x03]),
        ("0.9.2342.19200300.100.1.25", [0x09, 0x92, 0x26, 0x89, 0x93, 0xF2, 0x2C, 0x64, 0x01, 0x19]),
        ("1.3.6.1.4.1.11129.2.1.17", [0x2B, 0x06, 0x01, 0x04, 0x01, 0xD6, 0x79, 0x02, 0x01, 0x11]),
    ])
    func objectIdentifiers(_ dotted: String, _ content: [UInt8]) throws {
        #expect(try X509DERReader.dottedOID(fromContent: content) == dotted)
        // DER.tlv rather than DER.oid: the writer handles first subidentifiers up to 255 only.
        var reader = X509DERReader(DER.tlv(0x06, content))
        #expect(try reader.readObjectIdentifier() == dotted)
    }

    @Test func integers() throws {
        func int(_ bytes: [UInt8]) throws -> Int {
            var r = X509DERReader(DER.tlv(0x02, bytes))
            return try r.readInt()
        }
        #expect(try int([0x00]) == 0)
        #expect(try int([0x7F]) == 127)
        #expect(try int([0x00, 0x80]) == 128)
        #expect(try int([0xFF]) == -1)
        #expect(try int([0x80]) == -128)
        #expect(try int([0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) == Int.max)
        #expect(throws: CryptoError("DER: INTEGER out of range")) { try int([0x01, 0, 0, 0, 0, 0, 0, 0, 0]) }
        #expect(throws: CryptoError("DER: INTEGER not minimally encoded")) { try int([0x00, 0x01]) }
        #expect(throws: CryptoError("DER: INTEGER not minimally encoded")) { try int([0xFF, 0x80]) }
        #expect(throws: CryptoError("DER: empty INTEGER")) { try int([]) }
        var unsigned = X509DERReader(DER.unsignedInteger([0xE8, 0xFA]))
        #expect(try unsigned.readUnsignedInteger() == [0xE8, 0xFA])
        var negative = X509DERReader([0x02, 0x01, 0x80])
        #expect(throws: CryptoError("DER: INTEGER is negative")) { try negative.readUnsignedInteger() }
        // IMPLICIT tagging: [3] IMPLICIT INTEGER.
        var implicit = X509DERReader([0x83, 0x01, 0x05])
        #expect(try implicit.readInt(tag: .contextSpecific(3, constructed: false)) == 5)
    }

    @Test func primitivesFollowDER() throws {
        func read<T>(_ bytes: [UInt8], _ body: (inout X509DERReader) throws -> T) throws -> T {
            var r = X509DERReader(bytes)
            return try body(&r)
        }
        #expect(try read([0x01, 0x01, 0x00]) { try $0.readBoolean() } == false)
        #expect(throws: CryptoError("DER: BOOLEAN must be one octet, 0x00 or 0xFF")) { try read([0x01, 0x01, 0x01]) { try $0.readBoolean() } }
        #expect(throws: CryptoError("DER: NULL with content")) { try read([0x05, 0x01, 0x00]) { try $0.readNull() } }
        let bits = try read([0x03, 0x02, 0x07, 0x80]) { try $0.readBitString() }
        #expect(bits.bytes == [0x80] && bits.unusedBits == 7)
        #expect(throws: CryptoError("DER: BIT STRING padding bits are not zero")) { try read([0x03, 0x02, 0x07, 0x81]) { try $0.readBitString() } }
        #expect(throws: CryptoError("DER: malformed BIT STRING")) { try read([0x03, 0x01, 0x01]) { try $0.readBitString() } }
        #expect(throws: CryptoError("DER: malformed BIT STRING")) { try read([0x03, 0x02, 0x08, 0x00]) { try $0.readBitString() } }
        #expect(try read([0x0C, 0x02, 0xC3, 0xA9]) { try $0.readString() } == "é")
        #expect(throws: CryptoError("DER: string is not valid UTF-8")) { try read([0x0C, 0x01, 0xFF]) { try $0.readString() } }
        #expect(throws: CryptoError("DER: expected a string, found UNIVERSAL 4 (primitive)")) { try read([0x04, 0x00]) { try $0.readString() } }
        #expect(throws: CryptoError("DER: expected UNIVERSAL 16 (constructed), found UNIVERSAL 17 (constructed)")) {
            try read([0x31, 0x00]) { try $0.readSequence() }
        }
        // A failed typed read consumes nothing.
        var reader = X509DERReader([0x02, 0x01, 0x01])
        #expect(throws: CryptoError.self) { try reader.readOctetString() }
        #expect(try reader.readInt() == 1)
    }

    @Test(arguments: [
        ([0x30] as [UInt8], "DER: unexpected end of data"),
        ([0x30, 0x80, 0x00, 0x00], "DER: indefinite length is not DER"),
        ([0x04, 0x81, 0x05, 1, 2, 3, 4, 5], "DER: length not minimally encoded"),
        ([0x04, 0x82, 0x00, 0x80] + [UInt8](repeating: 0, count: 128), "DER: length not minimally encoded"),
        ([0x04, 0x85, 1, 0, 0, 0, 0], "DER: length field too long"),
        ([0x04, 0x84, 0x7F, 0xFF, 0xFF, 0xFF], "DER: length exceeds the available data"),
        ([0x04, 0x05, 1, 2], "DER: length exceeds the available data"),
        ([0x1F, 0x80, 0x01, 0x00], "DER: tag number not minimally encoded"),
        ([0x1F, 0x05, 0x00], "DER: tag number not minimally encoded"),
        ([0x1F, 0x81, 0x81, 0x81, 0x81, 0x01, 0x00], "DER: tag number too large"),
        ([0x02, 0x01, 0x01, 0x00], "DER: 1 unexpected trailing bytes"),
        ([0x06, 0x02, 0x2A, 0x86], "DER: truncated OBJECT IDENTIFIER"),
        ([0x06, 0x02, 0x80, 0x01], "DER: OBJECT IDENTIFIER arc not minimally encoded"),
        ([0x06, 0x00], "DER: malformed OBJECT IDENTIFIER"),
        ([0x24, 0x03, 0x04, 0x01, 0x00], "DER: UNIVERSAL 4 (constructed) has the wrong form"),
        ([0x10, 0x00], "DER: UNIVERSAL 16 (primitive) has the wrong form"),
    ])
    func malformedInputIsRefusedWithItsReason(_ bytes: [UInt8], _ reason: String) {
        #expect(throws: CryptoError(reason)) { try X509DERReader.validate(bytes) }
    }

    @Test func oversizedOIDArcsAreRefused() {
        let content: [UInt8] = [0x2A] + [UInt8](repeating: 0xFF, count: 10) + [0x7F]
        #expect(throws: CryptoError("DER: OBJECT IDENTIFIER arc too large")) { try X509DERReader.dottedOID(fromContent: content) }
        #expect(throws: CryptoError("DER: malformed OBJECT IDENTIFIER")) {
            try X509DERReader.dottedOID(fromContent: [UInt8](repeating: 0x01, count: 129))
        }
    }

    @Test func nestingIsBounded() throws {
        var der: [UInt8] = DER.null
        for _ in 0..<32 { der = DER.tlv(0x30, der) }
        try X509DERReader.validate(der)
        #expect(throws: CryptoError("DER: nesting deeper than 32")) { try X509DERReader.validate(DER.tlv(0x30, der)) }
        #expect(throws: CryptoError("DER: nesting deeper than 4")) { try X509DERReader.validate(der, maximumDepth: 4) }
    }

    @Test func tagDescriptions() {
        #expect(Tag.sequence.description == "UNIVERSAL 16 (constructed)")
        #expect(Tag.contextSpecific(704).description == "[704] (constructed)")
        #expect(Tag(.application, number: 1, constructed: false).description == "[APPLICATION 1] (primitive)")
        #expect(Tag(.private, number: 2, constructed: true).description == "[PRIVATE 2] (constructed)")
    }
}

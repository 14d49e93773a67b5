import Crypto
import FIDO
import Foundation
import Testing
import TestRandom

@Suite struct CBORDecoderTests {
    let decoder = CBORDecoder()

    func decode(_ hex: String, _ decoder: CBORDecoder = CBORDecoder()) throws -> CBORValue {
        try decoder.decode(try #require(Hex.decode(hex)))
    }

    func failure(_ hex: String, _ decoder: CBORDecoder = CBORDecoder()) -> CBORError.Code? {
        guard let bytes = Hex.decode(hex) else { return nil }
        do {
            _ = try decoder.decode(bytes)
            return nil
        } catch {
            return error.code
        }
    }

    // MARK: - RFC 8949 Appendix A

    @Test(arguments: [
        ("00", CBORValue.unsigned(0)), ("17", .unsigned(23)), ("1818", .unsigned(24)), ("1903e8", .unsigned(1000)),
        ("1a000f4240", .unsigned(1_000_000)), ("1bffffffffffffffff", .unsigned(.max)),
        ("20", .negative(0)), ("3863", .negative(99)), ("3bffffffffffffffff", .negative(.max)),
        ("40", .bytes([])), ("4401020304", .bytes([1, 2, 3, 4])),
        ("60", .text("")), ("6161", .text("a")), ("62c3bc", .text("ü")), ("64f0908591", .text("𐅑")),
        ("80", .array([])), ("83010203", .array([.unsigned(1), .unsigned(2), .unsigned(3)])),
        ("8301820203820405", .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])),
        ("a0", .map([])),
        ("a201020304", .map([(key: .unsigned(1), value: .unsigned(2)), (key: .unsigned(3), value: .unsigned(4))])),
        ("a26161016162820203", .map([(key: .text("a"), value: .unsigned(1)), (key: .text("b"), value: .array([.unsigned(2), .unsigned(3)]))])),
        ("c11a514b67b0", .tagged(1, .unsigned(1_363_896_240))),
        ("d82076687474703a2f2f7777772e6578616d706c652e636f6d", .tagged(32, .text("http://www.example.com"))),
        ("f4", .bool(false)), ("f5", .bool(true)), ("f6", .null), ("f7", .undefined), ("f0", .simple(16)), ("f8ff", .simple(255)),
        ("f93c00", .float(1.0)), ("f97bff", .float(65504.0)), ("f90001", .float(5.960464477539063e-8)), ("f9c400", .float(-4.0)),
        ("fa47c35000", .float(100_000.0)), ("fb3ff199999999999a", .float(1.1)), ("f97c00", .float(.infinity)), ("f9fc00", .float(-.infinity)),
    ] as [(String, CBORValue)])
    func appendixA(_ c: (hex: String, value: CBORValue)) throws {
        #expect(try decode(c.hex) == c.value)
    }

    @Test func nanAndNegativeZero() throws {
        guard case .float(let nan) = try decode("f97e00") else { Issue.record("not a float"); return }
        #expect(nan.isNaN)
        guard case .float(let zero) = try decode("f98000") else { Issue.record("not a float"); return }
        #expect(zero == 0 && zero.sign == .minus)
    }

    @Test func accessors() throws {
        let v = try decode("a3010203382220f5")  // {1: 2, 3: -35, -1: true}
        #expect(v[intKey: 1]?.intValue == 2)
        #expect(v[intKey: 3]?.intValue == -35)
        #expect(v[intKey: -1] == .bool(true))
        #expect(v[intKey: 7] == nil)
        #expect(CBORValue.negative(.max).intValue == nil)
        #expect(CBORValue.unsigned(.max).intValue == nil)
        #expect(CBORValue.int(-1) == .negative(0))
    }

    // MARK: - Strictness

    /// Non-minimal heads are refused by default (CTAP2 canonical CBOR is minimal; two encodings
    /// of one key would defeat the duplicate-key check). `requiresMinimalEncoding: false` accepts
    /// them for data from elsewhere.
    @Test(arguments: ["1800", "1817", "190017", "1900ff", "1a0000ffff", "1b00000000ffffffff", "3800", "5801ff", "780161", "9800", "b800", "d80001", "d9000100"])
    func nonMinimalEncoding(_ hex: String) throws {
        #expect(failure(hex) == .nonMinimalEncoding)
        _ = try decode(hex, CBORDecoder(requiresMinimalEncoding: false))
    }

    @Test func duplicateMapKeys() throws {
        #expect(failure("a201020103") == .duplicateMapKey)  // {1: 2, 1: 3}
        #expect(failure("a2616101616102") == .duplicateMapKey)  // {"a": 1, "a": 2}
        #expect(failure("a2820102f5820102f4") == .duplicateMapKey)  // {[1, 2]: true, [1, 2]: false}
        #expect(failure("a1a201020103f5") == .duplicateMapKey)  // nested
        // The same NaN twice (CBORFuzz): IEEE equality (NaN != NaN) let it past the key set.
        #expect(failure("a2f97e0001f97e0002") == .duplicateMapKey)  // {NaN: 1, NaN: 2}
        #expect(failure("a2f97e0001fb7ff800000000000002") == .duplicateMapKey)  // half and double NaN
        #expect(try decode("f97e00") == decode("f97e00"))  // equality is reflexive
        // Equal values of different types are different keys.
        #expect(try decode("a301012001410101").mapValue?.count == 3)  // {1: 1, -1: 1, h'01': 1}
        // Non-minimal encodings of the same key are refused before they could be told apart.
        #expect(failure("a20102180103") == .nonMinimalEncoding)
    }

    @Test func depth() throws {
        let limit = CBORDecoder.Limits.default.maxDepth
        let ok = String(repeating: "81", count: limit - 1) + "00"
        #expect(try decode(ok).arrayValue != nil)
        #expect(failure(String(repeating: "81", count: limit) + "00") == .depthExceeded)
        #expect(failure(String(repeating: "a101", count: limit) + "00") == .depthExceeded)
        #expect(failure(String(repeating: "c1", count: limit) + "00") == .depthExceeded)  // tags nest too
        // Thousands of levels fail fast, without exhausting the stack.
        #expect(failure(String(repeating: "81", count: 100_000) + "00") == .depthExceeded)
    }

    @Test func truncation() throws {
        let full = try #require(Hex.decode("a3626b31820102626b3244deadbeef626b33a1617864c3bc6d69"))
        _ = try decoder.decode(full)
        for n in 0..<full.count {
            #expect(throws: CBORError.self) { try decoder.decode(Array(full.prefix(n))) }
        }
        #expect(failure("") == .truncated)
        #expect(failure("18") == .truncated)
        #expect(failure("1b00000000000000") == .truncated)
        #expect(failure("62c3") == .truncated)
        #expect(failure("8301") == .truncated)
    }

    @Test func lengthsOverLimits() throws {
        #expect(failure("5bffffffffffffffff") == .lengthExceeded)  // 2^64-1 byte string
        #expect(failure("5a00010001") == .lengthExceeded)  // 65537 bytes > maxStringLength
        #expect(failure("59ffff") == .truncated)  // within limits, beyond the input
        #expect(failure("9bffffffffffffffff") == .lengthExceeded)
        #expect(failure("9a7fffffff") == .lengthExceeded)
        #expect(failure("9903e8") == .truncated)  // 1000 elements announced, none there
        #expect(failure("b903e8") == .truncated)
        // Collection count limit.
        let tight = CBORDecoder(limits: .init(maxCollectionCount: 2))
        #expect(failure("83010203", tight) == .lengthExceeded)
        #expect(failure("a3010203040506", tight) == .lengthExceeded)
        // Item count limit.
        let few = CBORDecoder(limits: .init(maxItems: 3))
        #expect(failure("83010203", few) == .tooManyItems)
        #expect(failure("820102", few) == nil)
        // Input length limit.
        let small = CBORDecoder(limits: .init(maxInputLength: 4))
        #expect(failure("4401020304", small) == .inputTooLarge)
        // String limit.
        let shortStrings = CBORDecoder(limits: .init(maxStringLength: 3))
        #expect(failure("4401020304", shortStrings) == .lengthExceeded)
        #expect(failure("6461626364", shortStrings) == .lengthExceeded)
    }

    @Test func indefiniteLength() throws {
        let cases = [
            "5f42010243030405ff", "7f657374726561646d696e67ff", "9f018202039f0405ffff", "bf61610161629f0203ffff", "5fff",
        ]
        let lenient = CBORDecoder(allowsIndefiniteLength: true)
        for hex in cases {
            #expect(failure(hex) == .indefiniteLengthNotAllowed)
        }
        #expect(try decode(cases[0], lenient) == .bytes([1, 2, 3, 4, 5]))
        #expect(try decode(cases[1], lenient) == .text("streaming"))
        #expect(try decode(cases[2], lenient) == .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])]))
        #expect(try decode(cases[3], lenient) == .map([(key: .text("a"), value: .unsigned(1)), (key: .text("b"), value: .array([.unsigned(2), .unsigned(3)]))]))
        #expect(try decode(cases[4], lenient) == .bytes([]))
        #expect(failure("5f6161ff", lenient) == .invalidIndefiniteChunk)  // text chunk in a byte string
        #expect(failure("5f5f4101ffff", lenient) == .invalidIndefiniteChunk)  // nested indefinite chunk
        #expect(failure("7f61c361bcff", lenient) == .invalidUTF8)  // a character split across chunks
        #expect(failure("9f01", lenient) == .truncated)
        #expect(failure("bf01ff", lenient) == .unexpectedBreak)  // a key whose value is "break"
        #expect(failure("bfa0", lenient) == .truncated)
        #expect(failure("bf0101 0102ff".replacingOccurrences(of: " ", with: ""), lenient) == .duplicateMapKey)
    }

    @Test func malformed() {
        #expect(failure("62c328") == .invalidUTF8)
        #expect(failure("63eda080") == .invalidUTF8)  // a UTF-16 surrogate in UTF-8
        #expect(failure("1c") == .reservedAdditionalInfo)
        #expect(failure("5d") == .reservedAdditionalInfo)
        #expect(failure("fc") == .reservedAdditionalInfo)
        #expect(failure("1f") == .reservedAdditionalInfo)  // no indefinite unsigned
        #expect(failure("3f") == .reservedAdditionalInfo)
        #expect(failure("df00") == .reservedAdditionalInfo)
        #expect(failure("f818") == .invalidSimpleValue)
        #expect(failure("f800") == .invalidSimpleValue)
        #expect(failure("ff") == .unexpectedBreak)
        #expect(failure("8201ff") == .unexpectedBreak)
        #expect(failure("0000") == .trailingBytes)
    }

    @Test func prefixDecoding() throws {
        let bytes: [UInt8] = [0xFF, 0xA1, 0x01, 0x02, 0xA0, 0x07]
        let (value, consumed) = try decoder.decodePrefix(bytes, from: 1)
        #expect(value == .map([(key: .unsigned(1), value: .unsigned(2))]))
        #expect(consumed == 3)
        let (next, n) = try decoder.decodePrefix(bytes, from: 4)
        #expect(next == .map([]) && n == 1)
        #expect(throws: CBORError.self) { try decoder.decodePrefix(bytes, from: 6) }
        #expect(throws: CBORError.self) { try decoder.decodePrefix(bytes, from: 7) }
        #expect(throws: CBORError.self) { try decoder.decodePrefix(bytes, from: -1) }
        let error = #expect(throws: CBORError.self) { try decoder.decode(Array(bytes[1...])) }
        #expect(error == CBORError(.trailingBytes, at: 3))
    }

    @Test func encodingRoundTrips() throws {
        let value = CBORValue.map([
            (key: .int(1), value: .int(-300)), (key: .text("b"), value: .bytes(Array(repeating: 9, count: 300))),
            (key: .int(-70000), value: .array([.bool(true), .null, .undefined, .simple(32), .tagged(24, .bytes([0xA0]))])),
            (key: .unsigned(.max), value: .negative(.max)), (key: .text(String(repeating: "é", count: 40)), value: .float(1.5)),
        ])
        #expect(try decoder.decode(value.encoded) == value)
    }

    @Test func errorsAreStable() {
        #expect(CBORError.Code.duplicateMapKey.rawValue == "cbor_duplicate_map_key")
        #expect(CBORError(.truncated, at: 5).description == "CBORError(cbor_truncated at byte 5)")
    }
}

// MARK: - Fuzzing

@Suite struct CBORFuzzTests {
    static let decoders = [
        CBORDecoder(), CBORDecoder(allowsIndefiniteLength: true, requiresMinimalEncoding: false),
        CBORDecoder(limits: .init(maxDepth: 4, maxItems: 64, maxStringLength: 32, maxCollectionCount: 8)),
    ]

    /// Real inputs to mutate: attestation objects, COSE keys and authenticator data from the
    /// shared vectors when present, and generated ones always.
    static func corpus() throws -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for e in VectorFiles.entries("webauthn_registration.json") {
            if let s = ((e["response"] as? [String: Any])?["response"] as? [String: Any])?["attestationObject"] as? String,
                let b = Lenient.bytes(s), !b.isEmpty
            {
                seeds.append(b)
            }
        }
        for e in VectorFiles.entries("cose_keys.json", key: "webauthn_credential_public_keys") {
            if let s = e["cose_key_b64url"] as? String, let b = Base64URL.decode(s) { seeds.append(b) }
        }
        let authenticator = try TestAuthenticator()
        let authData = authenticator.authenticatorData(
            signCount: 3, attested: true, extensions: .map([(key: .text("credProps"), value: .map([(key: .text("rk"), value: .bool(true))]))]))
        seeds.append(TestAuthenticator.attestationObject(authData: authData))
        seeds.append(authenticator.coseKey)
        seeds.append(try #require(Hex.decode("bf61610161629f0203ffff")))
        seeds.append(try #require(Hex.decode("a3626b31820102626b3244deadbeef626b33a1617864c3bc6d69")))
        return seeds
    }

    /// Decodes with every decoder configuration. The only acceptable outcomes are a value or a
    /// thrown `CBORError`; a trap fails the whole run. Successful minimal decodes without floats
    /// must re-encode to exactly the input.
    static func exercise(_ bytes: [UInt8]) -> Int {
        var accepted = 0
        for (index, decoder) in decoders.enumerated() {
            do {
                let value = try decoder.decode(bytes)
                accepted += 1
                if index == 0, !containsFloat(value) {
                    #expect(value.encoded == bytes, "re-encoding differs for \(Hex.encode(bytes))")
                }
                let (prefixValue, consumed) = try decoder.decodePrefix(bytes + [0x00])
                #expect(prefixValue == value && consumed == bytes.count)
            } catch {
                #expect(error.offset >= 0 && error.offset <= bytes.count + 1)
            }
        }
        // The parsers above the decoder must hold up too.
        _ = try? AuthenticatorData(bytes: bytes)
        _ = try? AttestationObject(bytes: bytes)
        _ = try? COSEKey(bytes: bytes)
        _ = try? CollectedClientData(bytes: bytes)
        return accepted
    }

    static func containsFloat(_ v: CBORValue) -> Bool {
        switch v {
        case .float: true
        case .array(let a): a.contains(where: containsFloat)
        case .map(let m): m.contains { containsFloat($0.key) || containsFloat($0.value) }
        case .tagged(_, let inner): containsFloat(inner)
        default: false
        }
    }

    @Test func randomBytes() {
        var rng = SplitMix64(seed: 0x5167_6E65_7446_4944)
        var accepted = 0
        for _ in 0..<6000 {
            let count = Int.random(in: 0...48, using: &rng)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Bias towards structure: heads of arrays, maps, strings and tags.
            if !bytes.isEmpty, Bool.random(using: &rng) { bytes[0] = [0x82, 0xA2, 0x9F, 0xBF, 0x58, 0x78, 0xD8, 0x5F][Int.random(in: 0..<8, using: &rng)] }
            accepted += Self.exercise(bytes)
        }
        #expect(accepted > 0)
    }

    @Test func mutatedInputs() throws {
        var rng = SplitMix64(seed: 0x00C0_FFEE_D00D_F00D)
        let corpus = try Self.corpus()
        #expect(corpus.count >= 4)  // the generated seeds; the shared vectors add ~90 more
        let interesting: [UInt8] = [0x00, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1F, 0x5F, 0x7F, 0x9F, 0xBF, 0xF9, 0xFF, 0x80, 0xA0]
        for i in 0..<6000 {
            var bytes = corpus[i % corpus.count]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                guard !bytes.isEmpty else { break }
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: bytes[at] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
                case 1: bytes[at] = interesting[Int.random(in: 0..<interesting.count, using: &rng)]
                case 2: bytes.removeSubrange(at...)
                case 3: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: at)
                case 4: bytes.remove(at: at)
                default:
                    let end = min(bytes.count, at + Int.random(in: 1...16, using: &rng))
                    bytes.insert(contentsOf: bytes[at..<end], at: at)
                }
            }
            _ = Self.exercise(bytes)
        }
        // Each unmutated seed still decodes.
        for seed in corpus { #expect(Self.exercise(seed) > 0) }
    }
}

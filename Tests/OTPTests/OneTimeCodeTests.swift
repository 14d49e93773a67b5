import Testing
@testable import OTP

/// Random numeric codes and their keyed storage hash.
@Suite struct OneTimeCodeTests {
    static let key = [UInt8](repeating: 0x42, count: 32)
    static let context = Array("challenge:6f1c2a9e".utf8)

    @Test(arguments: [6, 7, 8])
    func codesHaveTheRequestedLengthAndOnlyDigits(_ digits: Int) throws {
        for _ in 0..<200 {
            let code = try OneTimeCode.generate(digits: digits)
            #expect(code.utf8.count == digits)
            #expect(code.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        }
    }

    @Test(arguments: [0, 4, 5, 9, 12])
    func lengthsOutsideTheRangeAreRefused(_ digits: Int) {
        let error = #expect(throws: OTPError.self) { try OneTimeCode.generate(digits: digits) }
        #expect(error?.code == .invalidParameter)
    }

    /// 10,000 six-digit codes from 10^6 values: about 9,950 distinct are expected, and fewer
    /// than 9,000 would take a broken generator (the chance otherwise is far below 10^-100).
    /// Every leading digit appears (missing one has probability about 10 × 0.9^10000).
    @Test func distributionSanity() throws {
        var codes = Set<String>()
        var leading = Set<Character>()
        for _ in 0..<10_000 {
            let code = try OneTimeCode.generate()
            #expect(code.utf8.count == 6)
            codes.insert(code)
            leading.insert(code.first!)
        }
        #expect(codes.count >= 9_000)
        #expect(leading.count == 10)
    }

    @Test func rejectionSamplingStaysBelowTheBound() {
        for bound: UInt64 in [1, 2, 7, 1_000_000, 100_000_000, 1 << 32] {
            for _ in 0..<100 { #expect(OneTimeCode.uniformRandom(below: bound) < bound) }
        }
    }

    // MARK: - Storage hash

    @Test func storageHashIsHMACSHA256OfContextAndCode() throws {
        let hash = try OneTimeCode.storageHash(of: "123456", key: Self.key, context: Self.context)
        #expect(hash.count == OneTimeCode.hashByteCount)
        #expect(hash == OTPAlgorithm.sha256.hmac(key: Self.key, message: Self.context + Array("123456".utf8)))
        // RFC 4231 test case 2 checks the HMAC-SHA-256 primitive itself: key "Jefe".
        let rfc4231 = OTPAlgorithm.sha256.hmac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(hex(rfc4231) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func verifyAcceptsTheRightCode() throws {
        let code = try OneTimeCode.generate(digits: 8)
        let stored = try OneTimeCode.storageHash(of: code, key: Self.key, context: Self.context)
        try OneTimeCode.verify(code, digits: 8, storedHash: stored, key: Self.key, context: Self.context)
        #expect(OneTimeCode.matches(code, digits: 8, storedHash: stored, key: Self.key, context: Self.context))
    }

    /// While `SIGNET_OTP_HASH_KEY` is being changed, a code hashed under the earlier key still
    /// matches when that key is among those given; under none of them it does not.
    @Test func aCodeMatchesUnderAnyOfTheKeysGiven() throws {
        let earlier = [UInt8](repeating: 7, count: 32)
        let stored = try OneTimeCode.storageHash(of: "123456", key: earlier, context: Self.context)
        #expect(OneTimeCode.matches("123456", digits: 6, storedHash: stored, keys: [Self.key, earlier], context: Self.context))
        #expect(!OneTimeCode.matches("123456", digits: 6, storedHash: stored, keys: [Self.key], context: Self.context))
        #expect(!OneTimeCode.matches("123457", digits: 6, storedHash: stored, keys: [Self.key, earlier], context: Self.context))
        #expect(!OneTimeCode.matches("123456", digits: 6, storedHash: stored, keys: [], context: Self.context))
    }

    @Test func verifyRefusesAWrongCodeContextOrKey() throws {
        let stored = try OneTimeCode.storageHash(of: "123456", key: Self.key, context: Self.context)
        let wrong = #expect(throws: OTPError.self) {
            try OneTimeCode.verify("123457", digits: 6, storedHash: stored, key: Self.key, context: Self.context)
        }
        #expect(wrong?.code == .codeMismatch)
        let otherContext = #expect(throws: OTPError.self) {
            try OneTimeCode.verify("123456", digits: 6, storedHash: stored, key: Self.key, context: Array("challenge:other".utf8))
        }
        #expect(otherContext?.code == .codeMismatch)
        let otherKey = #expect(throws: OTPError.self) {
            try OneTimeCode.verify("123456", digits: 6, storedHash: stored, key: [UInt8](repeating: 1, count: 32), context: Self.context)
        }
        #expect(otherKey?.code == .codeMismatch)
        #expect(!OneTimeCode.matches("123457", digits: 6, storedHash: stored, key: Self.key, context: Self.context))
        #expect(!OneTimeCode.matches("123456", digits: 6, storedHash: Array(stored.dropLast()), key: Self.key, context: Self.context))
    }

    @Test(arguments: ["12345", "1234567", "12345a", "12 456", "١٢٣٤٥٦", ""])
    func malformedCodesAreRefused(_ presented: String) throws {
        let stored = try OneTimeCode.storageHash(of: "123456", key: Self.key, context: Self.context)
        let error = #expect(throws: OTPError.self) {
            try OneTimeCode.verify(presented, digits: 6, storedHash: stored, key: Self.key, context: Self.context)
        }
        #expect(error?.code == .malformedCode)
    }

    @Test func shortKeysAndBadLengthsAreRefused() throws {
        let short = #expect(throws: OTPError.self) {
            try OneTimeCode.storageHash(of: "123456", key: [UInt8](repeating: 1, count: 15), context: Self.context)
        }
        #expect(short?.code == .invalidKey)
        let digits = #expect(throws: OTPError.self) {
            try OneTimeCode.verify("12345", digits: 5, storedHash: [], key: Self.key, context: Self.context)
        }
        #expect(digits?.code == .invalidParameter)
    }
}

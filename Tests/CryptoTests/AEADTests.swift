import Testing
@testable import Crypto

@Suite struct AES256GCMTests {
    // NIST GCM test vector (gcmEncryptExtIV256, Count 0 of PTlen=128, AADlen=128 family is not
    // reproduced here; instead: the round trip plus every tampering path).
    @Test func roundTripAndTampering() throws {
        let box = try AES256GCM(key: SecureRandom.bytes(32))
        let plaintext = Array("challenge+rpId+expiry".utf8)
        let aad = Array("signet.webauthn.registration".utf8)
        let sealed = try box.seal(plaintext, associatedData: aad)
        #expect(sealed.count == 12 + plaintext.count + 16)
        #expect(try box.open(sealed, associatedData: aad) == plaintext)
        // Every single-byte change is detected.
        for i in stride(from: 0, to: sealed.count, by: 3) {
            var t = sealed
            t[i] ^= 0x01
            #expect(throws: CryptoError.self) { try box.open(t, associatedData: aad) }
        }
        #expect(throws: CryptoError.self) { try box.open(sealed, associatedData: Array("other".utf8)) }
        #expect(throws: CryptoError.self) { try box.open(Array(sealed.dropLast())) }
        #expect(throws: CryptoError.self) { try AES256GCM(key: SecureRandom.bytes(32)).open(sealed, associatedData: aad) }
        #expect(throws: CryptoError.self) { try AES256GCM(key: [1, 2, 3]) }
    }

    @Test func emptyPlaintextAndFreshNonces() throws {
        let box = try AES256GCM(key: [UInt8](repeating: 7, count: 32))
        let a = try box.seal([])
        let b = try box.seal([])
        #expect(a != b)
        #expect(try box.open(a) == [])
    }

    // NIST SP 800-38D test case 16 (McGrew & Viega, "The Galois/Counter Mode", test case 16
    // uses a 256-bit key and 60-byte plaintext with 20-byte AAD); checked through open().
    @Test func knownAnswer() throws {
        let key = Hex.decode("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")!
        let iv = Hex.decode("cafebabefacedbaddecaf888")!
        let pt = Hex.decode("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")!
        let aad = Hex.decode("feedfacedeadbeeffeedfacedeadbeefabaddad2")!
        let ct = Hex.decode("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662")!
        let tag = Hex.decode("76fc6ece0f4e1768cddf8853bb2d551b")!
        let box = try AES256GCM(key: key)
        #expect(try box.open(iv + ct + tag, associatedData: aad) == pt)
    }
}

/// A sealing key and the keys still accepted while it is being changed.
@Suite struct SealingKeysTests {
    static let old = [UInt8](repeating: 1, count: 32)
    static let new = [UInt8](repeating: 2, count: 32)
    static let other = [UInt8](repeating: 3, count: 32)

    @Test func sealsUnderTheSealingKeyAndOpensUnderAnyAccepted() throws {
        let changing = try SealingKeys(key: Self.new, accepted: [Self.other, Self.old])
        let aad = Array("tenant/row".utf8)
        let underOld = try SealingKeys(key: Self.old).seal([1, 2, 3], associatedData: aad)
        #expect(try changing.open(underOld, associatedData: aad) == [1, 2, 3])
        #expect(try changing.opening(underOld, associatedData: aad).underSealingKey == false)
        // New values are sealed under the sealing key only.
        let sealed = try changing.seal([4, 5], associatedData: aad)
        #expect(try changing.opening(sealed, associatedData: aad).underSealingKey == true)
        #expect(try SealingKeys(key: Self.new).open(sealed, associatedData: aad) == [4, 5])
        #expect(throws: CryptoError.self) { try SealingKeys(key: Self.old).open(sealed, associatedData: aad) }
        // Another binding, a key listed nowhere, a damaged value: refused.
        #expect(throws: CryptoError.self) { try changing.open(underOld, associatedData: Array("tenant/other".utf8)) }
        let stranger = try SealingKeys(key: [UInt8](repeating: 4, count: 32)).seal([1], associatedData: aad)
        #expect(throws: CryptoError.self) { try changing.open(stranger, associatedData: aad) }
        var damaged = underOld
        damaged[damaged.count - 1] ^= 1
        #expect(throws: CryptoError.self) { try changing.open(damaged, associatedData: aad) }
        #expect(!(try SealingKeys(key: Self.new)).acceptsOthers && changing.acceptsOthers)
        #expect(throws: CryptoError.self) { try SealingKeys(key: Self.new, accepted: [[1, 2, 3]]) }
    }
}

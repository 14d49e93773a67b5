import Crypto
import FIDO
import Foundation
import Testing
import TestSupport

/// The parsed-key cache of UAF verification: keyed by the key's bytes, encoding and algorithm,
/// so that it never answers for a key other than the record's; bounded; and never a source of
/// a registration's status (a suspended or deleted key is refused by the caller's record).
@Suite struct UAFPublicKeyCacheTests {
    static let appID = "https://example.test/uaf/facets"
    let context = UAFResponseContext(appID: appID, trustedFacetIDs: ["https://example.test"])

    /// A registered key of `authenticator` (a new one each call) as its record.
    func record(_ authenticator: SoftUAFAuthenticator) throws -> UAFRegistrationRecord {
        let krd = try UAFRegistrationAssertion(bytes: authenticator.registrationAssertion(fcParams: "unused"))
        return UAFRegistrationRecord(
            aaid: krd.aaid, keyID: krd.keyID, publicKey: krd.publicKey, keyEncoding: try #require(krd.info.publicKeyEncoding),
            signatureAlgorithm: krd.info.signatureAlgorithm, signCounter: 0, attestationType: .attestationBasicSurrogate)
    }

    func response(_ authenticator: SoftUAFAuthenticator) throws -> UAFResponse {
        let request = UAFAuthenticationRequest(
            header: UAFOperationHeader(upv: .v1_2, op: "Auth", appID: Self.appID, serverData: "sd"), challenge: "chal", transaction: nil,
            policy: .acceptAll)
        return try UAFMessageDecoding.response(try authenticator.authenticate(request))
    }

    func verify(_ response: UAFResponse, keys: UAFPublicKeyCache, registrations: @escaping (String, [UInt8]) -> UAFRegistrationRecord?) -> UAFError.Code? {
        do {
            _ = try UAFAuthenticationVerifier(context: context, keys: keys).verify(
                response, expectedChallenge: "chal", serverData: "sd", registrations: registrations)
            return nil
        } catch { return error.code }
    }

    @Test func aKeyIsParsedOnceAndServedByItsBytes() throws {
        let cache = UAFPublicKeyCache(capacity: 8)
        let authenticator = SoftUAFAuthenticator(facetID: "https://example.test")
        let r = try record(authenticator)
        let first = try cache.key(for: r)
        #expect(cache.count == 1)
        let again = try cache.key(bytes: r.publicKey, encoding: r.keyEncoding, algorithm: r.signatureAlgorithm)
        #expect(cache.count == 1 && again.bytes == first.bytes)
        // The same bytes declared with another algorithm are another entry (and refused here:
        // a P-256 point does not fit P-384).
        #expect(throws: UAFError.self) { try cache.key(bytes: r.publicKey, encoding: r.keyEncoding, algorithm: .secp384r1ECDSASHA384Raw) }
        #expect(cache.count == 1)
        // A malformed key is refused every time, never cached.
        var broken = r.publicKey
        broken[0] = 0x05
        for _ in 0..<2 {
            #expect(throws: UAFError.self) { try cache.key(bytes: broken, encoding: r.keyEncoding, algorithm: r.signatureAlgorithm) }
        }
        #expect(cache.count == 1)
    }

    /// The same AAID and KeyID registered again with another public key (a reset authenticator):
    /// the verifier uses the key of the record it is given, never the one parsed before.
    @Test func anotherKeyUnderTheSameKeyIDIsNeverAnsweredWithTheOldOne() throws {
        let cache = UAFPublicKeyCache(capacity: 8)
        let old = SoftUAFAuthenticator(facetID: "https://example.test")
        let oldRecord = try record(old)
        #expect(verify(try response(old), keys: cache) { _, _ in oldRecord } == nil)
        let reset = SoftUAFAuthenticator(facetID: "https://example.test")
        let newKey = try record(reset)
        let newRecord = UAFRegistrationRecord(
            aaid: oldRecord.aaid, keyID: oldRecord.keyID, publicKey: newKey.publicKey, keyEncoding: newKey.keyEncoding,
            signatureAlgorithm: newKey.signatureAlgorithm, signCounter: 0, attestationType: newKey.attestationType)
        // The old authenticator's assertion no longer verifies against the record's new key …
        #expect(verify(try response(old), keys: cache) { _, _ in newRecord } == .signatureInvalid)
        // … and the new key's verifies (its own KeyID, the record's key).
        let resetRecord = UAFRegistrationRecord(
            aaid: newKey.aaid, keyID: newKey.keyID, publicKey: newKey.publicKey, keyEncoding: newKey.keyEncoding,
            signatureAlgorithm: newKey.signatureAlgorithm, signCounter: 0, attestationType: newKey.attestationType)
        #expect(verify(try response(reset), keys: cache) { _, _ in resetRecord } == nil)
        #expect(cache.count == 2)
    }

    /// A key parsed and cached while active is refused once its registration is suspended or
    /// deleted: the caller's store no longer returns it, whatever the cache holds.
    @Test func aSuspendedKeyIsRefusedThoughItsParsedKeyIsCached() throws {
        let cache = UAFPublicKeyCache(capacity: 8)
        let authenticator = SoftUAFAuthenticator(facetID: "https://example.test")
        let r = try record(authenticator)
        var active = true
        let store: (String, [UInt8]) -> UAFRegistrationRecord? = { aaid, keyID in
            active && aaid == r.aaid && keyID == r.keyID ? r : nil
        }
        #expect(verify(try response(authenticator), keys: cache, registrations: store) == nil)
        #expect(cache.count == 1)
        active = false
        #expect(verify(try response(authenticator), keys: cache, registrations: store) == .unknownKeyID)
    }

    /// Bounded to two generations; a key used recently survives a turnover.
    @Test func theCacheIsBoundedAndKeepsRecentlyUsedKeys() throws {
        let cache = UAFPublicKeyCache(capacity: 2)
        let records = try (0..<6).map { _ in try record(SoftUAFAuthenticator(facetID: "https://example.test")) }
        let kept = records[0]
        for r in records.dropFirst() {
            _ = try cache.key(for: r)
            _ = try cache.key(for: kept)
            #expect(cache.count <= 4)
        }
        // `kept` was used after every insertion: still there (one more lookup adds nothing).
        let before = cache.count
        _ = try cache.key(for: kept)
        #expect(cache.count == before)
        cache.removeAll()
        #expect(cache.count == 0)
    }

    /// Raw r‖s ECDSA goes to OpenSSL without DER: a half of the wrong length, or r or s
    /// outside [1, n-1], is refused (as the DER path refuses them).
    @Test func rawECDSASignaturesOutOfRangeAreRefused() throws {
        let authenticator = SoftUAFAuthenticator(facetID: "https://example.test")
        let r = try record(authenticator)
        let key = try UAFPublicKeyCache(capacity: 2).key(for: r)
        let fc = try authenticator.fcParams(appID: Self.appID, challenge: "chal")
        let assertion = try UAFAuthenticationAssertion(bytes: authenticator.authenticationAssertion(fcParams: fc, transactionContent: nil))
        #expect(key.verify(signature: assertion.signature, message: assertion.signedData))
        let n = try #require(Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551"))
        let (sigR, sigS) = (Array(assertion.signature[..<32]), Array(assertion.signature[32...]))
        for bad in [
            [UInt8](repeating: 0, count: 32) + sigS,  // r = 0
            sigR + [UInt8](repeating: 0, count: 32),  // s = 0
            n + sigS,  // r = n
            sigR + n,  // s = n
            Array(assertion.signature.dropLast()),  // 63 bytes
            [0] + assertion.signature,  // 65 bytes
            [],
        ] {
            #expect(!key.verify(signature: bad, message: assertion.signedData))
        }
        var flipped = assertion.signature
        flipped[40] ^= 1
        #expect(!key.verify(signature: flipped, message: assertion.signedData))
    }
}

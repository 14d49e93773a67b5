import FIDO
import Testing

@testable import AuthenticationService

/// The authentication service's credential cache (`SIGNET_CREDENTIAL_CACHE_SIZE`): bounded,
/// cleared wholesale when full, and holding nothing at size 0 (the benchmark's cache-missed mode:
/// every sign-in then reads and parses its credential).
@Suite struct CredentialCacheTests {
    static func credential(_ subject: String) throws -> CachedCredential {
        // COSE_Key of P-256's generator point (a valid key; RFC 9052 §7, EC2, ES256).
        let x: [UInt8] = [
            0x6B, 0x17, 0xD1, 0xF2, 0xE1, 0x2C, 0x42, 0x47, 0xF8, 0xBC, 0xE6, 0xE5, 0x63, 0xA4, 0x40, 0xF2,
            0x77, 0x03, 0x7D, 0x81, 0x2D, 0xEB, 0x33, 0xA0, 0xF4, 0xA1, 0x39, 0x45, 0xD8, 0x98, 0xC2, 0x96,
        ]
        let y: [UInt8] = [
            0x4F, 0xE3, 0x42, 0xE2, 0xFE, 0x1A, 0x7F, 0x9B, 0x8E, 0xE7, 0xEB, 0x4A, 0x7C, 0x0F, 0x9E, 0x16,
            0x2B, 0xCE, 0x33, 0x57, 0x6B, 0x31, 0x5E, 0xCE, 0xCB, 0xB6, 0x40, 0x68, 0x37, 0xBF, 0x51, 0xF5,
        ]
        let cose: [UInt8] = [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20] + x + [0x22, 0x58, 0x20] + y
        return CachedCredential(
            subjectRef: subject, username: nil, userHandle: [1], publicKeyCOSE: cose, key: try COSEKey(bytes: cose), backupEligible: false,
            aaguid: nil)
    }

    @Test func sizeZeroKeepsNothing() throws {
        let cache = CredentialCache(capacity: 0)
        cache.store(try Self.credential("s1"), tenant: "t", id: [1])
        #expect(cache.credential(tenant: "t", id: [1]) == nil)
    }

    @Test func fullCacheIsClearedWholesale() throws {
        let cache = CredentialCache(capacity: 2)
        cache.store(try Self.credential("s1"), tenant: "t", id: [1])
        cache.store(try Self.credential("s2"), tenant: "t", id: [2])
        #expect(cache.credential(tenant: "t", id: [1])?.subjectRef == "s1")
        #expect(cache.credential(tenant: "u", id: [1]) == nil)  // tenants apart
        cache.store(try Self.credential("s3"), tenant: "t", id: [3])
        #expect(cache.credential(tenant: "t", id: [1]) == nil)
        #expect(cache.credential(tenant: "t", id: [3])?.subjectRef == "s3")
    }
}

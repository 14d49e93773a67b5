@testable import Crypto
import Testing

@Suite struct SubjectKeyTests {
    static let key = try! SubjectKey(Array("0123456789abcdef0123456789abcdef".utf8))

    /// RFC 5869 appendix A.1 and A.3 (the empty salt).
    @Test func hkdfMatchesRFC5869() {
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        let a1 = HKDF.sha256(inputKey: ikm, salt: Hex.decode("000102030405060708090a0b0c")!, info: Hex.decode("f0f1f2f3f4f5f6f7f8f9")!, outputByteCount: 42)
        #expect(Hex.encode(a1) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        let a3 = HKDF.sha256(inputKey: ikm, salt: [], info: [], outputByteCount: 42)
        #expect(Hex.encode(a3) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test func deterministicPerTenantAndUsername() {
        let a = Self.key.ref(tenant: "acme", username: "kim@example.net")
        #expect(a == Self.key.ref(tenant: "acme", username: "kim@example.net"))
        #expect(a.hasPrefix("s1.") && a.utf8.count == 46)
        #expect(Base64URL.decode(String(a.dropFirst(3)))?.count == 32)
        #expect(!a.contains("kim") && !a.contains("example"))
        // The construction, spelled out.
        let tenantKey = HKDF.sha256(inputKey: Array("0123456789abcdef0123456789abcdef".utf8), salt: [], info: Array("signet subject v1 acme".utf8), outputByteCount: 32)
        #expect(a == "s1." + Base64URL.encode(HMAC.authenticationCode(.sha256, key: tenantKey, message: Array("kim@example.net".utf8))))
    }

    @Test func differsAcrossTenantsUsernamesAndKeys() throws {
        let a = Self.key.ref(tenant: "acme", username: "kim@example.net")
        #expect(a != Self.key.ref(tenant: "acme2", username: "kim@example.net"))
        #expect(a != Self.key.ref(tenant: "acme", username: "Kim@example.net"))
        #expect(a != (try SubjectKey(Array("0123456789abcdef0123456789abcdeF".utf8))).ref(tenant: "acme", username: "kim@example.net"))
    }

    /// The per-tenant keys are cached: answers stay those of the construction, for a tenant
    /// asked again, after the cache has started afresh (more tenants than it holds), and for
    /// two keys asked about the same tenant one after the other.
    @Test func cachedTenantKeysAnswerAsTheConstruction() throws {
        let key = try SubjectKey(Array("0123456789abcdef0123456789abcdef".utf8))
        let other = try SubjectKey(Array("0123456789abcdef0123456789abcdeF".utf8))
        func expected(_ k: String, _ tenant: String, _ username: String) -> String {
            let tenantKey = HKDF.sha256(inputKey: Array(k.utf8), salt: [], info: Array("signet subject v1 \(tenant)".utf8), outputByteCount: 32)
            return "s1." + Base64URL.encode(HMAC.authenticationCode(.sha256, key: tenantKey, message: Array(username.utf8)))
        }
        for i in 0..<(SubjectKey.TenantKeys.limit + 10) where i % 97 == 0 || i >= SubjectKey.TenantKeys.limit - 2 {
            #expect(key.ref(tenant: "t\(i)", username: "u") == expected("0123456789abcdef0123456789abcdef", "t\(i)", "u"))
        }
        for i in 0..<(SubjectKey.TenantKeys.limit + 10) { _ = key.ref(tenant: "t\(i)", username: "u") }
        for tenant in ["t0", "t5000", "t\(SubjectKey.TenantKeys.limit + 9)"] {
            #expect(key.ref(tenant: tenant, username: "kim") == expected("0123456789abcdef0123456789abcdef", tenant, "kim"))
            #expect(other.ref(tenant: tenant, username: "kim") == expected("0123456789abcdef0123456789abcdeF", tenant, "kim"))
        }
    }

    @Test func refusesAShortKeyAndNeverShowsTheKey() {
        #expect(throws: SubjectKeyError.self) { try SubjectKey([UInt8](repeating: 1, count: 31)) }
        for text in ["\(Self.key)", String(reflecting: Self.key)] {
            #expect(text == "SubjectKey(redacted)")
        }
    }
}

import Foundation
import Schema
import Testing

/// The documents' patterns, lengths and counts against the Swift validation rules
/// (`TenantValidation`, `EventPayload.validate()`, `TenantUpsertRequest.violation()`): for each
/// vector, the schema and the Swift code must both accept or both reject.
///
/// Known, deliberate differences are left out of the vectors: Swift counts `displayName` in
/// grapheme clusters where JSON Schema counts code points; the origin pattern rejects hosts that
/// browsers never serialise (non-ASCII, `_`, an empty port) which `URLComponents` would pass.
@Suite struct ValidationAgreementTests {
    /// One field of an example replaced by `value`.
    struct Vector: Sendable, CustomTestStringConvertible {
        let field: String
        let value: JSONValue
        let valid: Bool
        var testDescription: String { "\(field) = \(value.description.prefix(60)) → \(valid ? "valid" : "invalid")" }

        init(_ field: String, _ value: JSONValue, _ valid: Bool) {
            self.field = field
            self.value = value
            self.valid = valid
        }

        static func ok(_ field: String, _ value: JSONValue) -> Vector { Vector(field, value, true) }
        static func bad(_ field: String, _ value: JSONValue) -> Vector { Vector(field, value, false) }
    }

    static func strings(_ s: [String]) -> JSONValue { .array(s.map(JSONValue.string)) }
    static let label63 = String(repeating: "a", count: 63)

    static let tenantFields: [Vector] = [
        .ok("tenantId", "a"), .ok("tenantId", .string(label63)), .ok("tenantId", "0-bank-2"),
        .bad("tenantId", ""), .bad("tenantId", "-demo"), .bad("tenantId", "Demo"), .bad("tenantId", "de_mo"),
        .bad("tenantId", .string(label63 + "a")), .bad("tenantId", "démo"), .bad("tenantId", "demo/x"),
        .ok("rpId", "example.com"), .ok("rpId", "login.example.co.uk"), .ok("rpId", "xn--bcher-kva.example"),
        .ok("rpId", .string(label63 + ".com")), .ok("rpId", "a-b.example"),
        .bad("rpId", ""), .bad("rpId", "Example.com"), .bad("rpId", "example..com"), .bad("rpId", "-example.com"),
        .bad("rpId", "example-.com"), .bad("rpId", "example.com."), .bad("rpId", "example.com:443"),
        .bad("rpId", "https://example.com"), .bad("rpId", .string(label63 + "a.com")),
        .bad("rpId", .string([label63, label63, label63, label63].joined(separator: "."))),
        .ok("origins", strings(["https://example.com"])), .ok("origins", strings(["https://example.com:8443"])),
        .ok("origins", strings(["http://localhost"])), .ok("origins", strings(["http://app.localhost:3000"])),
        .ok("origins", strings(["http://127.0.0.1:8080"])), .ok("origins", strings(["android:apk-key-hash:abc_-1"])),
        .ok("origins", strings(["https://[::1]:8443"])),
        .ok("origins", strings((1...20).map { "https://e\($0).example" })),
        .bad("origins", strings([])), .bad("origins", strings((1...21).map { "https://e\($0).example" })),
        .bad("origins", strings(["http://example.com"])), .bad("origins", strings(["https://example.com/"])),
        .bad("origins", strings(["https://example.com/login"])), .bad("origins", strings(["https://EXAMPLE.com"])),
        .bad("origins", strings(["HTTPS://example.com"])), .bad("origins", strings(["ftp://example.com"])),
        .bad("origins", strings(["https://example.com?x=1"])), .bad("origins", strings(["https://example.com#top"])),
        .bad("origins", strings(["https://user@example.com"])), .bad("origins", strings(["android:apk-key-hash:"])),
        .bad("origins", strings(["example.com"])), .bad("origins", strings([""])),
        // 255 characters, in DNS labels of at most 63.
        .ok("origins", strings(["https://" + Array(repeating: String(repeating: "a", count: 63), count: 3).joined(separator: ".") + "." + String(repeating: "a", count: 51) + ".com"])),
        .bad("origins", strings(["https://" + Array(repeating: String(repeating: "a", count: 63), count: 3).joined(separator: ".") + "." + String(repeating: "a", count: 52) + ".com"])),
        .bad("origins", strings(["android:apk-key-hash:ab\u{0}c"])), .bad("origins", strings(["android:apk-key-hash:ab c"])),
        .bad("origins", strings(["https://example.com", "http://example.org"])),
        .ok("displayName", "D"), .ok("displayName", .string(String(repeating: "x", count: 200))),
        .bad("displayName", ""), .bad("displayName", .string(String(repeating: "x", count: 201))),
        .ok("revision", 1), .ok("revision", 1_000_000), .bad("revision", 0), .bad("revision", -1), .bad("revision", 1.5),
        .ok("updatedAt", "2025-11-24T16:00:00+01:00"), .ok("updatedAt", "2025-11-24T16:00:00.250Z"),
        .bad("updatedAt", "2025-11-24"), .bad("updatedAt", "2025-11-24 16:00:00Z"), .bad("updatedAt", "2025-11-24T16:00:00"),
        .bad("updatedAt", "2025-11-24t16:00:00z"), .bad("updatedAt", "2025-13-24T16:00:00Z"), .bad("updatedAt", "yesterday"),
    ]

    @Test(arguments: tenantFields)
    func tenantUpserted(_ vector: Vector) throws {
        try Self.check(TenantUpserted.self, vector)
    }

    static let keyFields: [Vector] = [
        .ok("keyId", "k_0000000000000000"), .bad("keyId", "k_3F9A1C2B7D4E5F60"), .bad("keyId", "k_3f9a1c2b7d4e5f6"),
        .bad("keyId", "k_3f9a1c2b7d4e5f600"), .bad("keyId", "K_3f9a1c2b7d4e5f60"), .bad("keyId", "k_3f9a1c2b7d4e5f6g"),
        .bad("keyId", "x_3f9a1c2b7d4e5f60"), .bad("tenantId", "-x"), .bad("tenantId", ""),
    ]

    @Test(arguments: keyFields + [
        .ok("keyHash", .string(String(repeating: "0", count: 64))), .ok("keyHash", .string(String(repeating: "f9", count: 32))),
        .bad("keyHash", .string(String(repeating: "AB", count: 32))), .bad("keyHash", .string(String(repeating: "a", count: 63))),
        .bad("keyHash", .string(String(repeating: "a", count: 65))), .bad("keyHash", .string(String(repeating: "g", count: 1716))),
        .bad("keyHash", ""), .bad("createdAt", "not a date"),
    ])
    func tenantAPIKeyCreated(_ vector: Vector) throws {
        try Self.check(TenantAPIKeyCreated.self, vector)
    }

    @Test(arguments: keyFields + [.ok("revokedAt", "2025-11-24T16:00:00-05:00"), .bad("revokedAt", "2025-11-24")])
    func tenantAPIKeyRevoked(_ vector: Vector) throws {
        try Self.check(TenantAPIKeyRevoked.self, vector)
    }

    /// The metadata characteristics of `uaf.registered`: known names only, each once, bounded.
    @Test(arguments: [
        Vector.ok("userVerificationDetails", .array([])), .ok("userVerificationDetails", .array([strings([])])),
        .ok("userVerificationDetails", .array([strings(["none"]), strings(["all", "passcode_external", "pattern_external"])])),
        .ok("userVerificationDetails", .array(Array(repeating: strings(["fingerprint_internal"]), count: 1716))),
        .ok("userVerificationDetails", .array([strings(UAFValidation.userVerificationMethods.sorted())])),
        .bad("userVerificationDetails", .array(Array(repeating: strings(["fingerprint_internal"]), count: 1717))),
        .bad("userVerificationDetails", .array([strings(["fingerprint_internal", "fingerprint_internal"])])),
        .bad("userVerificationDetails", .array([strings(["iris_internal"])])), .bad("userVerificationDetails", .array([strings(["Fingerprint_internal"])])),
        .bad("userVerificationDetails", strings(["fingerprint_internal"])),
        .ok("keyProtection", strings([])), .ok("keyProtection", strings(["software"])),
        .ok("keyProtection", strings(UAFValidation.keyProtectionTypes.sorted())),
        .bad("keyProtection", strings(["software", "software"])), .bad("keyProtection", strings(["magnetic"])),
        .bad("keyProtection", strings(["hardware", ""])),
    ])
    func uafAuthenticatorRegistered(_ vector: Vector) throws {
        try Self.check(UAFAuthenticatorRegistered.self, vector)
    }

    static func check<P: EventPayload>(_: P.Type, _ vector: Vector) throws {
        let schema = MiniJSONSchema(document: try SchemaDocuments.eventSchema(P.schemaFile))
        let instance = try SchemaDocuments.eventJSON(P.fullExample).setting(vector.field, to: vector.value)
        let failures = schema.validate(instance)
        #expect(failures.isEmpty == vector.valid, "schema: \(failures)")
        #expect(failures.allSatisfy { $0.path.hasPrefix("$.\(vector.field)") }, "\(failures)")
        #expect(P.consumerAccepts(instance) == vector.valid, "Swift decode + validate()")
    }

    // MARK: - TenantUpsertRequest (PUT /v1/admin/tenants/{tenant})

    @Test(arguments: tenantFields.filter { ["rpId", "origins", "displayName"].contains($0.field) } + [
        .bad("displayName", "   "), .bad("displayName", "Demo\nBank"), .bad("displayName", "Demo\u{7F}Bank"),
        .bad("displayName", "Demo\u{85}Bank"), .bad("displayName", "\tDemo"), .ok("displayName", "Bank — Zürich"),
        .ok("displayName", " Demo "),
        .bad("origins", strings(["https://example.com", "https://example.com"])),
        .ok("origins", strings(["https://example.com", "https://example.com:8443"])),
    ])
    func tenantUpsertRequest(_ vector: Vector) throws {
        let doc = try SchemaDocuments.openAPIDocument(.registration)
        let instance = try SchemaDocuments.wireJSON(TenantUpsertRequest.fullExample).setting(vector.field, to: vector.value)
        let failures = MiniJSONSchema(document: doc).validate(instance, component: "TenantUpsertRequest")
        #expect(failures.isEmpty == vector.valid, "schema: \(failures)")
        #expect(failures.allSatisfy { $0.path.hasPrefix("$.\(vector.field)") }, "\(failures)")
        let request = try SchemaDocuments.decodeWire(TenantUpsertRequest.self, from: instance)
        let violation = request.violation()
        #expect((violation == nil) == vector.valid, "Swift: \(violation.map { "\($0.field): \($0.message)" } ?? "no violation")")
        if let violation { #expect(violation.field.hasPrefix(vector.field)) }
    }
}

import Crypto
import Foundation
import HTTPServer
import Platform
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// A sign-up's profile in the vault, over a scratch database with a stand-in vault: an account
/// opened again by a later sign-up (before it held anything) refers to the new values, and the
/// ones they replace leave the vault.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct SignUpProfileVaultTests {
    typealias Harness = ServiceHarness<RegistrationService>

    /// What the stand-in vault was asked: values stored (their references, in order) and
    /// references deleted.
    struct Calls: Sendable {
        var stored: [String] = []
        var deleted: [String] = []
    }

    @Test func anAccountOpenedAgainDeletesTheProfileValuesItReplaces() async throws {
        let calls = PlainLock(Calls())
        let vault = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in
            let parts = request.path.split(separator: "/").map(String.init)
            guard parts.count >= 5, parts[0...3] == ["v1", "internal", "tenants", "acme"], parts[4] == "pii" else { return HTTPResponse(status: 404) }
            switch (request.method, parts.count) {
            case ("POST", 5):
                let ref = "pii_" + Hex.encode(SecureRandom.bytes(16))
                calls.withLock { $0.stored.append(ref) }
                return HTTPResponse(status: 201, headers: [("Content-Type", "application/json")], body: Array(#"{"ref":"\#(ref)","masked":"D•••"}"#.utf8))
            case ("DELETE", 6):
                calls.withLock { $0.deleted.append(parts[5]) }
                return HTTPResponse(status: 204)
            default:
                return HTTPResponse(status: 404)
            }
        }
        try vault.start()
        defer { Task { await vault.shutdown() } }
        let h = try await Harness.withDatabase(environment: ["SIGNET_PII_URL": "http://127.0.0.1:\(vault.boundPort)"])
        defer { Task { await h.close() } }
        _ = try await CredentialManagementTests.tenantWithKey(h)
        let caller = [(name: "X-Signet-Service", value: "authentication")]
        func open(_ profile: String) async -> HTTPResponse {
            await h.send(
                "POST", "/v1/internal/tenants/acme/sign-ups", bearer: Harness.internalToken, headers: caller,
                json: #"{"username":"dana","passkeyOnly":false,"profile":\#(profile)}"#)
        }
        func profileRefs() async throws -> [String: String] {
            let rows = try await h.context.pool.withConnection { conn in
                try await conn.query("SELECT kind, pii_ref FROM user_profiles WHERE tenant_id = 'acme' AND username = 'dana'")
            }
            return Dictionary(uniqueKeysWithValues: rows.compactMap { row in row.string("kind").flatMap { k in row.string("pii_ref").map { (k, $0) } } })
        }

        let first = await open(#"{"fullName":"Dana Scully","email":"dana@example.org"}"#)
        #expect(first.status == 201, "\(String(decoding: first.body, as: UTF8.self))")
        let firstRefs = calls.withLock { $0.stored }
        #expect(firstRefs.count == 2 && calls.withLock { $0.deleted }.isEmpty)
        #expect(try await profileRefs() == ["name": firstRefs[0], "email": firstRefs[1]])

        // Opened again, with a name only: the name's first value goes; the e-mail address,
        // not given again, stays the profile's.
        let second = await open(#"{"fullName":"Dana K. Scully"}"#)
        #expect(second.status == 201, "\(String(decoding: second.body, as: UTF8.self))")
        let (stored, deleted) = calls.withLock { ($0.stored, $0.deleted) }
        #expect(stored.count == 3 && deleted == [firstRefs[0]], "\(deleted) \(firstRefs)")
        #expect(try await profileRefs() == ["name": stored[2], "email": firstRefs[1]])
    }
}

import Crypto
import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// Registration's credential management through HTTP over a scratch database, with the
/// credential stored by ``CredentialStore`` as a finished ceremony stores it: every change is
/// read back from the list and from the outbox.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct CredentialManagementTests {
    typealias Harness = ServiceHarness<RegistrationService>

    /// A tenant `acme` and an RP API key for it, through the admin API.
    static func tenantWithKey(_ h: Harness) async throws -> String {
        let admin = Harness.adminToken
        let created = await h.send(
            "PUT", "/v1/admin/tenants/acme", bearer: admin, json: #"{"displayName":"ACME","rpId":"acme.example","origins":["https://acme.example"]}"#)
        #expect(created.status == 201)
        let issued = await h.send("POST", "/v1/admin/tenants/acme/api-keys", bearer: admin, json: "{}")
        let json = try JSONSerialization.jsonObject(with: Data(issued.body)) as? [String: Any]
        return try #require(json?["apiKey"] as? String)
    }

    static func credential(_ id: [UInt8], username: String = "alice", handle: [UInt8]) -> CredentialStore.NewCredential {
        CredentialStore.NewCredential(
            tenant: "acme", username: username, displayName: "Alice", userHandle: handle, credentialID: id, publicKeyCOSE: [0xA5, 0x01, 0x02],
            algorithm: -7, signCount: 0, aaguid: "00000000-0000-0000-0000-000000000000", backupEligible: true, backupState: false,
            userVerified: true, transports: ["internal"], attestationFormat: "none", attestationType: "none", friendlyName: "Laptop")
    }

    static func eventTypes(_ h: Harness) async throws -> [String] {
        try await h.published().map(\.type).filter { $0.contains(".credential.") }
    }

    @Test func listRenameSuspendAndDeregisterPublishEachChangeOnce() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let key = try await Self.tenantWithKey(h)
        let store = CredentialStore(context: h.context)
        let id = SecureRandom.bytes(16)
        let handle = SecureRandom.bytes(32)
        try await store.register(Self.credential(id, handle: handle), challenge: SecureRandom.bytes(32), challengeExpiresAt: Date() + 300, at: Date())
        #expect(try await Self.eventTypes(h) == [CredentialRegistered.eventType])
        let path = "/v1/tenants/acme/users/alice/credentials/\(Base64URL.encode(id))"

        let listed = await h.send("GET", "/v1/tenants/acme/users/alice/credentials", bearer: key)
        let list = try HTTPRequest(method: "GET", path: "/", headers: [("Content-Type", "application/json")], body: listed.body).decode(CredentialList.self)
        #expect(listed.status == 200 && list.credentials.map(\.credentialId) == [Base64URL.encode(id)])
        #expect(list.credentials.first?.friendlyName == "Laptop" && list.credentials.first?.status == "active")
        // The methods list shows the credential as fido2.
        let methods = String(decoding: await h.send("GET", "/v1/tenants/acme/users/alice/methods", bearer: key).body, as: UTF8.self)
        #expect(methods.contains(#""type":"fido2""#), "\(methods)")

        let renamed = await h.send("PATCH", path, bearer: key, json: #"{"friendlyName":"Work laptop"}"#)
        #expect(renamed.status == 200 && String(decoding: renamed.body, as: UTF8.self).contains("Work laptop"))
        // The same name again changes nothing and publishes nothing.
        #expect(await h.send("PATCH", path, bearer: key, json: #"{"friendlyName":"Work laptop"}"#).status == 200)
        let suspended = await h.send("PATCH", path, bearer: key, json: #"{"status":"suspended"}"#)
        #expect(suspended.status == 200 && String(decoding: suspended.body, as: UTF8.self).contains(#""status":"suspended""#))
        #expect(
            try await Self.eventTypes(h) == [CredentialRegistered.eventType, CredentialRenamed.eventType, CredentialStatusChanged.eventType])

        #expect(await h.send("DELETE", path, bearer: key).status == 204)
        #expect(await h.send("DELETE", path, bearer: key).status == 404)
        #expect(await h.send("PATCH", path, bearer: key, json: #"{"friendlyName":"Gone"}"#).status == 404)
        let after = await h.send("GET", "/v1/tenants/acme/users/alice/credentials", bearer: key)
        #expect(String(decoding: after.body, as: UTF8.self) == #"{"credentials":[]}"#)
        let last = try #require(try await h.published().last)
        let change = try EventCoding.decode(CredentialStatusChanged.self, from: Array(last.data.utf8))
        #expect(change.status == "deleted" && change.credentialId == Base64URL.encode(id))
        // Another user's path does not reach the credential.
        #expect(await h.send("DELETE", "/v1/tenants/acme/users/bob/credentials/\(Base64URL.encode(id))", bearer: key).status == 404)
    }

    @Test func aChallengeAndACredentialIDAreUsedOnce() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let store = CredentialStore(context: h.context)
        let id = SecureRandom.bytes(16)
        let handle = SecureRandom.bytes(32)
        let challenge = SecureRandom.bytes(32)
        try await store.register(Self.credential(id, handle: handle), challenge: challenge, challengeExpiresAt: Date() + 300, at: Date())
        await #expect(throws: HTTPError.self) {
            try await store.register(Self.credential(SecureRandom.bytes(16), handle: handle), challenge: challenge, challengeExpiresAt: Date() + 300, at: Date())
        }
        do {
            try await store.register(Self.credential(id, handle: handle), challenge: SecureRandom.bytes(32), challengeExpiresAt: Date() + 300, at: Date())
            Issue.record("a credential id registered twice")
        } catch let error as HTTPError {
            #expect(error.code == .credentialExists)
        }
        do {
            // The same username under another handle: registered concurrently.
            try await store.register(
                Self.credential(SecureRandom.bytes(16), handle: SecureRandom.bytes(32)), challenge: SecureRandom.bytes(32),
                challengeExpiresAt: Date() + 300, at: Date())
            Issue.record("a second handle for one user")
        } catch let error as HTTPError {
            #expect(error.code == .conflict)
        }
        #expect(try await h.published().filter { $0.type == CredentialRegistered.eventType }.count == 1)
    }

    @Test func aStoredPolicyThatDoesNotReadIsAnErrorNotTheDefault() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        _ = try await Self.tenantWithKey(h)
        try await h.context.pool.withConnection { conn in
            try await conn.query("INSERT INTO fido_policies (tenant_id, document, updated_at) VALUES ('acme', '{\"attestation\":', now())")
        }
        let got = await h.send("GET", "/v1/admin/tenants/acme/fido-policy", bearer: Harness.adminToken)
        #expect(got.status == 500)
        await #expect(throws: FIDOPolicyStore.UnreadablePolicy.self) { try await FIDOPolicyStore(pool: h.context.pool).policy(for: "acme") }
    }
}

import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// Sign-in flows as ``SignInFlowStore`` keeps them, over a scratch database.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct SignInFlowStoreTests {
    typealias Harness = ServiceHarness<AuthenticationService>

    static func flow(tenant: String = "acme") -> SignInFlow {
        var flow = SignInFlow(
            id: SignInFlow.newID(), tenant: tenant, username: "alice", status: .inProgress, matchedRule: "r1", sequences: [["fido2", "totp"], ["sms_otp"]],
            completed: [], usedCredentials: [], pendingMethod: nil, pendingState: nil, revision: 0, createdAt: Date(), expiresAt: Date() + 300)
        flow.evidence = [
            SignedAssertionEvidence(credentialId: "Y3JlZA", authenticatorData: "YQ", clientDataJSON: "Yg", signature: "Yw", publicKeyCose: "ZA", nonce: "ZQ")
        ]
        return flow
    }

    @Test func aFlowReadsBackAndTwoSavesOfOneRevisionConflict() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let store = SignInFlowStore(pool: h.context.pool)
        let flow = Self.flow()
        try await h.context.pool.withConnection { conn in try await store.insert(flow, on: conn) }
        var first = try await store.load(flow.id, tenant: "acme")
        #expect(first.sequences == flow.sequences && first.evidence == flow.evidence && first.revision == 0)
        var second = first
        first.completed = ["fido2"]
        try await store.save(&first)
        #expect(first.revision == 1)
        do {
            try await store.save(&second)
            Issue.record("a stale revision saved")
        } catch let error as HTTPError {
            #expect(error.code == .signInConflict)
        }
        #expect(try await store.load(flow.id, tenant: "acme").completed == ["fido2"])
        // Another tenant's flow is not found.
        await #expect(throws: HTTPError.self) { try await store.load(flow.id, tenant: "other") }
        let progress = await h.send("GET", "/v1/tenants/acme/signins/\(flow.id)")
        #expect(progress.status == 200 && String(decoding: progress.body, as: UTF8.self).contains(#""completedMethods":["fido2"]"#))
    }

    @Test func storedEvidenceThatDoesNotReadIsAnErrorNotAnEmptyList() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let store = SignInFlowStore(pool: h.context.pool)
        let flow = Self.flow()
        try await h.context.pool.withConnection { conn in
            try await store.insert(flow, on: conn)
            try await conn.query("UPDATE signin_flows SET evidence = '[{\"credentialId\": 1}]' WHERE id = \(flow.id)")
        }
        await #expect(throws: SignInFlowStore.UnreadableFlow.self) { try await store.load(flow.id, tenant: "acme") }
        #expect(await h.send("GET", "/v1/tenants/acme/signins/\(flow.id)").status == 500)
    }

    /// A sign-in started without a username keeps the signals and context it was decided on, and
    /// a save writes what deciding again changes: the rule, the sequences, the expiry.
    @Test func theFactsOfAnAnonymousStartReadBackAndASaveWritesTheNewDecision() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let store = SignInFlowStore(pool: h.context.pool)
        var flow = Self.flow()
        flow.username = nil
        flow.signals = ["ip": "203.0.113.7", "supportedMethods": ["fido2", "totp"]]
        flow.context = ["transactionAmount": 50]
        let named = Self.flow()
        try await h.context.pool.withConnection { conn in
            try await store.insert(flow, on: conn)
            try await store.insert(named, on: conn)
        }
        var loaded = try await store.load(flow.id, tenant: "acme")
        #expect(loaded.signals == flow.signals && loaded.context == flow.context)
        #expect(try await store.load(named.id, tenant: "acme").signals == nil)
        let expires = Date(timeIntervalSince1970: (loaded.createdAt + 120).timeIntervalSince1970.rounded())
        loaded.username = "alice"
        loaded.matchedRule = "r2"
        loaded.sequences = [["fido2", "totp"]]
        loaded.expiresAt = expires
        try await store.save(&loaded)
        let saved = try await store.load(flow.id, tenant: "acme")
        #expect(saved.matchedRule == "r2" && saved.sequences == [["fido2", "totp"]] && saved.expiresAt == expires && saved.username == "alice")
    }
}

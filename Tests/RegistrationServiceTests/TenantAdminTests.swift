import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// Registration's tenant administration in process, over a scratch database: the state change
/// and its event commit together (the event is read from the outbox).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct TenantAdminTests {
    @Test func upsertingATenantPublishesItsEventOnce() async throws {
        let h = try await ServiceHarness<RegistrationService>.withDatabase()
        defer { Task { await h.close() } }
        let body = #"{"displayName":"ACME","rpId":"acme.example","origins":["https://acme.example"]}"#
        let created = await h.send("PUT", "/v1/admin/tenants/acme", bearer: ServiceHarness<RegistrationService>.adminToken, json: body)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let again = await h.send("PUT", "/v1/admin/tenants/acme", bearer: ServiceHarness<RegistrationService>.adminToken, json: body)
        #expect(again.status == 200)
        // Unchanged: no second event.
        let events = try await h.published()
        #expect(events.map(\.type) == [TenantUpserted.eventType])
        let payload = try EventCoding.decode(TenantUpserted.self, from: Array(try #require(events.first).data.utf8))
        #expect(payload.tenantId == "acme" && payload.rpId == "acme.example" && payload.revision == 1)
        // Registration serves its own tenants.
        #expect(await h.send("GET", "/v1/tenants/acme").status == 200)
        // A wrong admin token changes nothing.
        let refused = await h.send("PUT", "/v1/admin/tenants/other", bearer: "not-the-admin-token", json: body)
        #expect(refused.status == 401)
        #expect(try await h.published().count == 1)
    }

    @Test func anAPIKeyIsShownOnceAndStoredAsItsDigest() async throws {
        let h = try await ServiceHarness<RegistrationService>.withDatabase()
        defer { Task { await h.close() } }
        let admin = ServiceHarness<RegistrationService>.adminToken
        #expect(await h.send("PUT", "/v1/admin/tenants/acme", bearer: admin, json: #"{"displayName":"ACME","rpId":"acme.example","origins":["https://acme.example"]}"#).status == 201)
        let issued = await h.send("POST", "/v1/admin/tenants/acme/api-keys", bearer: admin, json: "{}")
        #expect(issued.status == 201)
        let json = try JSONSerialization.jsonObject(with: Data(issued.body)) as? [String: Any]
        let key = try #require(json?["apiKey"] as? String)
        // The key works for its tenant only, and the event carries its digest, never the key.
        #expect(await h.send("GET", "/v1/tenants/acme/api-keys/current", bearer: key).status == 200)
        #expect(await h.send("GET", "/v1/tenants/other/api-keys/current", bearer: key).status == 401)
        let events = try await h.published()
        #expect(events.map(\.type) == [TenantUpserted.eventType, TenantAPIKeyCreated.eventType])
        #expect(events.allSatisfy { !$0.data.contains(key) })
    }
}

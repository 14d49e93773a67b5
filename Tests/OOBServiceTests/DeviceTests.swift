import Crypto
import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
import Tokens
@testable import OOBService

/// Devices in process, over a scratch database: create and update with the statuses the app
/// SDK expects, the device identifier JWT under the tenant's published key, proofs of
/// possession (and their refusals), binding by the RP, push tokens sealed.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct DeviceTests {
    @Test func createAndUpdateAnswerTheSDKStatusesAndTheTokenVerifiesWithTheTenantsJWKS() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let path = "/v1/tenants/acme/devices"
        let created = try await f.device(phone, "POST", path, json: try phone.upsertBody())
        #expect(created.status == 201, "\(created.text)")
        let object = created.object()
        #expect(object["status"] as? String == "newDevice" && object["securityEnabled"] as? Bool == true && object["bound"] as? Bool == false)
        let id = try #require(object["deviceId"] as? String)
        let token = try #require(object["deviceToken"] as? String)

        // The RP verifies the identifier with the tenant's JWKS.
        let jwks = await f.h.send("GET", "/v1/tenants/acme/.well-known/jwks.json")
        #expect(jwks.status == 200)
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body),
            options: JWTValidationOptions(issuer: "http://localhost:8080/oob", audience: "acme", expectedType: "device-id+jwt"))
        let jwt = try verifier.verify(token, now: Date())
        #expect(jwt.claims.subject == id)
        #expect(await f.h.send("GET", "/v1/tenants/nobody/.well-known/jwks.json").code == "tenant_not_found")

        // The same key again: the same device, with what changed.
        let again = try await f.device(phone, "POST", path, json: try phone.upsertBody())
        #expect(again.status == 200 && (again.object()["status"] as? String) == "activeDevice" && (again.object()["deviceId"] as? String) == id)
        let disabled = try await f.device(phone, "POST", path, json: try phone.upsertBody(security: false))
        #expect((disabled.object()["status"] as? String) == "securityDisabled" && (disabled.object()["securityEnabled"] as? Bool) == false)
        let enabled = try await f.device(phone, "POST", path, json: try phone.upsertBody())
        #expect((enabled.object()["status"] as? String) == "securityEnabled")
        try await f.h.context.pool.withConnection { conn in
            try await conn.query("UPDATE devices SET last_seen_at = now() - interval '100 days' WHERE id = \(id)")
        }
        let inactive = try await f.device(phone, "POST", path, json: try phone.upsertBody())
        #expect((inactive.object()["status"] as? String) == "inactiveDevice")
        #expect(await f.h.send("POST", "/v1/tenants/acme/devices/\(id)/revoke").status == 401)
        let revocation = await f.rp("POST", "/v1/tenants/acme/devices/\(id)/revoke")
        #expect(revocation.status == 200 && revocation.object()["status"] as? String == "REVOKED", "\(revocation.text)")
        #expect(await f.rp("POST", "/v1/tenants/acme/devices/\(id)/revoke").status == 200)
        #expect(await f.rp("POST", "/v1/tenants/acme/devices/dv_00000000000000000000000000000000/revoke").code == "device_not_found")
        let revoked = try await f.device(phone, "POST", path, json: try phone.upsertBody())
        #expect(revoked.status == 200 && (revoked.object()["status"] as? String) == "invalidDevice" && (revoked.object()["deviceToken"]) == nil)
        // A revoked device is no device for the proof guard either.
        #expect(try await f.device(phone, "GET", "/v1/tenants/acme/devices/\(id)").status == 401)

        // Events carry no key and no push token; the database holds the push token sealed only.
        let published = try await f.h.published()
        #expect(published.map(\.type).allSatisfy { $0 == DeviceChanged.eventType } && published.count == 6)
        #expect(!published.contains { $0.data.contains(phone.pushToken) || $0.data.contains("\"x\"") })
        let plain = try await f.h.context.pool.withConnection { conn in
            try await conn.query("SELECT count(*) AS n FROM devices WHERE encode(sealed_push_token, 'escape') LIKE \("%" + phone.pushToken + "%")")
        }.first?.int("n")
        #expect(plain == 0)
    }

    /// The app's first call sent several times at once (a retry racing the first): one device,
    /// one `newDevice`, the others update it. The loser of the insert answered 500 before.
    @Test func concurrentFirstCallsMakeOneDevice() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let body = try phone.upsertBody()
        let answers = try await withThrowingTaskGroup(of: HTTPResponse.self) { group in
            for _ in 0..<8 { group.addTask { try await f.device(phone, "POST", "/v1/tenants/acme/devices", json: body) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.map(\.status).sorted() == [200, 200, 200, 200, 200, 200, 200, 201], "\(answers.map(\.text))")
        #expect(Set(answers.compactMap { $0.object()["deviceId"] as? String }).count == 1)
        #expect(answers.filter { $0.object()["status"] as? String == "newDevice" }.count == 1)
    }

    @Test func badBodiesAreRefusedWithTheFieldNamed() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let path = "/v1/tenants/acme/devices"
        let key = try SoftwareDevice.jwkJSON(phone.deviceKey)
        for (body, field) in [
            (#"{"deviceKey":\#(key),"platform":"symbian","appId":"a.b"}"#, "platform"),
            (#"{"deviceKey":\#(key),"platform":"ios","appId":"a b"}"#, "appId"),
            (#"{"deviceKey":\#(key),"userAuthKey":\#(key),"platform":"ios","appId":"a.b"}"#, "userAuthKey"),
            (#"{"deviceKey":\#(key),"platform":"ios","appId":"a.b","pushToken":""}"#, "pushToken"),
        ] {
            let r = try await f.device(phone, "POST", path, json: body)
            #expect(r.status == 400 && (r.object()["field"] as? String) == field, "\(r.text)")
        }
        let rsa = #"{"deviceKey":{"kty":"EC","crv":"P-384","x":"AAAA","y":"AAAA"},"platform":"ios","appId":"a.b"}"#
        #expect(try await f.device(phone, "POST", path, json: rsa).status == 400)
        let unknownTenant = try await f.device(phone, "POST", "/v1/tenants/nobody/devices", json: try phone.upsertBody())
        #expect(unknownTenant.code == "tenant_not_found")
    }

    @Test func proofsBindMethodPathBodyAndTimeAndWorkOnce() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let stranger = try SoftwareDevice()
        let id = try await f.enrol(phone, as: "alice")
        let path = "/v1/tenants/acme/devices/\(id)"
        #expect(try await f.device(phone, "GET", path).status == 200)
        func send(_ proof: String, method: String = "GET", json: String? = nil) async -> HTTPResponse {
            await f.h.send(method, path + (method == "PUT" ? "/push-token" : ""), headers: [("Device-Proof", proof)], json: json)
        }
        #expect(await f.h.send("GET", path).status == 401)
        #expect(await send(try stranger.proof("GET", path)).status == 401)
        #expect(await send(try phone.proof("GET", path, key: phone.userAuthKey)).status == 401)
        #expect(await send(try phone.proof("POST", path)).status == 401)
        #expect(await send(try phone.proof("GET", "/v1/tenants/acme/devices")).status == 401)
        #expect(await send(try phone.proof("GET", path, issuedAt: Date().addingTimeInterval(-120))).status == 401)
        #expect(await send(try phone.proof("GET", path, nonce: "short")).status == 401)
        let once = try phone.proof("GET", path)
        #expect(await send(once).status == 200)
        let replay = await send(once)
        #expect(replay.status == 401 && replay.text.contains("used before"), "\(replay.text)")
        // The body is bound too: a proof over one push token does not carry another.
        let body = #"{"pushToken":"aaaa"}"#
        let proof = try phone.proof("PUT", path + "/push-token", body: Array(body.utf8))
        #expect(await send(proof, method: "PUT", json: #"{"pushToken":"bbbb"}"#).status == 401)
        #expect(await send(try phone.proof("PUT", path + "/push-token", body: Array(body.utf8)), method: "PUT", json: body).status == 204)
        // Another tenant's path names no device.
        #expect(try await f.device(phone, "GET", "/v1/tenants/other/devices/\(id)").status == 401)
    }

    @Test func theRelyingPartyBindsListsAndUnbinds() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let created = try await f.device(phone, "POST", "/v1/tenants/acme/devices", json: try phone.upsertBody())
        let token = try #require(created.object()["deviceToken"] as? String)
        let id = try #require(created.object()["deviceId"] as? String)
        let bind = #"{"deviceToken":"\#(token)"}"#
        #expect(await f.h.send("POST", "/v1/tenants/acme/users/alice/devices", json: bind).status == 401)
        let bound = await f.rp("POST", "/v1/tenants/acme/users/alice/devices", json: bind)
        #expect(bound.status == 200 && (bound.object()["username"] as? String) == "alice", "\(bound.text)")
        #expect(await f.rp("POST", "/v1/tenants/acme/users/alice/devices", json: bind).status == 200)
        #expect(await f.rp("POST", "/v1/tenants/acme/users/bob/devices", json: bind).code == "device_bound_to_other_user")
        // One character of the signature changed to one it is not (the third from the end, a full
        // six bits, so the spelling stays canonical). Ending the token in a fixed "AA" sent the
        // real token back whenever the signature's last byte was zero: one run in 256 (CI, once).
        let at = token.index(token.endIndex, offsetBy: -3)
        let forgedToken = token.replacingCharacters(in: at...at, with: token[at] == "A" ? "B" : "A")
        #expect(forgedToken != token)
        let forged = await f.rp("POST", "/v1/tenants/acme/users/bob/devices", json: #"{"deviceToken":"\#(forgedToken)"}"#)
        #expect(forged.status == 400 && forged.code == "device_token_invalid")
        let listed = await f.rp("GET", "/v1/tenants/acme/users/alice/devices")
        let devices = try #require(listed.object()["devices"] as? [[String: Any]])
        #expect(devices.count == 1 && devices.first?["deviceId"] as? String == id && devices.first?["pushEnabled"] as? Bool == true)
        #expect(!listed.text.contains(phone.pushToken))
        #expect(await f.rp("DELETE", "/v1/tenants/acme/users/bob/devices/\(id)").code == "device_not_found")
        #expect(await f.rp("DELETE", "/v1/tenants/acme/users/alice/devices/\(id)").status == 204)
        let afterUnbind = await f.rp("GET", "/v1/tenants/acme/users/alice/devices")
        #expect((afterUnbind.object()["devices"] as? [Any])?.isEmpty == true)
        #expect(await f.rp("POST", "/v1/tenants/acme/users/bob/devices", json: bind).status == 200)
        let changes = try await f.h.published().compactMap { event in
            (try? JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])?["change"] as? String
        }
        #expect(changes == ["created", "bound", "unbound", "bound"])
        // The bound device's events name alice by subject reference, never by username (#18).
        let aliceRef = f.h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice")
        let deviceEvents = try await f.h.published().filter { $0.type == DeviceChanged.eventType }
        #expect(deviceEvents.contains { $0.data.contains(aliceRef) } && !deviceEvents.contains { $0.data.contains("alice") })
    }
    /// A device that calls again after a day or more without a call is announced (`seen`, with
    /// its new last call), so that rules elsewhere judge inactivity as this service does; calls
    /// within the day announce nothing.
    @Test func aDeviceCallingAgainAfterADayIsAnnouncedWithItsLastCall() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let id = try await f.enrol(phone, as: "alice")
        let path = "/v1/tenants/acme/devices/\(id)"
        func seenEvents() async throws -> [[String: Any]] {
            try await f.h.published().filter { $0.type == DeviceChanged.eventType }.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? [String: Any]
            }.filter { $0["change"] as? String == "seen" }
        }
        #expect(try await f.device(phone, "GET", path).status == 200)
        #expect(try await seenEvents().isEmpty)
        // Two days without a call (moved back in the database), then a call.
        try await f.h.context.pool.withConnection { conn in
            try await conn.query("UPDATE devices SET last_seen_at = now() - interval '2 days' WHERE id = \(id)")
        }
        let before = Date()
        #expect(try await f.device(phone, "GET", path).status == 200)
        let seen = try await seenEvents()
        #expect(seen.count == 1, "\(seen)")
        let lastSeenText = try #require(seen.first?["lastSeenAt"] as? String)
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let lastSeen = try #require(fractional.date(from: lastSeenText) ?? ISO8601DateFormatter().date(from: lastSeenText), "\(lastSeenText)")
        #expect(lastSeen.timeIntervalSince(before) > -1 && lastSeen.timeIntervalSince(before) < 60)
        #expect(seen.first?["subjectRef"] as? String == f.h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"))
        // The next call within the day announces nothing more.
        #expect(try await f.device(phone, "GET", path).status == 200)
        #expect(try await seenEvents().count == 1)
    }
}

import Crypto
import Foundation
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import OOBService

/// QR sessions in process, over a scratch database: a page's RP creates one, the page watches
/// it (watch token, long polling, Server-Sent Events), the user's bound software phone claims
/// it once and answers; reuse, expiry, another tenant's phone and another user's phone are
/// each refused with their own code.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct QRSessionTests {
    struct Created {
        let id: String
        let payload: String
        let watch: String
    }

    func create(_ f: OOBFixture, _ body: String = #"{"purpose":"authenticate"}"#) async throws -> Created {
        let r = await f.rp("POST", "/v1/tenants/acme/qr-sessions", json: body)
        try #require(r.status == 201, "\(r.text)")
        let o = r.object()
        return Created(
            id: try #require(o["qrSessionId"] as? String), payload: try #require(o["qrPayload"] as? String), watch: try #require(o["watchToken"] as? String))
    }

    func claim(_ f: OOBFixture, _ phone: SoftwareDevice, _ device: String, _ id: String, tenant: String = "acme") async throws -> HTTPResponse {
        try await f.device(phone, "POST", "/v1/tenants/\(tenant)/devices/\(device)/qr-sessions/\(id)/claim", json: "{}")
    }

    func decide(_ f: OOBFixture, _ phone: SoftwareDevice, _ device: String, _ id: String, _ decision: String) async throws -> HTTPResponse {
        try await f.device(phone, "POST", "/v1/tenants/acme/devices/\(device)/qr-sessions/\(id)/decision", json: try phone.qrDecision(decision, qrSessionId: id))
    }

    func watch(_ f: OOBFixture, _ c: Created, query: String = "", headers: [(name: String, value: String)] = []) async -> HTTPResponse {
        await f.h.send("GET", "/v1/tenants/acme/qr-sessions/\(c.id)?watchToken=\(c.watch)\(query)", headers: headers)
    }

    @Test func aBoundPhoneClaimsOnceAndTheAnswerReachesThePageAndTheRP() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let c = try await create(f)
        // The fixture's tenant has only an http origin: the universal link is on it.
        #expect(c.payload == "http://localhost:8080/qr/\(c.id)")
        #expect(QRPayloadType.sessionId(in: c.payload) == c.id)

        let page = await watch(f, c)
        #expect(page.status == 200 && page.object()["status"] as? String == "PENDING" && page.object()["revision"] as? Int == 1, "\(page.text)")

        let claimed = try await claim(f, phone, device, c.id)
        #expect(claimed.status == 200, "\(claimed.text)")
        #expect(claimed.object()["purpose"] as? String == "authenticate" && claimed.object()["status"] as? String == "SCANNED")
        #expect(claimed.object()["tenantName"] as? String == "Harness")
        // Single use: neither this phone nor another claims it again.
        #expect(try await claim(f, phone, device, c.id).code == "qr_session_already_used")
        let other = try SoftwareDevice()
        let otherDevice = try await f.enrol(other, as: "bob")
        let second = try await claim(f, other, otherDevice, c.id)
        #expect(second.status == 409 && second.code == "qr_session_already_used")
        // Only the device that scanned answers.
        let foreign = try await decide(f, other, otherDevice, c.id, "ACCEPT")
        #expect(foreign.status == 403 && foreign.code == "qr_session_device_refused")

        let accepted = try await decide(f, phone, device, c.id, "ACCEPT")
        #expect(accepted.status == 200 && accepted.object()["status"] as? String == "SUCCEEDED", "\(accepted.text)")
        #expect(try await decide(f, phone, device, c.id, "REJECT").code == "qr_session_already_used")

        // The page sees the outcome without the user; the RP sees whose phone it was.
        let seen = await watch(f, c)
        #expect(seen.object()["status"] as? String == "SUCCEEDED" && seen.object()["username"] == nil && seen.object()["deviceId"] == nil)
        let rp = await f.rp("GET", "/v1/tenants/acme/qr-sessions/\(c.id)").object()
        #expect(rp["username"] as? String == "alice" && rp["deviceId"] as? String == device && rp["revision"] as? Int == 3)

        let statuses = try await f.h.published().filter { $0.type == QRSessionChanged.eventType }.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? [String: Any])?["status"] as? String
        }
        #expect(statuses == ["PENDING", "SCANNED", "SUCCEEDED"])
        #expect(!(try await f.h.published()).contains { $0.type == QRSessionChanged.eventType && $0.data.contains("alice") })
    }

    /// A sign-in code's ACCEPT is the user's, not only the device's: the device proof alone
    /// (the device key, which needs no user) does not sign a user in. Without the user-auth
    /// key's signature over this session and decision, with the device key's, with one over
    /// another session or the other decision, the answer is refused and the code stays
    /// SCANNED; a REJECT needs none, and a signature anywhere else is a field refused.
    @Test func aSignInIsAcceptedOnlyWithTheUserAuthKeysSignature() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let c = try await create(f)
        #expect(try await claim(f, phone, device, c.id).status == 200)
        let path = "/v1/tenants/acme/devices/\(device)/qr-sessions/\(c.id)/decision"
        let other = try await create(f)
        let unsigned = try phone.qrDecision("ACCEPT", qrSessionId: c.id, signed: false)
        let byDeviceKey = try phone.qrDecision("ACCEPT", qrSessionId: c.id, key: phone.deviceKey)
        let forAnotherCode = try phone.qrDecision("ACCEPT", qrSessionId: other.id)
        // A REJECT's signature turned into an ACCEPT: the decision is in what is signed.
        let rejectSignature = try #require(try JSONParser.parse(Array(try phone.qrDecision("REJECT", qrSessionId: c.id, signed: true).utf8)).objectValue?["signature"]?.stringValue)
        let swapped = #"{"decision":"ACCEPT","signature":"\#(rejectSignature)"}"#
        for body in [unsigned, byDeviceKey, forAnotherCode, swapped] {
            let refused = try await f.device(phone, "POST", path, json: body)
            #expect(refused.status == 400 && refused.code == "qr_signature_invalid", "\(body): \(refused.text)")
        }
        let malformed = try await f.device(phone, "POST", path, json: #"{"decision":"ACCEPT","signature":"c2ln"}"#)
        #expect(malformed.status == 400 && malformed.code == "invalid_field", "\(malformed.text)")
        let signedReject = try await f.device(phone, "POST", path, json: try phone.qrDecision("REJECT", qrSessionId: c.id, signed: true))
        #expect(signedReject.status == 400 && signedReject.code == "invalid_field", "\(signedReject.text)")
        #expect(await f.rp("GET", "/v1/tenants/acme/qr-sessions/\(c.id)").object()["status"] as? String == "SCANNED")

        let accepted = try await f.device(phone, "POST", path, json: try phone.qrDecision("ACCEPT", qrSessionId: c.id))
        #expect(accepted.status == 200 && accepted.object()["status"] as? String == "SUCCEEDED", "\(accepted.text)")

        // A REJECT is unsigned.
        #expect(try await claim(f, phone, device, other.id).status == 200)
        let rejected = try await decide(f, phone, device, other.id, "REJECT")
        #expect(rejected.status == 200 && rejected.object()["status"] as? String == "FAILED", "\(rejected.text)")
    }

    @Test func payloadFormsCarryOnlyTheId() async throws {
        let f = try await OOBFixture.make(origins: ["https://bank.example", "http://localhost:8080"])
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        _ = try await f.enrol(phone, as: "alice")
        let universal = try await create(f, #"{"purpose":"authenticate","username":"alice","qrType":"universalLink"}"#)
        #expect(universal.payload == "https://bank.example/qr/\(universal.id)")
        let deep = try await create(f, #"{"purpose":"authenticate","qrType":"deepLink"}"#)
        #expect(deep.payload == "signet://qr/\(deep.id)")
        let compact = try await create(f, #"{"purpose":"authenticate","qrType":"compact"}"#)
        #expect(compact.payload == compact.id && QRSessionID.isValid(compact.id))
        // 128 random bits per id; the username named is in no payload.
        #expect(!universal.payload.contains("alice"))
        #expect(Set([universal.id, deep.id, compact.id]).count == 3)
        // The PNG and SVG are there (their decoding to the payload is checked by the e2e tools).
        let r = await f.rp("POST", "/v1/tenants/acme/qr-sessions", json: #"{"purpose":"authenticate","qrType":"compact"}"#)
        let pngText = try #require(r.object()["qrCodePng"] as? String)
        let png = try #require(Data(base64Encoded: pngText))
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect((r.object()["qrCodeSvg"] as? String)?.contains("<svg") == true)
    }

    @Test func longPollAndServerSentEventsAreWokenByThePhone() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let c = try await create(f)

        // Long polling: parked until the phone scans.
        let poll = Task { await watch(f, c, query: "&waitSeconds=8") }
        try await Task.sleep(for: .milliseconds(300))
        let started = ContinuousClock.now
        #expect(try await claim(f, phone, device, c.id).status == 200)
        let polled = await poll.value
        #expect(polled.object()["status"] as? String == "SCANNED", "\(polled.text)")
        #expect(ContinuousClock.now - started < .seconds(2))

        // Server-Sent Events: the first event at once, then one per change, by Last-Event-ID.
        let sse: [(name: String, value: String)] = [("Accept", "text/event-stream")]
        let first = await watch(f, c, headers: sse)
        #expect(first.header("content-type") == "text/event-stream")
        #expect(first.text.hasPrefix("retry: 1000\nid: 2\nevent: status\ndata: {") && first.text.hasSuffix("}\n\n"), "\(first.text)")
        #expect(first.text.contains(#""status":"SCANNED""#))
        let next = Task { await watch(f, c, headers: sse + [("Last-Event-ID", "2")]) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await decide(f, phone, device, c.id, "REJECT").status == 200)
        let event = await next.value
        #expect(event.text.contains("id: 3\n") && event.text.contains(#""status":"FAILED""#) && event.text.contains(#""reason":"user_rejected""#), "\(event.text)")
        // Finished and its last event seen: 204 ends the EventSource.
        let done = await watch(f, c, headers: sse + [("Last-Event-ID", "3")])
        #expect(done.status == 204 && done.body.isEmpty)
        // A wait with nothing new ends with a comment and the retry.
        let quiet = try await create(f)
        let idle = await watch(f, quiet, query: "&waitSeconds=1", headers: sse + [("Last-Event-ID", "1")])
        #expect(idle.status == 200 && idle.text == "retry: 1000\n: no change\n\n", "\(idle.text)")
        let badWait = await watch(f, c, query: "&waitSeconds=31")
        #expect(badWait.status == 400 && badWait.object()["field"] as? String == "waitSeconds")
    }

    @Test func expiryOtherTenantsAndOtherUsersAreRefused() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")

        let old = try await create(f)
        try await f.h.context.pool.withConnection { conn in
            try await conn.query("UPDATE qr_sessions SET expires_at = now() - interval '1 second' WHERE id = \(old.id)")
        }
        let late = try await claim(f, phone, device, old.id)
        #expect(late.status == 410 && late.code == "qr_session_expired")
        #expect(await watch(f, old).object()["status"] as? String == "EXPIRED")

        // The expirer marks one nobody read (with its event), and deletes it an hour later.
        let unread = try await create(f)
        try await f.h.context.pool.withConnection { conn in
            try await conn.query("UPDATE qr_sessions SET expires_at = now() - interval '1 second' WHERE id = \(unread.id)")
        }
        let expirer = ApprovalExpirer(
            context: f.h.context, devices: DeviceStore(pool: f.h.context.pool, seal: try .init(key: Array(repeating: 0, count: 32))), waiters: ApprovalWaiters())
        try await expirer.expire(now: Date())
        let events = try await f.h.published().filter { $0.type == QRSessionChanged.eventType && $0.data.contains(unread.id) }
        #expect(events.count == 2 && events.last?.data.contains("\"EXPIRED\"") == true)
        #expect(await f.rp("GET", "/v1/tenants/acme/qr-sessions/\(unread.id)").object()["revision"] as? Int == 2)
        try await expirer.expire(now: Date().addingTimeInterval(3700))
        #expect(await f.rp("GET", "/v1/tenants/acme/qr-sessions/\(unread.id)").code == "qr_session_not_found")

        // A phone of another tenant, bound there, scans acme's code.
        // (Its own key id: the harness's seed reuses acme's.)
        let globexKey = "sk_harness_9876543210abcdefghijklmnopqrstuv"
        try await f.h.consume(
            TenantUpserted(tenantId: "globex", displayName: "Globex", rpId: "localhost", origins: ["http://localhost:8080"], revision: 1, updatedAt: Date()),
            source: .registration)
        try await f.h.consume(
            TenantAPIKeyCreated(tenantId: "globex", keyId: "k_0000000000000002", keyHash: Hex.encode(SHA256.hash(Array(globexKey.utf8))), createdAt: Date()),
            source: .registration)
        let stranger = try SoftwareDevice()
        let created = try await f.device(stranger, "POST", "/v1/tenants/globex/devices", json: try stranger.upsertBody())
        let token = try #require(created.object()["deviceToken"] as? String, "\(created.text)")
        let strangerDevice = try #require(created.object()["deviceId"] as? String)
        let bound = await f.h.send(
            "POST", "/v1/tenants/globex/users/alice/devices", bearer: globexKey, json: #"{"deviceToken":"\#(token)"}"#)
        try #require(bound.status == 200, "\(bound.text)")
        let c = try await create(f)
        let crossed = try await claim(f, stranger, strangerDevice, c.id, tenant: "globex")
        #expect(crossed.status == 403 && crossed.code == "qr_session_other_tenant")
        // Nor through acme's path (the device is not acme's: its proof does not admit it).
        #expect(try await claim(f, stranger, strangerDevice, c.id).status == 401)

        // A code for alice is not bob's phone's to scan; an unbound phone scans none.
        let forAlice = try await create(f, #"{"purpose":"authenticate","username":"alice"}"#)
        let bob = try SoftwareDevice()
        let bobDevice = try await f.enrol(bob, as: "bob")
        #expect(try await claim(f, bob, bobDevice, forAlice.id).code == "qr_session_device_refused")
        let loose = try SoftwareDevice()
        let looseCreated = try await f.device(loose, "POST", "/v1/tenants/acme/devices", json: try loose.upsertBody())
        let looseDevice = try #require(looseCreated.object()["deviceId"] as? String)
        #expect(try await claim(f, loose, looseDevice, forAlice.id).code == "qr_session_device_refused")
        // Still claimable by alice's phone: the refusals changed nothing.
        #expect(try await claim(f, phone, device, forAlice.id).status == 200)
        // An unknown id, a wrong watch token.
        #expect(try await claim(f, phone, device, "qr_00000000000000000000000000000000").code == "qr_session_not_found")
        let wrong = await f.h.send("GET", "/v1/tenants/acme/qr-sessions/\(c.id)?watchToken=\(forAlice.watch)")
        #expect(wrong.status == 401)
    }

    @Test func requestsOutsideTheRulesAreRefused() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        func create(_ body: String) async -> HTTPResponse { await f.rp("POST", "/v1/tenants/acme/qr-sessions", json: body) }
        #expect(await create(#"{"purpose":"bless"}"#).code == "qr_purpose_unavailable")
        // A registration names its user, and belongs to no sign-in.
        let nameless = await create(#"{"purpose":"register"}"#)
        #expect(nameless.code == "invalid_field" && nameless.object()["field"] as? String == "username")
        let inSignIn = await create(#"{"purpose":"register","username":"alice","signinId":"si_1"}"#)
        #expect(inSignIn.code == "invalid_field" && inSignIn.object()["field"] as? String == "signinId")
        #expect(await create(#"{"purpose":"register","username":"nobody"}"#).code == "no_capable_device")
        #expect(await create(#"{"purpose":"pay"}"#).code == "invalid_field")
        #expect(await create(#"{"purpose":"authenticate","qrType":"fancy"}"#).code == "invalid_field")
        #expect(await create(#"{"purpose":"authenticate","expiresInSeconds":10}"#).code == "invalid_field")
        #expect(await create(#"{"purpose":"authenticate","signinId":"../x"}"#).code == "invalid_field")
        let nobody = await create(#"{"purpose":"authenticate","username":"nobody"}"#)
        #expect(nobody.status == 409 && nobody.code == "no_capable_device")
        #expect(await f.h.send("GET", "/v1/tenants/acme/qr-sessions/qr_00000000000000000000000000000000").status == 401)
        #expect(await f.rp("GET", "/v1/tenants/acme/qr-sessions/qr_00000000000000000000000000000000").code == "qr_session_not_found")
    }

    /// A register session's claim needs its token from the authentication service: while that
    /// service cannot answer, the claim is not made (503) and the code stays scannable.
    @Test func aRegisterClaimWithoutTheTokenIsNotMade() async throws {
        let f = try await OOBFixture.make(environment: ["SIGNET_AUTHENTICATION_URL": "http://127.0.0.1:9", "SIGNET_REGISTRATION_URL": "http://127.0.0.1:9"])
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let shown = try await create(f, #"{"purpose":"register","username":"alice"}"#)
        let claimed = try await claim(f, phone, device, shown.id)
        #expect(claimed.status == 503 && claimed.object()["registrationToken"] == nil, "\(claimed.text)")
        let read = await f.rp("GET", "/v1/tenants/acme/qr-sessions/\(shown.id)")
        #expect(read.object()["status"] as? String == "PENDING" && read.object()["revision"] as? Int == 1, "\(read.text)")
        // Another user's phone is refused before any call is made.
        let bob = try SoftwareDevice()
        let bobDevice = try await f.enrol(bob, as: "bob")
        #expect(try await claim(f, bob, bobDevice, shown.id).code == "qr_session_device_refused")
    }

    /// checkRegPossible / checkAuthPossible: bound, active, security enabled, and the tenant's
    /// qrPurposes; the claim and the creation enforce the same.
    @Test func aDeviceLearnsWhetherItCanRegisterOrSignInByQR() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        func capabilities(_ phone: SoftwareDevice, _ device: String) async throws -> [String: Any] {
            let r = try await f.device(phone, "GET", "/v1/tenants/acme/devices/\(device)/qr-capabilities")
            #expect(r.status == 200, "\(r.text)")
            return r.object()
        }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let ready = try await capabilities(phone, device)
        #expect(ready["registerPossible"] as? Bool == true && ready["authenticatePossible"] as? Bool == true && (ready["reasons"] as? [String]) == [])
        // Unbound: neither.
        let loose = try SoftwareDevice()
        let looseCreated = try await f.device(loose, "POST", "/v1/tenants/acme/devices", json: try loose.upsertBody())
        let looseDevice = try #require(looseCreated.object()["deviceId"] as? String)
        let unbound = try await capabilities(loose, looseDevice)
        #expect(unbound["registerPossible"] as? Bool == false && unbound["authenticatePossible"] as? Bool == false)
        #expect(unbound["reasons"] as? [String] == ["device_not_bound"])
        // Security disabled: neither, and its claim is refused.
        let plain = try SoftwareDevice()
        let plainDevice = try await f.enrol(plain, as: "bob", security: false)
        let disabled = try await capabilities(plain, plainDevice)
        #expect(disabled["authenticatePossible"] as? Bool == false && disabled["reasons"] as? [String] == ["security_disabled"])
        let code = try await create(f)
        #expect(try await claim(f, plain, plainDevice, code.id).code == "qr_session_device_refused")
        // The tenant offers sign-in only: register is refused at creation and reported.
        let admin = ServiceHarness<OOBService>.adminToken
        let put = await f.h.send(
            "PUT", "/v1/admin/tenants/acme/app-settings", bearer: admin, json: #"{"domains":[],"iosAppIds":[],"androidApps":[],"qrPurposes":["authenticate"]}"#)
        #expect(put.status == 200 || put.status == 201, "\(put.text)")
        let signInOnly = try await capabilities(phone, device)
        #expect(signInOnly["registerPossible"] as? Bool == false && signInOnly["authenticatePossible"] as? Bool == true)
        #expect(signInOnly["reasons"] as? [String] == ["register_not_allowed"])
        let refused = await f.rp("POST", "/v1/tenants/acme/qr-sessions", json: #"{"purpose":"register","username":"alice"}"#)
        #expect(refused.status == 403 && refused.code == "qr_purpose_not_allowed", "\(refused.text)")
        #expect(try await claim(f, phone, device, try await create(f).id).status == 200)
        let bad = await f.h.send(
            "PUT", "/v1/admin/tenants/acme/app-settings", bearer: admin, json: #"{"domains":[],"iosAppIds":[],"androidApps":[],"qrPurposes":["pay"]}"#)
        #expect(bad.code == "invalid_field" && bad.object()["field"] as? String == "qrPurposes", "\(bad.text)")
        // Another device's capabilities are not this phone's to read (its proof does not admit it).
        #expect(try await f.device(phone, "GET", "/v1/tenants/acme/devices/\(plainDevice)/qr-capabilities").status == 401)
    }

    @Test func theUsersSessionsAreExportedAndErased() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let named = try await create(f, #"{"purpose":"authenticate","username":"alice"}"#)
        let scanned = try await create(f)
        #expect(try await claim(f, phone, device, scanned.id).status == 200)
        let unrelated = try await create(f)
        let subject = UserDataSubject(tenant: "acme", username: "alice", subject: nil, key: f.h.context.configuration.subjectKey)
        let exported = try await f.h.context.pool.withConnection { try await OOBUserData().export(subject, reader: "test", on: $0) }
        let text = String(decoding: try JSONValueEncoder().encodeToBytes(exported), as: UTF8.self)
        #expect(text.contains(named.id) && text.contains(scanned.id) && !text.contains(unrelated.id))
        let tallies = try await f.h.context.withTransaction { try await OOBUserData().erase(subject, on: $0) }
        #expect(tallies["qrSessions"] == 2)
        let left = try await f.h.context.pool.withConnection { try await $0.query("SELECT id FROM qr_sessions") }.compactMap { $0.string("id") }
        #expect(left == [unrelated.id])
    }
}

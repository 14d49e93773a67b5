import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import OOBService

/// Approvals in process, over a scratch database: an RP asks, the bound software phone lists,
/// reads and answers with the key the level needs; every status and every already-finished
/// error; expiry; number matching; long polling woken by the answer.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct ApprovalTests {
    struct Asked {
        let id: String
        let hash: String
        let number: Int?
    }

    func ask(_ f: OOBFixture, _ body: String) async throws -> Asked {
        let r = await f.rp("POST", "/v1/tenants/acme/approvals", json: body)
        try #require(r.status == 201, "\(r.text)")
        let o = r.object()
        #expect(o["status"] as? String == "IN_PROGRESS")
        return Asked(id: try #require(o["approvalId"] as? String), hash: try #require(o["detailsHash"] as? String), number: o["number"] as? Int)
    }

    func answer(
        _ f: OOBFixture, _ phone: SoftwareDevice, _ device: String, _ a: Asked, _ decision: String, number: Int? = nil, userAuth: Bool = false
    ) async throws -> HTTPResponse {
        try await f.device(
            phone, "POST", "/v1/tenants/acme/devices/\(device)/approvals/\(a.id)/decision",
            json: try phone.decision(decision, approvalId: a.id, detailsHash: a.hash, number: number, withUserAuthKey: userAuth))
    }

    func status(_ f: OOBFixture, _ a: Asked) async -> [String: Any] {
        await f.rp("GET", "/v1/tenants/acme/approvals/\(a.id)").object()
    }

    /// The create-or-update call is proven by the device key alone (no user presence): a new
    /// user-auth key it brings unbinds a bound device, which then answers none of the user's
    /// approvals until the RP binds it again; the same key again, or none, keeps the binding.
    @Test func aNewUserAuthKeyUnbindsTheDeviceUntilTheRPBindsItAgain() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let a = try await ask(f, #"{"username":"alice","level":"ESSENTIAL","action":"pay","resource":"x"}"#)
        let path = "/v1/tenants/acme/devices"
        let same = try await f.device(phone, "POST", path, json: try phone.upsertBody())
        #expect(same.object()["status"] as? String == "activeDevice" && same.object()["bound"] as? Bool == true, "\(same.text)")

        let swapped = try phone.withNewUserAuthKey()
        let changed = try await f.device(swapped, "POST", path, json: try swapped.upsertBody())
        #expect(changed.status == 200 && changed.object()["deviceId"] as? String == device, "\(changed.text)")
        #expect(changed.object()["status"] as? String == "securityEnabled" && changed.object()["bound"] as? Bool == false)
        // Neither the new key nor the old one answers for alice now.
        #expect(try await answer(f, swapped, device, a, "ACCEPT", userAuth: true).code == "approval_not_found")
        #expect(try await answer(f, phone, device, a, "ACCEPT", userAuth: true).code == "approval_not_found")
        #expect(await status(f, a)["status"] as? String == "IN_PROGRESS")
        let listed = await f.rp("GET", "/v1/tenants/acme/users/alice/devices")
        #expect((listed.object()["devices"] as? [Any])?.isEmpty == true, "\(listed.text)")

        // The RP, having authenticated alice, binds it again: the new key answers.
        let token = try #require(changed.object()["deviceToken"] as? String)
        #expect(await f.rp("POST", "/v1/tenants/acme/users/alice/devices", json: #"{"deviceToken":"\#(token)"}"#).status == 200)
        let accepted = try await answer(f, swapped, device, a, "ACCEPT", userAuth: true)
        #expect(accepted.status == 200 && accepted.object()["status"] as? String == "ACCEPTED", "\(accepted.text)")

        // Dropping the key keeps the binding: the device answers less, not more.
        let dropped = try await f.device(swapped, "POST", path, json: try swapped.upsertBody(security: false))
        #expect(dropped.object()["status"] as? String == "securityDisabled" && dropped.object()["bound"] as? Bool == true, "\(dropped.text)")
        // Adding one back to the bound device unbinds it again.
        let added = try await f.device(swapped, "POST", path, json: try swapped.upsertBody())
        #expect(added.object()["status"] as? String == "securityEnabled" && added.object()["bound"] as? Bool == false, "\(added.text)")

        let changes = try await f.h.published().filter { $0.type == DeviceChanged.eventType }.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? [String: Any])?["change"] as? String
        }
        #expect(changes == ["created", "bound", "updated", "unbound", "bound", "updated", "unbound"])
    }

    @Test func entryIsAcceptedWithTheDeviceKeyOnceAndOnlyOnce() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        try await f.allowDynamicText()
        let a = try await ask(f, #"{"username":"alice","level":"ENTRY","action":"login","resource":"web","text":"Sign in?","customFields":{"b":"2","a":"1"}}"#)
        // The hash is SHA-256 of the canonical details, which the device can recompute.
        let canonical = ApprovalDetails(level: "ENTRY", action: "login", resource: "web", text: "Sign in?", customFields: ["a": "1", "b": "2"]).canonicalJSON
        #expect(canonical == #"{"action":"login","customFields":{"a":"1","b":"2"},"level":"ENTRY","resource":"web","text":"Sign in?"}"#)

        let pending = try await f.device(phone, "GET", "/v1/tenants/acme/devices/\(device)/approvals?status=pending")
        let list = try #require(pending.object()["approvals"] as? [[String: Any]], "\(pending.text)")
        #expect(list.map { $0["approvalId"] as? String } == [a.id])
        let one = try await f.device(phone, "GET", "/v1/tenants/acme/devices/\(device)/approvals/\(a.id)")
        #expect(one.status == 200 && (one.object()["detailsHash"] as? String) == a.hash)

        let accepted = try await answer(f, phone, device, a, "ACCEPT")
        #expect(accepted.status == 200 && (accepted.object()["status"] as? String) == "ACCEPTED", "\(accepted.text)")
        let seen = await status(f, a)
        #expect(seen["status"] as? String == "ACCEPTED" && seen["decidedLevel"] as? String == "ENTRY" && seen["decidedDeviceId"] as? String == device)
        #expect(try await answer(f, phone, device, a, "ACCEPT").code == "approval_already_accepted")
        #expect(try await answer(f, phone, device, a, "REJECT").code == "approval_already_accepted")
        #expect(await f.rp("POST", "/v1/tenants/acme/approvals/\(a.id)/cancel").code == "approval_already_accepted")
        let empty = try await f.device(phone, "GET", "/v1/tenants/acme/devices/\(device)/approvals?status=pending")
        #expect((empty.object()["approvals"] as? [Any])?.isEmpty == true)
        let statuses = try await f.h.published().filter { $0.type == ApprovalChanged.eventType }.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? [String: Any])?["status"] as? String
        }
        #expect(statuses == ["IN_PROGRESS", "ACCEPTED"])
        // The events carry the hash, not the text the user saw.
        #expect(!(try await f.h.published()).contains { $0.data.contains("Sign in?") })
        // They name alice by subject reference, never by username (#18).
        let approvalEvents = try await f.h.published().filter { $0.type == ApprovalChanged.eventType }
        let aliceRef = f.h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice")
        #expect(approvalEvents.allSatisfy { $0.data.contains(aliceRef) && !$0.data.contains("alice") })
    }

    @Test func essentialNeedsTheUserAuthKeyAndEntryAnsweredWithItIsHigher() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let essential = try await ask(f, #"{"username":"alice","level":"ESSENTIAL","action":"pay","resource":"account"}"#)
        let low = try await answer(f, phone, device, essential, "ACCEPT")
        #expect(low.status == 400 && low.code == "approval_signature_invalid")
        #expect(await status(f, essential)["status"] as? String == "IN_PROGRESS")
        let ok = try await answer(f, phone, device, essential, "ACCEPT", userAuth: true)
        #expect((ok.object()["status"] as? String) == "ACCEPTED", "\(ok.text)")
        #expect(await status(f, essential)["decidedLevel"] as? String == "ESSENTIAL")

        let entry = try await ask(f, #"{"deviceId":"\#(device)","level":"ENTRY","action":"login","resource":"web"}"#)
        let higher = try await answer(f, phone, device, entry, "ACCEPT", userAuth: true)
        #expect((higher.object()["status"] as? String) == "ACCEPTED_AT_HIGHER_LEVEL", "\(higher.text)")

        // A signature over something else (here: the other decision) changes nothing.
        let third = try await ask(f, #"{"username":"alice","level":"ENTRY","action":"login","resource":"web"}"#)
        var forged = try phone.decision("REJECT", approvalId: third.id, detailsHash: third.hash)
        forged = forged.replacingOccurrences(of: "\"REJECT\"", with: "\"ACCEPT\"")
        let refused = try await f.device(phone, "POST", "/v1/tenants/acme/devices/\(device)/approvals/\(third.id)/decision", json: forged)
        #expect(refused.code == "approval_signature_invalid")
        #expect(await status(f, third)["status"] as? String == "IN_PROGRESS")

        // A phone without its security on cannot be asked at ESSENTIAL.
        let plain = try SoftwareDevice()
        _ = try await f.enrol(plain, as: "bob", security: false)
        let none = await f.rp("POST", "/v1/tenants/acme/approvals", json: #"{"username":"bob","level":"ESSENTIAL","action":"pay","resource":"x"}"#)
        #expect(none.status == 409 && none.code == "no_capable_device")
    }

    @Test func rejectCancelAndExpiryEachAnswerTheirOwnError() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let body = #"{"username":"alice","level":"ENTRY","action":"login","resource":"web","expiresInSeconds":60}"#

        let rejected = try await ask(f, body)
        #expect(try await answer(f, phone, device, rejected, "REJECT").object()["status"] as? String == "REJECTED")
        #expect(await status(f, rejected)["reason"] as? String == "user_rejected")
        #expect(try await answer(f, phone, device, rejected, "ACCEPT").code == "approval_already_rejected")
        #expect(await f.rp("POST", "/v1/tenants/acme/approvals/\(rejected.id)/cancel").code == "approval_already_rejected")

        let cancelled = try await ask(f, body)
        let cancel = await f.rp("POST", "/v1/tenants/acme/approvals/\(cancelled.id)/cancel")
        #expect(cancel.status == 200 && (cancel.object()["status"] as? String) == "CANCELLED")
        #expect(try await answer(f, phone, device, cancelled, "ACCEPT").code == "approval_already_cancelled")
        #expect(await f.rp("POST", "/v1/tenants/acme/approvals/\(cancelled.id)/cancel").code == "approval_already_cancelled")

        let expired = try await ask(f, body)
        try await f.h.context.pool.withConnection { conn in
            try await conn.query("UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = \(expired.id)")
        }
        // Not offered any more, refused with its own error, and seen EXPIRED by the RP.
        let pending = try await f.device(phone, "GET", "/v1/tenants/acme/devices/\(device)/approvals")
        #expect((pending.object()["approvals"] as? [Any])?.isEmpty == true)
        #expect(try await answer(f, phone, device, expired, "ACCEPT").code == "approval_expired")
        #expect(await status(f, expired)["status"] as? String == "EXPIRED")
        #expect(await f.rp("POST", "/v1/tenants/acme/approvals/\(expired.id)/cancel").code == "approval_expired")

        // The expirer marks one nobody looked at.
        let unseen = try await ask(f, body)
        try await f.h.context.pool.withConnection { conn in
            try await conn.query("UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = \(unseen.id)")
        }
        try await ApprovalExpirer(context: f.h.context, devices: DeviceStore(pool: f.h.context.pool, seal: try .init(key: Array(repeating: 0, count: 32))), waiters: ApprovalWaiters())
            .expire(now: Date())
        let events = try await f.h.published().filter { $0.type == ApprovalChanged.eventType && $0.data.contains(unseen.id) }
        #expect(events.count == 2 && events.last?.data.contains("\"EXPIRED\"") == true)
        // Finished approvals are deleted after the retention; those in progress are not.
        let open = try await ask(f, #"{"username":"alice","level":"ENTRY","action":"login","resource":"web","expiresInSeconds":3600}"#)
        try await ApprovalExpirer(
            context: f.h.context, devices: DeviceStore(pool: f.h.context.pool, seal: try .init(key: Array(repeating: 0, count: 32))), waiters: ApprovalWaiters(),
            retention: 60
        ).expire(now: Date().addingTimeInterval(120))
        #expect(await f.rp("GET", "/v1/tenants/acme/approvals/\(unseen.id)").code == "approval_not_found")
        #expect(await f.rp("GET", "/v1/tenants/acme/approvals/\(rejected.id)").code == "approval_not_found")
        #expect(await f.rp("GET", "/v1/tenants/acme/approvals/\(open.id)").status == 200)
    }

    @Test func numberMatchingAcceptsTheRightNumberAndAWrongOneRejects() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let body = #"{"username":"alice","level":"ENTRY","action":"login","resource":"web","numberMatching":true}"#
        let right = try await ask(f, body)
        let number = try #require(right.number)
        #expect((10...99).contains(number))
        // The device is never told the number.
        let shown = try await f.device(phone, "GET", "/v1/tenants/acme/devices/\(device)/approvals/\(right.id)")
        #expect((shown.object()["numberMatching"] as? Bool) == true && (shown.object()["number"]) == nil)
        #expect(try await answer(f, phone, device, right, "ACCEPT", number: number).object()["status"] as? String == "ACCEPTED")

        let wrong = try await ask(f, body)
        let guess = try #require(wrong.number) == 10 ? 11 : 10
        let answered = try await answer(f, phone, device, wrong, "ACCEPT", number: guess)
        #expect((answered.object()["status"] as? String) == "REJECTED")
        #expect(await status(f, wrong)["reason"] as? String == "number_mismatch")
        let missing = try await ask(f, body)
        #expect(try await answer(f, phone, device, missing, "ACCEPT").object()["status"] as? String == "REJECTED")
        let mismatches = try await f.h.published().filter { $0.type == ApprovalChanged.eventType && $0.data.contains("number_mismatch") }
        #expect(mismatches.count == 2)
    }

    @Test func aLongPollIsAnsweredByTheDecision() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let a = try await ask(f, #"{"username":"alice","level":"ENTRY","action":"login","resource":"web"}"#)
        let poll = Task { await f.rp("GET", "/v1/tenants/acme/approvals/\(a.id)?waitSeconds=8") }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await answer(f, phone, device, a, "ACCEPT").status == 200)
        let answered = await poll.value
        #expect(answered.status == 200 && (answered.object()["status"] as? String) == "ACCEPTED", "\(answered.text)")
        // Finished approvals answer at once; the wait is bounded.
        #expect(await f.rp("GET", "/v1/tenants/acme/approvals/\(a.id)?waitSeconds=30").object()["status"] as? String == "ACCEPTED")
        let tooLong = await f.rp("GET", "/v1/tenants/acme/approvals/\(a.id)?waitSeconds=31")
        #expect(tooLong.status == 400 && (tooLong.object()["field"] as? String) == "waitSeconds")
    }

    /// A long poll refused by its read (an unknown approval or QR session) leaves no waiter
    /// behind: each used to leave one, keyed by the id its path named, for good.
    @Test func refusedLongPollsLeaveNoWaiterBehind() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let waiters = try f.deliveries.waiters
        for i in 0..<4 {
            let approval = await f.rp("GET", "/v1/tenants/acme/approvals/ap_\(String(repeating: "\(i)", count: 32))?waitSeconds=1")
            #expect(approval.status == 404, "\(approval.text)")
            let session = await f.rp("GET", "/v1/tenants/acme/qr-sessions/qr_\(String(repeating: "\(i)", count: 32))?waitSeconds=1")
            #expect(session.status == 404, "\(session.text)")
        }
        #expect(await waiters.count == 0)
    }

    @Test func waitersWakeOnNotifyAndOnTimeout() async throws {
        let waiters = ApprovalWaiters()
        let woken = await waiters.register("ap_1")
        let other = await waiters.register("ap_2")
        let task = Task { await waiters.wait(woken, timeout: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(50))
        waiters.notify("ap_1")
        await task.value
        // A notification before the wait is not lost.
        let early = await waiters.register("ap_3")
        waiters.notify("ap_3")
        try await Task.sleep(for: .milliseconds(50))
        await waiters.wait(early, timeout: .seconds(60))
        await waiters.wait(other, timeout: .milliseconds(10))
        #expect(await waiters.count == 0)
    }

    @Test func requestsOutsideTheRulesAreRefused() async throws {
        let f = try await OOBFixture.make()
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let stranger = try SoftwareDevice()
        let strangerDevice = try await f.enrol(stranger, as: "mallory")
        func create(_ body: String) async -> HTTPResponse { await f.rp("POST", "/v1/tenants/acme/approvals", json: body) }
        #expect(await create(#"{"username":"alice","deviceId":"\#(device)","level":"ENTRY","action":"a","resource":"r"}"#).code == "invalid_field")
        #expect(await create(#"{"level":"ENTRY","action":"a","resource":"r"}"#).code == "invalid_field")
        // EXECUTIVE is asked of a device with a user-auth key (the document is checked at the answer).
        let executive = await create(#"{"username":"alice","level":"EXECUTIVE","action":"a","resource":"r"}"#)
        #expect(executive.status == 201, "\(executive.text)")
        if let id = executive.object()["approvalId"] as? String { _ = await f.rp("POST", "/v1/tenants/acme/approvals/\(id)/cancel") }
        #expect(await create(#"{"username":"alice","level":"HIGH","action":"a","resource":"r"}"#).code == "invalid_field")
        #expect(await create(#"{"username":"alice","level":"ENTRY","action":"","resource":"r"}"#).code == "invalid_field")
        // What the device shows: no bidirectional override (the payee read backwards), no
        // invisible or C1 character, in the action, resource, text or a custom field's value.
        for shown in [#""action":"pay \u202Eeve","resource":"r""#, #""action":"a","resource":"acc\u200Bount""#,
            #""action":"a","resource":"r","text":"line\u0085two""#, #""action":"a","resource":"r","customFields":{"payee":"bob\u2066"}"#]
        {
            let refused = await create(#"{"username":"alice","level":"ENTRY",\#(shown)}"#)
            #expect(refused.status == 400 && refused.code == "invalid_field", "\(shown): \(refused.text)")
        }
        // A transaction's text has lines (oob_push asks with it): accepted, as is any script.
        try await f.allowDynamicText()
        let shownWell = await create(#"{"username":"alice","level":"ENTRY","action":"Überweisung","resource":"r","text":"Pay 10.00 EUR\nto Bob","customFields":{"note":"two\nlines","empty":""}}"#)
        #expect(shownWell.status == 201, "\(shownWell.text)")
        if let id = shownWell.object()["approvalId"] as? String { _ = await f.rp("POST", "/v1/tenants/acme/approvals/\(id)/cancel") }
        #expect(await create(#"{"username":"alice","level":"ENTRY","action":"a","resource":"r","expiresInSeconds":5}"#).code == "invalid_field")
        #expect(await create(#"{"username":"nobody","level":"ENTRY","action":"a","resource":"r"}"#).code == "no_capable_device")
        #expect(await f.rp("GET", "/v1/tenants/acme/approvals/ap_00000000000000000000000000000000").code == "approval_not_found")
        // Another user's device neither sees nor answers alice's approval.
        let a = try await ask(f, #"{"username":"alice","level":"ENTRY","action":"login","resource":"web"}"#)
        let peek = try await f.device(stranger, "GET", "/v1/tenants/acme/devices/\(strangerDevice)/approvals/\(a.id)")
        #expect(peek.code == "approval_not_found")
        #expect(try await answer(f, stranger, strangerDevice, a, "ACCEPT").code == "approval_not_found")
        // Nor does alice's phone with mallory's device id in the path (the proof names the key).
        #expect(try await answer(f, phone, strangerDevice, a, "ACCEPT").status == 401)
        // An approval asked of one device is not offered to another of the same user.
        let second = try SoftwareDevice()
        let secondDevice = try await f.enrol(second, as: "alice")
        let targeted = try await ask(f, #"{"deviceId":"\#(device)","level":"ENTRY","action":"login","resource":"web"}"#)
        #expect(try await answer(f, second, secondDevice, targeted, "ACCEPT").code == "approval_not_found")
        let onlyMine = try await f.device(second, "GET", "/v1/tenants/acme/devices/\(secondDevice)/approvals?currentDeviceOnly=true")
        #expect((onlyMine.object()["approvals"] as? [Any])?.isEmpty == true)
        let all = try await f.device(second, "GET", "/v1/tenants/acme/devices/\(secondDevice)/approvals")
        #expect((all.object()["approvals"] as? [[String: Any]])?.map { $0["approvalId"] as? String } == [a.id])
    }
}

import Crypto
import Foundation
import Schema
import Testing
import TestSupport

/// Device blessing (#17) through the running stack, with two software devices playing both
/// ways: `registerQr` (the old, bound device shows the code, a new device scans it) and
/// `authenticateQr` (the new device shows it, the old one scans it). Either way the old
/// device's user approves with its user-auth key, the new device then gets a registration-only
/// token, registers a passkey, answers ACCEPT naming it, and is bound to the user; both devices
/// see the outcome by long polling. Refusals: another tenant's device, a device of the wrong
/// kind, a wrong signature, the old device rejecting, reuse and expiry.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct DeviceBlessingStackTests {
    static let oob = OOBApprovalStackTests.oob
    let adaptive = AdaptiveSignInStackTests()
    let approvals = OOBApprovalStackTests()
    let qr = QRRegistrationStackTests()

    typealias Tenant = AdaptiveSignInStackTests.Tenant

    /// A device created but bound to nobody (the new phone): its id.
    static func newDevice(_ phone: SoftwareDevice, _ t: Tenant) async throws -> String {
        let created = try await OOBApprovalStackTests.device(phone, "POST", "/v1/tenants/\(t.id)/devices", json: try phone.upsertBody())
        try #require(created.status == 201, "\(created.text)")
        return try #require(created.fields["deviceId"] as? String)
    }

    /// `device` shows a blessing code: its id and payload.
    static func show(_ phone: SoftwareDevice, _ device: String, _ t: Tenant, mode: String, lifetime: Int = 120) async throws -> (String, String) {
        let r = try await OOBApprovalStackTests.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/bless-sessions", json: #"{"mode":"\#(mode)","qrType":"deepLink","expiresInSeconds":\#(lifetime)}"#)
        try #require(r.status == 201, "\(r.text)")
        #expect(r.fields["purpose"] as? String == "bless")
        return (try #require(r.fields["qrSessionId"] as? String), try #require(r.fields["qrPayload"] as? String))
    }

    static func scan(_ phone: SoftwareDevice, _ device: String, _ t: Tenant, payload: String) async throws -> TestHTTP.Response {
        try await BoundPhone.scan(phone, device, t, payload: payload)
    }

    static func read(_ phone: SoftwareDevice, _ device: String, _ t: Tenant, _ id: String, query: String = "") async throws -> TestHTTP.Response {
        try await OOBApprovalStackTests.device(phone, "GET", "/v1/tenants/\(t.id)/devices/\(device)/qr-sessions/\(id)\(query)")
    }

    /// The old device's signed answer; `key` other than its user-auth key for refusals.
    static func approve(
        _ phone: SoftwareDevice, _ device: String, _ t: Tenant, _ id: String, newDevice: String, decision: String = "ACCEPT", key: PrivateKey? = nil
    ) async throws -> TestHTTP.Response {
        let der = try (key ?? phone.userAuthKey).sign(QRBlessSignature.message(qrSessionId: id, newDeviceId: newDevice, decision: decision), algorithm: .es256)
        let raw = try #require(ECDSASignature.raw(fromDER: der, size: 32))
        return try await OOBApprovalStackTests.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/qr-sessions/\(id)/approval",
            json: #"{"decision":"\#(decision)","signature":"\#(Base64URL.encode(raw))"}"#)
    }

    static func answer(_ phone: SoftwareDevice, _ device: String, _ t: Tenant, _ id: String, _ json: String) async throws -> TestHTTP.Response {
        try await OOBApprovalStackTests.device(phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/qr-sessions/\(id)/decision", json: json)
    }

    /// The user's bound devices, by the RP.
    static func boundDevices(_ t: Tenant, _ username: String) async throws -> [String] {
        let list = try await TestHTTP.send("GET", "\(oob)/v1/tenants/\(t.id)/users/\(username)/devices", headers: ["Authorization": "Bearer \(t.key)"])
        return (list.fields["devices"] as? [[String: Any]])?.compactMap { $0["deviceId"] as? String } ?? []
    }

    /// From APPROVED on, the same either way: the new device's view carries the token; it
    /// registers, answers ACCEPT and is bound; the old device sees SUCCEEDED.
    func finish(
        _ t: Tenant, username: String, id: String, old: (SoftwareDevice, String), new: (SoftwareDevice, String), newRevision: Int
    ) async throws {
        let view = try await Self.read(new.0, new.1, t, id, query: "?waitSeconds=6&sinceRevision=\(newRevision)")
        #expect(view.fields["status"] as? String == "APPROVED" && view.fields["username"] as? String == username, "\(view.text)")
        let token = try #require(view.fields["registrationToken"] as? String, "\(view.text)")
        // The old device's view of the same state carries no token.
        let oldView = try await Self.read(old.0, old.1, t, id)
        #expect(oldView.fields["status"] as? String == "APPROVED" && oldView.fields["registrationToken"] == nil, "\(oldView.text)")

        let (credentialId, _) = try await qr.registerPasskey(t, username: username, token: token)
        let oldPoll = Task { try await Self.read(old.0, old.1, t, id, query: "?waitSeconds=6&sinceRevision=\(newRevision + 1)") }
        try await Task.sleep(for: .milliseconds(300))
        let done = try await Self.answer(new.0, new.1, t, id, #"{"decision":"ACCEPT","credentialId":"\#(credentialId)"}"#)
        #expect(done.status == 200 && done.fields["status"] as? String == "SUCCEEDED" && done.fields["credentialId"] as? String == credentialId, "\(done.text)")
        let seen = try await oldPoll.value
        #expect(seen.fields["status"] as? String == "SUCCEEDED" && seen.fields["newDeviceId"] as? String == new.1, "\(seen.text)")
        #expect(Set(try await Self.boundDevices(t, username)) == [old.1, new.1])
        // The new device, now the user's, can itself scan codes for them (capabilities).
        let caps = try await OOBApprovalStackTests.device(new.0, "GET", "/v1/tenants/\(t.id)/devices/\(new.1)/qr-capabilities")
        #expect(caps.fields["registerPossible"] as? Bool == true, "\(caps.text)")
    }

    @Test func registerQrTheOldDeviceShowsTheNewOneScansAndIsBlessed() async throws {
        let bound = try await BoundPhone.make("bless", platform: "ios")
        let (t, username, old, oldId) = (bound.tenant, bound.username, bound.phone, bound.device)
        let new = try SoftwareDevice(platform: "android")
        let newId = try await Self.newDevice(new, t)

        let (id, payload) = try await Self.show(old, oldId, t, mode: QRBlessMode.registerQr)
        #expect(payload == "signet://qr/\(id)" && !payload.contains(username))
        // The old device waits for the scan.
        let oldPoll = Task { try await Self.read(old, oldId, t, id, query: "?waitSeconds=6&sinceRevision=1") }
        try await Task.sleep(for: .milliseconds(300))
        let claimed = try await Self.scan(new, newId, t, payload: payload)
        #expect(claimed.status == 200 && claimed.fields["status"] as? String == "SCANNED" && claimed.fields["registrationToken"] == nil, "\(claimed.text)")
        #expect(claimed.fields["username"] == nil)
        let scanned = try await oldPoll.value
        #expect(scanned.fields["status"] as? String == "SCANNED" && scanned.fields["newDeviceId"] as? String == newId, "\(scanned.text)")
        #expect(scanned.fields["newDevicePlatform"] as? String == "android")
        // Before the approval: no token, and no ACCEPT.
        let early = try await Self.read(new, newId, t, id)
        #expect(early.fields["status"] as? String == "SCANNED" && early.fields["registrationToken"] == nil && early.fields["username"] == nil, "\(early.text)")
        let bogus = Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        let tooSoon = try await Self.answer(new, newId, t, id, #"{"decision":"ACCEPT","credentialId":"\#(bogus)"}"#)
        #expect(tooSoon.status == 409 && tooSoon.fields["code"] as? String == "qr_bless_not_approved", "\(tooSoon.text)")
        // The new device cannot approve itself; the device key is not the user's presence.
        let selfApproved = try await Self.approve(new, newId, t, id, newDevice: newId)
        #expect(selfApproved.status == 403 && selfApproved.fields["code"] as? String == "qr_session_device_refused", "\(selfApproved.text)")
        let deviceKeyOnly = try await Self.approve(old, oldId, t, id, newDevice: newId, key: old.deviceKey)
        #expect(deviceKeyOnly.status == 400 && deviceKeyOnly.fields["code"] as? String == "qr_bless_signature_invalid", "\(deviceKeyOnly.text)")
        // A signature for another new device does not verify for this one.
        let otherDevice = try await Self.approve(old, oldId, t, id, newDevice: oldId)
        #expect(otherDevice.status == 400 && otherDevice.fields["code"] as? String == "qr_bless_signature_invalid", "\(otherDevice.text)")

        let approved = try await Self.approve(old, oldId, t, id, newDevice: newId)
        #expect(approved.status == 200 && approved.fields["status"] as? String == "APPROVED" && approved.fields["registrationToken"] == nil, "\(approved.text)")
        try await finish(t, username: username, id: id, old: (old, oldId), new: (new, newId), newRevision: 2)

        // Single use: another new device scanning the same code is refused.
        let late = try SoftwareDevice(platform: "ios")
        let lateId = try await Self.newDevice(late, t)
        let reused = try await Self.scan(late, lateId, t, payload: payload)
        #expect(reused.status == 409 && reused.fields["code"] as? String == "qr_session_already_used", "\(reused.text)")
        // Only the blessing's two devices read it.
        let stranger = try await Self.read(late, lateId, t, id)
        #expect(stranger.status == 404 && stranger.fields["code"] as? String == "qr_session_not_found", "\(stranger.text)")
    }

    @Test func authenticateQrTheNewDeviceShowsTheOldOneScansAndApproves() async throws {
        let bound = try await BoundPhone.make("bless", platform: "android")
        let (t, username, old, oldId) = (bound.tenant, bound.username, bound.phone, bound.device)
        let new = try SoftwareDevice(platform: "ios")
        let newId = try await Self.newDevice(new, t)

        let (id, payload) = try await Self.show(new, newId, t, mode: QRBlessMode.authenticateQr)
        let newPoll = Task { try await Self.read(new, newId, t, id, query: "?waitSeconds=6&sinceRevision=1") }
        try await Task.sleep(for: .milliseconds(300))
        let claimed = try await Self.scan(old, oldId, t, payload: payload)
        #expect(claimed.status == 200 && claimed.fields["purpose"] as? String == "bless" && claimed.fields["status"] as? String == "SCANNED", "\(claimed.text)")
        let scanned = try await newPoll.value
        #expect(scanned.fields["status"] as? String == "SCANNED" && scanned.fields["registrationToken"] == nil, "\(scanned.text)")
        // The old device learns which device it lets in.
        let oldView = try await Self.read(old, oldId, t, id)
        #expect(oldView.fields["newDeviceId"] as? String == newId && oldView.fields["newDevicePlatform"] as? String == "ios", "\(oldView.text)")

        let approved = try await Self.approve(old, oldId, t, id, newDevice: newId)
        #expect(approved.status == 200 && approved.fields["status"] as? String == "APPROVED", "\(approved.text)")
        try await finish(t, username: username, id: id, old: (old, oldId), new: (new, newId), newRevision: 2)
        // Answered: a second approval is refused.
        let again = try await Self.approve(old, oldId, t, id, newDevice: newId)
        #expect(again.status == 409 && again.fields["code"] as? String == "qr_session_already_used", "\(again.text)")
    }

    @Test func refusalsOtherTenantWrongDevicesRejectionAndExpiry() async throws {
        let bound = try await BoundPhone.make("bless", platform: "ios")
        let (t, username, old, oldId) = (bound.tenant, bound.username, bound.phone, bound.device)
        let new = try SoftwareDevice(platform: "android")
        let newId = try await Self.newDevice(new, t)
        // Created first, so that its 30 s run out while the rest is tested.
        let (shortId, shortPayload) = try await Self.show(old, oldId, t, mode: QRBlessMode.registerQr, lifetime: 30)
        let started = ContinuousClock.now

        // The RP's route does not make blessings; each mode has its kind of creator.
        let byRP = try await TestHTTP.json("POST", "\(Self.oob)/v1/tenants/\(t.id)/qr-sessions", token: t.key, json: #"{"purpose":"bless"}"#)
        #expect(byRP.status == 400 && byRP.fields["code"] as? String == "qr_purpose_unavailable", "\(byRP.text)")
        let unboundShows = try await OOBApprovalStackTests.device(
            new, "POST", "/v1/tenants/\(t.id)/devices/\(newId)/bless-sessions", json: #"{"mode":"registerQr"}"#)
        #expect(unboundShows.status == 403 && unboundShows.fields["code"] as? String == "qr_session_device_refused", "\(unboundShows.text)")
        let boundAsks = try await OOBApprovalStackTests.device(
            old, "POST", "/v1/tenants/\(t.id)/devices/\(oldId)/bless-sessions", json: #"{"mode":"authenticateQr"}"#)
        #expect(boundAsks.status == 403 && boundAsks.fields["code"] as? String == "qr_session_device_refused", "\(boundAsks.text)")
        let badMode = try await OOBApprovalStackTests.device(old, "POST", "/v1/tenants/\(t.id)/devices/\(oldId)/bless-sessions", json: #"{"mode":"both"}"#)
        #expect(badMode.status == 400 && badMode.fields["field"] as? String == "mode", "\(badMode.text)")

        // Another tenant's device cannot scan the code (new device or old one).
        let (id, payload) = try await Self.show(old, oldId, t, mode: QRBlessMode.registerQr)
        let other = try await adaptive.tenant()
        await approvals.waitForOOBKey(other)
        let foreign = try SoftwareDevice(platform: "ios")
        let foreignId = try await Self.newDevice(foreign, other)
        let crossed = try await Self.scan(foreign, foreignId, other, payload: payload)
        #expect(crossed.status == 403 && crossed.fields["code"] as? String == "qr_session_other_tenant", "\(crossed.text)")
        // A device already bound (to anyone) is no new device; the creator does not scan its own code.
        let neighbour = try SoftwareDevice(platform: "ios")
        let neighbourId = try await OOBApprovalStackTests.enrol(neighbour, as: username + "-n", tenant: t, appId: "com.example.bank")
        let boundScans = try await Self.scan(neighbour, neighbourId, t, payload: payload)
        #expect(boundScans.status == 403 && boundScans.fields["code"] as? String == "qr_session_device_refused", "\(boundScans.text)")
        let ownCode = try await Self.scan(old, oldId, t, payload: payload)
        #expect(ownCode.status == 403 && ownCode.fields["code"] as? String == "qr_session_device_refused", "\(ownCode.text)")

        // The old device's user rejects: FAILED for both, the new device stays unbound, no token.
        #expect(try await Self.scan(new, newId, t, payload: payload).status == 200)
        // Another user's device cannot answer in the old device's place.
        let impostor = try await Self.approve(neighbour, neighbourId, t, id, newDevice: newId)
        #expect(impostor.status == 403 && impostor.fields["code"] as? String == "qr_session_device_refused", "\(impostor.text)")
        let rejected = try await Self.approve(old, oldId, t, id, newDevice: newId, decision: "REJECT")
        #expect(rejected.status == 200 && rejected.fields["status"] as? String == "FAILED" && rejected.fields["reason"] as? String == "user_rejected", "\(rejected.text)")
        let newView = try await Self.read(new, newId, t, id)
        #expect(newView.fields["status"] as? String == "FAILED" && newView.fields["registrationToken"] == nil, "\(newView.text)")
        let bogus = Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        let after = try await Self.answer(new, newId, t, id, #"{"decision":"ACCEPT","credentialId":"\#(bogus)"}"#)
        #expect(after.status == 409 && after.fields["code"] as? String == "qr_session_already_used", "\(after.text)")
        #expect(try await Self.boundDevices(t, username) == [oldId])

        // Approved, but the new device names a credential the user does not have: FAILED, not bound.
        let (id2, payload2) = try await Self.show(old, oldId, t, mode: QRBlessMode.registerQr)
        #expect(try await Self.scan(new, newId, t, payload: payload2).status == 200)
        #expect(try await Self.approve(old, oldId, t, id2, newDevice: newId).fields["status"] as? String == "APPROVED")
        let wrong = try await Self.answer(new, newId, t, id2, #"{"decision":"ACCEPT","credentialId":"\#(bogus)"}"#)
        #expect(wrong.status == 200 && wrong.fields["status"] as? String == "FAILED" && wrong.fields["reason"] as? String == "credential_not_registered", "\(wrong.text)")
        #expect(try await Self.boundDevices(t, username) == [oldId])

        // Expiry: the short code, past its 30 s, is refused.
        let left = Duration.seconds(31) - (ContinuousClock.now - started)
        if left > .zero { try await Task.sleep(for: left) }
        let expired = try await Self.scan(new, newId, t, payload: shortPayload)
        #expect(expired.status == 410 && expired.fields["code"] as? String == "qr_session_expired", "\(expired.text)")
        let expiredView = try await Self.read(old, oldId, t, shortId)
        #expect(expiredView.fields["status"] as? String == "EXPIRED", "\(expiredView.text)")
    }
}

private extension TestHTTP.Response {
    var fields: [String: Any] { (try? json()) ?? [:] }
}

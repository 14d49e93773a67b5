import Crypto
import Foundation
import Schema
import Testing
import TestSupport

/// QR registration (#17) through the running stack, both sides played: the page (its RP creates a
/// `register` QR session for the signed-in user; the page watches it by Server-Sent Events and
/// long polling through the gateway with the watch token) and a software phone bound to that
/// user (claims the code from its payload, receives a registration-only token, registers a
/// passkey with the registration service's ceremonies and answers ACCEPT naming it). The oob
/// service checks the credential with the registration service before the page sees SUCCEEDED;
/// a credential that is not the user's makes it FAILED. The token only registers.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct QRRegistrationStackTests {
    static let oob = OOBApprovalStackTests.oob
    static let gateway = "http://127.0.0.1:8080"
    static let registration = AdaptiveSignInStackTests.registration
    let adaptive = AdaptiveSignInStackTests()
    let approvals = OOBApprovalStackTests()

    struct Shown {
        let id: String
        let payload: String
        let watch: String
    }

    /// The RP asks for a `register` code for `username`.
    func show(_ t: AdaptiveSignInStackTests.Tenant, for username: String) async throws -> Shown {
        let r = try await TestHTTP.json(
            "POST", "\(Self.oob)/v1/tenants/\(t.id)/qr-sessions", token: t.key, json: #"{"purpose":"register","username":"\#(username)","qrType":"deepLink"}"#)
        try #require(r.status == 201, "\(r.text)")
        let o = try r.json()
        #expect(o["purpose"] as? String == "register")
        return Shown(
            id: try #require(o["qrSessionId"] as? String), payload: try #require(o["qrPayload"] as? String), watch: try #require(o["watchToken"] as? String))
    }

    static func get(_ url: String, token: String) async throws -> TestHTTP.Response {
        try await TestHTTP.send("GET", url, headers: ["Authorization": "Bearer \(token)"])
    }

    func watch(_ t: AdaptiveSignInStackTests.Tenant, _ s: Shown, query: String = "", headers: [String: String] = [:]) async throws -> TestHTTP.Response {
        try await TestHTTP.send("GET", "\(Self.gateway)/oob/v1/tenants/\(t.id)/qr-sessions/\(s.id)?watchToken=\(s.watch)\(query)", headers: headers)
    }

    func scan(_ phone: SoftwareDevice, _ device: String, _ t: AdaptiveSignInStackTests.Tenant, payload: String) async throws -> TestHTTP.Response {
        try await BoundPhone.scan(phone, device, t, payload: payload)
    }

    func answer(_ phone: SoftwareDevice, _ device: String, _ t: AdaptiveSignInStackTests.Tenant, _ s: Shown, _ json: String) async throws -> TestHTTP.Response {
        try await OOBApprovalStackTests.device(phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/qr-sessions/\(s.id)/decision", json: json)
    }

    /// The phone registers a passkey for `username` with the claim's token: the credential id.
    func registerPasskey(_ t: AdaptiveSignInStackTests.Tenant, username: String, token: String) async throws -> (String, SoftAuthenticator) {
        let options = try await TestHTTP.json(
            "POST", "\(Self.registration)/v1/tenants/\(t.id)/webauthn/registrations/options", token: token, json: #"{"username":"\#(username)"}"#)
        try #require(options.status == 200, "\(options.text)")
        let o = try AdaptiveSignInStackTests.decode(RegistrationOptionsResponse.self, options)
        let authenticator = try SoftAuthenticator()
        let finish = try await TestHTTP.send(
            "POST", "\(Self.registration)/v1/tenants/\(t.id)/webauthn/registrations",
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
            body: try AdaptiveSignInStackTests.json(
                RegistrationFinishRequest(handle: o.handle, credential: authenticator.create(o.publicKey, origin: AdaptiveSignInStackTests.origin))))
        try #require(finish.status == 201, "\(finish.text)")
        #expect(finish.fields["credentialId"] as? String == authenticator.credentialIDBase64URL)
        return (authenticator.credentialIDBase64URL, authenticator)
    }

    @Test func thePhoneRegistersAPasskeyForThePagesUserAndThePageSeesIt() async throws {
        let bound = try await BoundPhone.make("qrreg", platform: "ios")
        let (t, username, phone, device) = (bound.tenant, bound.username, bound.phone, bound.device)

        // A register session names its user.
        let nameless = try await TestHTTP.json("POST", "\(Self.oob)/v1/tenants/\(t.id)/qr-sessions", token: t.key, json: #"{"purpose":"register"}"#)
        #expect(nameless.status == 400 && nameless.fields["code"] as? String == "invalid_field" && nameless.fields["field"] as? String == "username", "\(nameless.text)")

        let shown = try await show(t, for: username)
        #expect(shown.payload == "signet://qr/\(shown.id)" && !shown.payload.contains(username))
        // The page's EventSource: PENDING at once, then held until the phone scans.
        let sse = ["Accept": "text/event-stream"]
        let first = try await watch(t, shown, headers: sse)
        #expect(first.text.contains("id: 1\n") && first.text.contains(#""status":"PENDING""#) && first.text.contains(#""purpose":"register""#), "\(first.text)")
        let next = Task { try await watch(t, shown, headers: sse.merging(["Last-Event-ID": "1"]) { $1 }) }
        try await Task.sleep(for: .milliseconds(500))

        // The phone scans: it learns its user and gets a registration-only token.
        let claimed = try await scan(phone, device, t, payload: shown.payload)
        #expect(claimed.status == 200 && claimed.fields["purpose"] as? String == "register" && claimed.fields["username"] as? String == username, "\(claimed.text)")
        let token = try #require(claimed.fields["registrationToken"] as? String, "\(claimed.text)")
        let scanned = try await next.value
        #expect(scanned.text.contains("id: 2\n") && scanned.text.contains(#""status":"SCANNED""#) && !scanned.text.contains(username), "\(scanned.text)")

        // The token registers a passkey for the user, and does nothing else.
        let (credentialId, _) = try await registerPasskey(t, username: username, token: token)
        let rename = try await TestHTTP.send(
            "PATCH", "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/credentials/\(credentialId)",
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"], body: Array(#"{"friendlyName":"Phone"}"#.utf8))
        #expect(rename.status == 403 && rename.fields["code"] as? String == "registration_only", "\(rename.text)")
        let otherUser = try await TestHTTP.json(
            "POST", "\(Self.registration)/v1/tenants/\(t.id)/webauthn/registrations/options", token: token, json: #"{"username":"\#(username)-other"}"#)
        #expect(otherUser.status == 403, "\(otherUser.text)")
        // It never becomes a session: the sign-up finish refuses it.
        let exchanged = try await TestHTTP.json(
            "POST", "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signups/finish", json: #"{"signUpToken":"\#(token)"}"#)
        #expect(exchanged.status == 401 && exchanged.fields["code"] as? String == "invalid_sign_up_token", "\(exchanged.text)")
        // Nor binds a device (a session-token route).
        let bind = try await Self.get("\(Self.oob)/v1/tenants/\(t.id)/users/\(username)/devices", token: token)
        #expect(bind.status == 403 && bind.fields["code"] as? String == "registration_only", "\(bind.text)")

        // ACCEPT without the credential is refused and changes nothing.
        let bare = try await answer(phone, device, t, shown, #"{"decision":"ACCEPT"}"#)
        #expect(bare.status == 400 && bare.fields["field"] as? String == "credentialId", "\(bare.text)")
        // The page's long poll from SCANNED is woken by the checked ACCEPT.
        let poll = Task { try await watch(t, shown, query: "&waitSeconds=6&sinceRevision=2") }
        try await Task.sleep(for: .milliseconds(500))
        let accepted = try await answer(phone, device, t, shown, #"{"decision":"ACCEPT","credentialId":"\#(credentialId)"}"#)
        #expect(accepted.status == 200 && accepted.fields["status"] as? String == "SUCCEEDED" && accepted.fields["credentialId"] as? String == credentialId, "\(accepted.text)")
        let polled = try await poll.value
        #expect(polled.fields["status"] as? String == "SUCCEEDED" && polled.fields["username"] == nil && polled.fields["revision"] as? Int == 3, "\(polled.text)")
        // The RP sees who and which credential.
        let byRP = try await Self.get("\(Self.oob)/v1/tenants/\(t.id)/qr-sessions/\(shown.id)", token: t.key)
        #expect(byRP.fields["username"] as? String == username && byRP.fields["credentialId"] as? String == credentialId, "\(byRP.text)")
        // The user's list shows the passkey.
        let list = try await Self.get("\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/credentials", token: t.key)
        #expect((list.fields["credentials"] as? [[String: Any]])?.compactMap { $0["credentialId"] as? String } == [credentialId], "\(list.text)")

        // Single-use: scanned again, refused.
        let again = try await scan(phone, device, t, payload: shown.payload)
        #expect(again.status == 409 && again.fields["code"] as? String == "qr_session_already_used", "\(again.text)")
    }

    /// The token's kind is part of the route guards: every other route that takes a
    /// registration-only token names the kinds it takes, and none of them names a QR
    /// registration's (403 `registration_token_not_accepted`); the routes that read a token from
    /// their body refuse it as theirs (401); WebAuthn registration options and finish take it.
    @Test func aQRRegistrationTokenReachesOnlyTheRoutesOfQRRegistration() async throws {
        let bound = try await BoundPhone.make("qrscope", platform: "ios")
        let (t, username, phone, device) = (bound.tenant, bound.username, bound.phone, bound.device)
        let shown = try await show(t, for: username)
        let claimed = try await scan(phone, device, t, payload: shown.payload)
        let token = try #require(claimed.fields["registrationToken"] as? String, "\(claimed.text)")

        let user = "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)"
        let tenant = "\(Self.registration)/v1/tenants/\(t.id)"
        let otherRegistrantRoutes: [(String, String, String?)] = [
            ("GET", "\(user)/credentials", nil),
            ("GET", "\(user)/methods", nil),
            ("POST", "\(user)/methods", #"{"type":"totp"}"#),
            ("POST", "\(user)/methods/m_0123456789abcdef0123456789abcdef/confirm", #"{"code":"123456"}"#),
            ("GET", "\(user)/uaf/registrations", nil),
            ("POST", "\(tenant)/uaf/registrations/requests", #"{"username":"\#(username)"}"#),
            ("POST", "\(tenant)/uaf/registrations", "{}"),
            ("GET", "\(user)/registration-suggestion", nil),
        ]
        for (method, url, body) in otherRegistrantRoutes {
            var headers = ["Authorization": "Bearer \(token)"]
            if body != nil { headers["Content-Type"] = "application/json" }
            let r = try await TestHTTP.send(method, url, headers: headers, body: body.map { Array($0.utf8) })
            #expect(r.status == 403 && r.fields["code"] as? String == "registration_token_not_accepted", "\(method) \(url): \(r.text)")
        }
        // The routes that take a registration-only token in their body: each takes its own kind only.
        let finish = try await TestHTTP.json(
            "POST", "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signups/finish", json: #"{"signUpToken":"\#(token)"}"#)
        #expect(finish.status == 401 && finish.fields["code"] as? String == "invalid_sign_up_token", "\(finish.text)")
        let exchange = try await TestHTTP.json(
            "POST", "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins/si_\(UInt32.random(in: 0...UInt32.max))/session",
            json: #"{"registrationToken":"\#(token)"}"#)
        #expect(exchange.status == 401 && exchange.fields["code"] as? String == "invalid_registration_token", "\(exchange.text)")
        // The routes of QR registration take it: the phone registers its passkey, and the page sees it.
        let (credentialId, _) = try await registerPasskey(t, username: username, token: token)
        let accepted = try await answer(phone, device, t, shown, #"{"decision":"ACCEPT","credentialId":"\#(credentialId)"}"#)
        #expect(accepted.status == 200 && accepted.fields["status"] as? String == "SUCCEEDED", "\(accepted.text)")
    }

    @Test func aCredentialThatIsNotTheUsersFailsAndOtherPhonesAreRefused() async throws {
        let bound = try await BoundPhone.make("qrreg", platform: "android")
        let (t, username, phone, device) = (bound.tenant, bound.username, bound.phone, bound.device)

        // Another user's phone of the same tenant cannot take this user's code (and gets no token).
        let neighbour = try SoftwareDevice(platform: "ios")
        let neighbourDevice = try await OOBApprovalStackTests.enrol(neighbour, as: username + "-n", tenant: t, appId: "com.example.bank")
        let shown = try await show(t, for: username)
        let foreign = try await scan(neighbour, neighbourDevice, t, payload: shown.payload)
        #expect(foreign.status == 403 && foreign.fields["code"] as? String == "qr_session_device_refused" && foreign.fields["registrationToken"] == nil, "\(foreign.text)")
        // Nor another tenant's phone.
        let other = try await adaptive.tenant()
        await approvals.waitForOOBKey(other)
        let stranger = try SoftwareDevice(platform: "ios")
        let strangerDevice = try await OOBApprovalStackTests.enrol(stranger, as: username, tenant: other, appId: "com.example.bank")
        let crossed = try await scan(stranger, strangerDevice, other, payload: shown.payload)
        #expect(crossed.status == 403 && crossed.fields["code"] as? String == "qr_session_other_tenant", "\(crossed.text)")

        // The user's phone claims, then names a credential the user does not have: FAILED.
        let claimed = try await scan(phone, device, t, payload: shown.payload)
        #expect(claimed.status == 200 && claimed.fields["registrationToken"] is String, "\(claimed.text)")
        let bogus = Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        let failed = try await answer(phone, device, t, shown, #"{"decision":"ACCEPT","credentialId":"\#(bogus)"}"#)
        #expect(failed.status == 200 && failed.fields["status"] as? String == "FAILED" && failed.fields["reason"] as? String == "credential_not_registered", "\(failed.text)")
        #expect(failed.fields["credentialId"] == nil)
        let page = try await watch(t, shown)
        #expect(page.fields["status"] as? String == "FAILED" && page.fields["reason"] as? String == "credential_not_registered", "\(page.text)")
        // Finished: a second answer is refused.
        let late = try await answer(phone, device, t, shown, #"{"decision":"REJECT"}"#)
        #expect(late.status == 409 && late.fields["code"] as? String == "qr_session_already_used", "\(late.text)")

        // A credential id on an authenticate session's answer is refused.
        let auth = try await TestHTTP.json("POST", "\(Self.oob)/v1/tenants/\(t.id)/qr-sessions", token: t.key, json: #"{"purpose":"authenticate","username":"\#(username)"}"#)
        let authId = try #require(auth.fields["qrSessionId"] as? String, "\(auth.text)")
        #expect(try await scan(phone, device, t, payload: authId).status == 200)
        let mixed = try await OOBApprovalStackTests.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/qr-sessions/\(authId)/decision", json: #"{"decision":"ACCEPT","credentialId":"\#(bogus)"}"#)
        #expect(mixed.status == 400 && mixed.fields["field"] as? String == "credentialId", "\(mixed.text)")
    }

    /// checkRegPossible / checkAuthPossible from the software phone; the tenant's qrPurposes
    /// turn register off, for the page's creation too.
    @Test func thePhoneAsksWhetherItCanRegisterOrSignInByQR() async throws {
        let bound = try await BoundPhone.make("qrcap", platform: "ios")
        let (t, username, phone, device) = (bound.tenant, bound.username, bound.phone, bound.device)
        let path = "/v1/tenants/\(t.id)/devices/\(device)/qr-capabilities"
        let ready = try await OOBApprovalStackTests.device(phone, "GET", path)
        #expect(ready.fields["registerPossible"] as? Bool == true && ready.fields["authenticatePossible"] as? Bool == true, "\(ready.text)")
        let put = try await TestHTTP.json(
            "PUT", "\(Self.oob)/v1/admin/tenants/\(t.id)/app-settings", token: TestStack.adminToken,
            json: #"{"domains":[],"iosAppIds":[],"androidApps":[],"qrPurposes":["authenticate"]}"#)
        #expect(put.status == 200 || put.status == 201, "\(put.text)")
        let signInOnly = try await OOBApprovalStackTests.device(phone, "GET", path)
        #expect(signInOnly.fields["registerPossible"] as? Bool == false && signInOnly.fields["authenticatePossible"] as? Bool == true, "\(signInOnly.text)")
        #expect(signInOnly.fields["reasons"] as? [String] == ["register_not_allowed"])
        let refused = try await TestHTTP.json(
            "POST", "\(Self.oob)/v1/tenants/\(t.id)/qr-sessions", token: t.key, json: #"{"purpose":"register","username":"\#(username)"}"#)
        #expect(refused.status == 403 && refused.fields["code"] as? String == "qr_purpose_not_allowed", "\(refused.text)")
        // Without a proof, nothing.
        #expect(try await TestHTTP.send("GET", Self.oob + path).status == 401)
    }
}

private extension TestHTTP.Response {
    var fields: [String: Any] { (try? json()) ?? [:] }
}

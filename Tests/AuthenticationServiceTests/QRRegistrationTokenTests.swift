import Crypto
import Foundation
import HTTPServer
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// QR registration's token (#17), in process: only the oob service gets one; it is a
/// registration-only token (the registration audience, `sign_up`) naming its QR session, lives
/// no longer than the session, and the sign-up finish never exchanges it for a session.
@Suite struct QRRegistrationTokenTests {
    typealias Harness = ServiceHarness<AuthenticationService>
    static let path = "/v1/internal/tenants/acme/qr-registration-tokens"
    static let session = "qr_0f1e2d3c4b5a69788796a5b4c3d2e1f0"

    func ask(_ h: Harness, caller: String = "oob", _ json: String) async -> HTTPResponse {
        await h.send("POST", Self.path, bearer: Harness.internalToken, headers: [("X-Signet-Service", caller)], json: json)
    }

    func body(expiresIn seconds: Double, username: String = "alice", session: String = session) -> String {
        let expires = Date().addingTimeInterval(seconds).formatted(.iso8601)
        return #"{"username":"\#(username)","qrSessionId":"\#(session)","expiresAt":"\#(expires)"}"#
    }

    static func object(_ r: HTTPResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:]
    }

    @Test func theOOBServiceGetsARegistrationOnlyTokenForTheSession() async throws {
        let h = try await Harness.offline()
        defer { Task { await h.close() } }
        let r = await ask(h, body(expiresIn: 120))
        #expect(r.status == 201, "\(String(decoding: r.body, as: UTF8.self))")
        let token = try #require(Self.object(r)["registrationToken"] as? String)
        let parts = token.split(separator: ".").map(String.init)
        try #require(parts.count == 3)
        let payload = try #require(Base64URL.decode(parts[1]))
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        #expect(claims["sub"] as? String == "alice" && claims["qr"] as? String == Self.session && claims["sign_up"] as? Bool == true)
        // One audience is written as a string (RFC 7519 §4.1.3).
        #expect((claims["aud"] as? String ?? (claims["aud"] as? [String])?.first) == "acme/registration", "\(claims)")
        #expect(claims["signin"] == nil && claims["sid"] == nil)
        let exp = try #require(claims["exp"] as? Int)
        #expect(Double(exp) <= Date().timeIntervalSince1970 + 121)

        // Never a session: the sign-up finish refuses it before reading anything.
        let finish = await h.send("POST", "/v1/tenants/acme/signups/finish", json: #"{"signUpToken":"\#(token)"}"#)
        #expect(finish.status == 401 && Self.object(finish)["code"] as? String == "invalid_sign_up_token")
    }

    @Test func othersAndBadRequestsAreRefused() async throws {
        let h = try await Harness.offline()
        defer { Task { await h.close() } }
        // Only oob asks; without the internal token nobody does.
        let registration = await ask(h, caller: "registration", body(expiresIn: 120))
        #expect(registration.status == 403 && Self.object(registration)["code"] as? String == "forbidden")
        #expect(await h.send("POST", Self.path, json: body(expiresIn: 120)).status == 401)
        // A token outliving any QR session, an expired one, a bad session id, a bad username.
        for (json, field) in [
            (body(expiresIn: 3600), "expiresAt"), (body(expiresIn: -5), "expiresAt"), (body(expiresIn: 120, session: "qr_x"), "qrSessionId"),
            (body(expiresIn: 120, username: "a\\u0000b"), "username"),
        ] {
            let r = await ask(h, json)
            #expect(r.status == 400 && Self.object(r)["field"] as? String == field, "\(field): \(String(decoding: r.body, as: UTF8.self))")
        }
    }
}

import Crypto
import FIDO
import Foundation
import Schema
import Testing
import TestSupport
import Tokens

/// ENFORCE_REGISTRATION through the running services: a sign-in whose registration decision
/// rules enforce registering gives a registration-only token, not a session. The registration
/// service lets it register a method and refuses it on every other route of the user (as does
/// the oob service) with `registration_only`; once the user registered what the rules ask, the
/// sign-in exchanges it for its session, once.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct EnforcedRegistrationStackTests {
    typealias Adaptive = AdaptiveSignInStackTests
    static let registration = Adaptive.registration
    static let authentication = Adaptive.authentication
    static let oob = "http://127.0.0.1:8084"

    static func code(_ r: TestHTTP.Response) -> String? { (try? r.json())?["code"] as? String }

    @Test func anEnforcedRegistrationGivesATokenThatOnlyRegistersThenTheSession() async throws {
        try TestStack.require()
        let adaptive = Adaptive()
        let t = try await adaptive.tenant()
        let first = try await adaptive.register("fay", in: t)
        let rules = try await TestHTTP.json(
            "PUT", "\(Self.authentication)/v1/admin/tenants/\(t.id)/rulesets/registration", token: TestStack.adminToken,
            json: #"{"rules": [{"name": "two-keys", "when": {"fact": "user.methodCounts.fido2", "op": "lt", "value": 2}, "action": "ENFORCE_REGISTRATION", "methods": ["fido2"]}]}"#)
        #expect(rules.status == 200, "\(rules.text)")

        // The sign-in succeeds, but gives a registration-only token and no session.
        let started = try await adaptive.start(t, username: "fay")
        let done = try await adaptive.step(t, started.signinId, with: first)
        let result = try Adaptive.decode(SignInProgress.self, done)
        #expect(done.status == 200 && result.status == "SUCCEEDED", "\(done.text)")
        #expect(result.sessionToken == nil && result.refreshToken == nil, "\(done.text)")
        #expect(result.registration == RegistrationSuggestion(action: "ENFORCE_REGISTRATION", methods: ["fido2"], matchedRule: "two-keys", sequences: [["fido2"]]))
        let token = try #require(result.registrationToken, "\(done.text)")
        let bearer = ["Authorization": "Bearer \(token)"]
        let user = "\(Self.registration)/v1/tenants/\(t.id)/users/fay"
        let credential = "\(user)/credentials/\(first.credentialIDBase64URL)"

        // Every route of the user that does not register refuses it, with one code.
        let refused: [(String, String, String?)] = [
            ("GET", "\(user)/data", nil), ("DELETE", user, nil), ("DELETE", credential, nil),
            ("PATCH", credential, #"{"friendlyName": "Mine"}"#), ("GET", "\(Self.oob)/v1/tenants/\(t.id)/users/fay/devices", nil),
        ]
        for (method, url, body) in refused {
            var headers = bearer
            if body != nil { headers["Content-Type"] = "application/json" }
            let r = try await TestHTTP.send(method, url, headers: headers, body: body.map { Array($0.utf8) })
            #expect(r.status == 403 && Self.code(r) == "registration_only", "\(method) \(url): \(r.text)")
        }
        // Another user's routes stay another user's.
        let other = try await TestHTTP.send("GET", "\(Self.registration)/v1/tenants/\(t.id)/users/gus/credentials", headers: bearer)
        #expect(other.status == 403 && Self.code(other) == "forbidden", "\(other.text)")
        // What registers (and says what to register) takes it.
        let suggestion = try await TestHTTP.send("GET", "\(user)/registration-suggestion", headers: bearer)
        let decision = try? Adaptive.decode(RegistrationDecision.self, suggestion)
        #expect(suggestion.status == 200 && decision?.action == "ENFORCE_REGISTRATION", "\(suggestion.text)")

        // No session before the user registered; the sign-up route does not take this token.
        let sessionURL = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(started.signinId)/session"
        func exchange(_ token: String) async throws -> TestHTTP.Response {
            try await TestHTTP.send(
                "POST", sessionURL, headers: ["Content-Type": "application/json"], body: try Adaptive.json(RegistrationSessionRequest(registrationToken: token)))
        }
        let early = try await exchange(token)
        #expect(early.status == 409 && Self.code(early) == "registration_required", "\(early.text)")
        let forged = try await exchange(token + "x")
        #expect(forged.status == 401 && Self.code(forged) == "invalid_registration_token", "\(forged.text)")
        let asSignUp = try await TestHTTP.send(
            "POST", "\(Self.authentication)/v1/tenants/\(t.id)/signups/finish", headers: ["Content-Type": "application/json"],
            body: Array(#"{"signUpToken": "\#(token)"}"#.utf8))
        #expect(asSignUp.status == 401 && Self.code(asSignUp) == "invalid_sign_up_token", "\(asSignUp.text)")
        // Another sign-in's token is not this one's.
        let otherSignIn = try await adaptive.start(t, username: "fay")
        let otherDone = try Adaptive.decode(SignInProgress.self, try await adaptive.step(t, otherSignIn.signinId, with: first))
        let crossed = try await exchange(try #require(otherDone.registrationToken))
        #expect(crossed.status == 401 && Self.code(crossed) == "invalid_registration_token", "\(crossed.text)")

        // The user registers a second passkey with the token.
        let base = "\(Self.registration)/v1/tenants/\(t.id)/webauthn/registrations"
        let headers = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
        let options = try await TestHTTP.send("POST", "\(base)/options", headers: headers, body: try Adaptive.json(RegistrationOptionsRequest(username: "fay")))
        #expect(options.status == 200, "\(options.text)")
        let o = try Adaptive.decode(RegistrationOptionsResponse.self, options)
        let second = try SoftAuthenticator()
        let registered = try await TestHTTP.send(
            "POST", base, headers: headers,
            body: try Adaptive.json(RegistrationFinishRequest(handle: o.handle, credential: second.create(o.publicKey, origin: Adaptive.origin))))
        #expect(registered.status == 201, "\(registered.text)")

        // Once the authentication service knows it, the rules no longer enforce: the session.
        var exchanged: TestHTTP.Response?
        #expect(await TestStack.eventually {
            let r = try? await exchange(token)
            exchanged = r
            return r?.status != 409
        })
        let granted = try #require(exchanged)
        #expect(granted.status == 200, "\(granted.text)")
        let session = try Adaptive.decode(SessionTokens.self, granted)
        let jwks = try await TestHTTP.send("GET", "\(Self.authentication)/.well-known/jwks.json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/authentication", audience: t.id))
        let jwt = try verifier.verify(session.sessionToken, now: Date())
        // A relying party verifying sessions (aud: the tenant) cannot take the registration-only
        // token for one: it is addressed to the registration audience.
        let refusedCode: JOSEError.Code?
        do {
            _ = try verifier.verify(token, now: Date())
            refusedCode = nil
        } catch {
            refusedCode = error.code
        }
        #expect(refusedCode == .audienceMismatch)
        let forRegistration = JWTVerifier(
            keySet: try JWKSet(json: jwks.body),
            options: JWTValidationOptions(issuer: "http://localhost:8080/authentication", audience: "\(t.id)/registration"))
        #expect((try? forRegistration.verify(token, now: Date()))?.claims[claim: "sign_up"] == .bool(true))
        #expect(jwt.claims.subject == "fay" && jwt.claims[claim: "amr"] == .array(["fido2"]) && jwt.claims[claim: "acr"] == .string("fido2"))
        #expect(jwt.claims[claim: "sign_up"] == nil && jwt.claims[claim: "sid"] != nil)
        // Once only.
        let again = try await exchange(token)
        #expect(again.status == 401 && Self.code(again) == "invalid_registration_token", "\(again.text)")
        // The session does what the registration-only token could not.
        let renamed = try await TestHTTP.send(
            "PATCH", credential, headers: ["Authorization": "Bearer \(session.sessionToken)", "Content-Type": "application/json"],
            body: Array(#"{"friendlyName": "Mine"}"#.utf8))
        #expect(renamed.status == 200, "\(renamed.text)")
        // The next sign-in gives a session at once.
        let next = try Adaptive.decode(SignInProgress.self, try await adaptive.step(t, try await adaptive.start(t, username: "fay").signinId, with: first))
        #expect(next.sessionToken != nil && next.registrationToken == nil && next.registration == nil)
    }
}

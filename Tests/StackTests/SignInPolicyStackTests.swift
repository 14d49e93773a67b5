import Crypto
import FIDO
import Foundation
import Schema
import Testing
import TestSupport

/// The tenant's FIDO policy (set at registration) applies to sign-in: user verification asked
/// for and required, algorithms and models accepted; a rule can ask for a UV step (`fido2_uv`).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct SignInPolicyStackTests {
    typealias Adaptive = AdaptiveSignInStackTests
    let adaptive = AdaptiveSignInStackTests()

    func putPolicy(_ tenant: Adaptive.Tenant, _ json: String) async throws {
        let put = try await TestHTTP.json("PUT", "\(Adaptive.registration)/v1/admin/tenants/\(tenant.id)/fido-policy", token: TestStack.adminToken, json: json)
        #expect(put.status == 200, "\(put.text)")
    }

    /// What the WebAuthn options of the authentication service ask for now.
    func optionsUserVerification(_ tenant: Adaptive.Tenant) async -> String? {
        let r = try? await TestHTTP.send(
            "POST", "\(Adaptive.authentication)/v1/tenants/\(tenant.id)/webauthn/authentications/options", headers: ["Content-Type": "application/json"],
            body: Array("{}".utf8))
        guard let r, r.status == 200 else { return nil }
        return (try? Adaptive.decode(AuthenticationOptionsResponse.self, r))?.publicKey.userVerification
    }

    /// One step of `method`: challenge, an assertion with or without UV, verify.
    func step(
        _ tenant: Adaptive.Tenant, _ signin: String, method: String = "fido2", with authenticator: SoftAuthenticator, userVerified: Bool,
        signingFor rpID: String? = nil, appidOutput: Bool? = nil
    ) async throws -> (uv: String, response: TestHTTP.Response, options: RequestOptionsJSON) {
        let base = "\(Adaptive.authentication)/v1/tenants/\(tenant.id)/signins/\(signin)/methods/\(method)"
        let c = try await TestHTTP.send("POST", "\(base)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
        try #require(c.status == 200, "\(c.text)")
        let options = try #require(try c.json()["publicKey"] as? [String: Any])
        let request = try JSONDecoder().decode(RequestOptionsJSON.self, from: JSONSerialization.data(withJSONObject: options))
        var signed = request
        // A U2F-registered credential signs for the AppID, not the RP ID.
        if let rpID { signed.rpId = rpID }
        var assertion = try authenticator.get(signed, origin: Adaptive.origin, userVerified: userVerified)
        if let appidOutput { assertion.clientExtensionResults = ClientExtensionResultsJSON(appid: appidOutput) }
        let verify = try await TestHTTP.send(
            "POST", "\(base)/verify", headers: ["Content-Type": "application/json"], body: try Adaptive.json(FIDO2VerifyRequest(credential: assertion)))
        return (request.userVerification, verify, request)
    }

    @Test func requiredUserVerificationIsAskedForAndEnforcedAtSignIn() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let alice = try await adaptive.register("alice", in: t)
        #expect(await optionsUserVerification(t) == "preferred")
        try await putPolicy(t, #"{"userVerification": "required"}"#)
        #expect(await TestStack.eventually { await optionsUserVerification(t) == "required" })

        let signin = try await adaptive.start(t, username: "alice")
        let withoutUV = try await step(t, signin.signinId, with: alice, userVerified: false)
        #expect(withoutUV.uv == "required")
        #expect(try withoutUV.response.status == 400 && (withoutUV.response.json()["code"] as? String) == "user_verification_required", "\(withoutUV.response.text)")
        let withUV = try await step(t, signin.signinId, with: alice, userVerified: true)
        #expect(try withUV.response.status == 200 && (withUV.response.json()["status"] as? String) == "SUCCEEDED", "\(withUV.response.text)")
    }

    @Test func aRuleAsksForAUVStepWhateverThePolicy() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let alice = try await adaptive.register("alice", in: t)
        let stored = try await adaptive.putRuleset(t, #"{"rules": [{"name": "biometric", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2_uv"]]}]}"#)
        #expect(stored.status == 200, "\(stored.text)")
        let signin = try await adaptive.start(t, username: "alice")
        #expect(signin.sequences == [["fido2_uv"]])
        let withoutUV = try await step(t, signin.signinId, method: "fido2_uv", with: alice, userVerified: false)
        #expect(withoutUV.uv == "required")
        #expect(try withoutUV.response.status == 400 && (withoutUV.response.json()["code"] as? String) == "user_verification_required", "\(withoutUV.response.text)")
        let withUV = try await step(t, signin.signinId, method: "fido2_uv", with: alice, userVerified: true)
        let progress = try Adaptive.decode(SignInProgress.self, withUV.response)
        #expect(progress.status == "SUCCEEDED" && progress.completedMethods == ["fido2_uv"], "\(withUV.response.text)")
    }

    @Test func aCredentialWhoseAlgorithmOrModelThePolicyNoLongerAcceptsCannotSignIn() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let alice = try await adaptive.register("alice", in: t)
        // The soft authenticator's key is ES256 (-7); the policy now takes RS256 only.
        try await putPolicy(t, #"{"allowedAlgorithms": [-257], "userVerification": "discouraged"}"#)
        #expect(await TestStack.eventually { await optionsUserVerification(t) == "discouraged" })
        let signin = try await adaptive.start(t, username: "alice")
        let refused = try await step(t, signin.signinId, with: alice, userVerified: true)
        #expect(try refused.response.status == 400 && (refused.response.json()["code"] as? String) == "policy_algorithm_not_allowed", "\(refused.response.text)")
        // Its model (the all-zero AAGUID of none attestation) excluded, with the algorithm back.
        try await putPolicy(t, #"{"disallowedAAGUIDs": ["00000000-0000-0000-0000-000000000000"], "userVerification": "required"}"#)
        #expect(await TestStack.eventually { await optionsUserVerification(t) == "required" })
        let again = try await adaptive.start(t, username: "alice")
        let model = try await step(t, again.signinId, with: alice, userVerified: true)
        #expect(try model.response.status == 400 && (model.response.json()["code"] as? String) == "policy_aaguid_not_allowed", "\(model.response.text)")
        // The tenant's policy refused the credential, not the user's guess: neither refusal
        // counts towards alice's fido2 standing (before, both did, on the way to probation).
        let pool = TestStack.pool(database: "signet_authentication", size: 1)
        defer { pool.close() }
        let failures = try await pool.withConnection {
            try await $0.query("SELECT consecutive FROM method_failures WHERE tenant_id = \(t.id) AND username = 'alice' AND method = 'fido2'")
        }.first?.int("consecutive")
        #expect((failures ?? 0) == 0, "\(String(describing: failures))")
    }

    @Test func aCredentialUsedWithTheTenantsU2FAppIDSignsIn() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let alice = try await adaptive.register("alice", in: t)
        let appID = "https://localhost:8080/u2f/appid.json"
        try await putPolicy(t, #"{"appId": "\#(appID)", "userVerification": "discouraged"}"#)
        #expect(await TestStack.eventually { await optionsUserVerification(t) == "discouraged" })

        let signin = try await adaptive.start(t, username: "alice")
        // The client used the AppID: rpIdHash is the AppID's hash, and it says so.
        let withAppID = try await step(t, signin.signinId, with: alice, userVerified: false, signingFor: appID, appidOutput: true)
        #expect(withAppID.options.extensions == AuthenticationExtensionsJSON(appid: appID))
        let progress = try Adaptive.decode(SignInProgress.self, withAppID.response)
        #expect(progress.status == "SUCCEEDED", "\(withAppID.response.text)")
        // Without the client's word, the AppID's hash is not the RP ID's.
        let again = try await adaptive.start(t, username: "alice")
        let unsaid = try await step(t, again.signinId, with: alice, userVerified: false, signingFor: appID, appidOutput: nil)
        #expect(try unsaid.response.status == 400 && (unsaid.response.json()["code"] as? String) == "rp_id_hash_mismatch", "\(unsaid.response.text)")
        // And the RP ID's hash with the flag set is refused too (the flag says the AppID was used).
        let third = try await adaptive.start(t, username: "alice")
        let wrongFlag = try await step(t, third.signinId, with: alice, userVerified: false, appidOutput: true)
        #expect(try wrongFlag.response.status == 400 && (wrongFlag.response.json()["code"] as? String) == "rp_id_hash_mismatch", "\(wrongFlag.response.text)")
    }
}

/// Auto-create passkey: the tenant's FIDO policy lets the client create a passkey without a
/// user gesture (conditional create) after a password or one-time-code sign-in.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct AutoCreatePasskeyStackTests {
    typealias Adaptive = AdaptiveSignInStackTests
    let adaptive = AdaptiveSignInStackTests()

    func options(_ t: Adaptive.Tenant, _ username: String, mediation: String?) async throws -> TestHTTP.Response {
        try await TestHTTP.send(
            "POST", "\(Adaptive.registration)/v1/tenants/\(t.id)/webauthn/registrations/options",
            headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"],
            body: try Adaptive.json(RegistrationOptionsRequest(username: username, mediation: mediation)))
    }

    func finish(_ t: Adaptive.Tenant, _ o: RegistrationOptionsResponse, userPresent: Bool) async throws -> TestHTTP.Response {
        let authenticator = try SoftAuthenticator()
        return try await TestHTTP.send(
            "POST", "\(Adaptive.registration)/v1/tenants/\(t.id)/webauthn/registrations",
            headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"],
            body: try Adaptive.json(
                RegistrationFinishRequest(handle: o.handle, credential: authenticator.create(o.publicKey, origin: Adaptive.origin, userPresent: userPresent))))
    }

    @Test func conditionalCreateNeedsThePolicyFlagAndThenSkipsUserPresence() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        // Not allowed by default.
        let refused = try await options(t, "ivy", mediation: "conditional")
        #expect(try refused.status == 403 && refused.json()["code"] as? String == "conditional_create_not_allowed", "\(refused.text)")
        let put = try await TestHTTP.json(
            "PUT", "\(Adaptive.registration)/v1/admin/tenants/\(t.id)/fido-policy", token: TestStack.adminToken, json: #"{"autoCreatePasskey": true}"#)
        #expect(put.status == 200 && put.text.contains(#""autoCreatePasskey":true"#), "\(put.text)")
        let allowed = try await options(t, "ivy", mediation: "conditional")
        let o = try Adaptive.decode(RegistrationOptionsResponse.self, allowed)
        #expect(allowed.status == 200 && o.mediation == "conditional", "\(allowed.text)")
        // Created without a user gesture: accepted for a conditional create…
        let created = try await finish(t, o, userPresent: false)
        #expect(created.status == 201, "\(created.text)")
        // …never for ordinary options.
        let plain = try Adaptive.decode(RegistrationOptionsResponse.self, try await options(t, "jay", mediation: nil))
        #expect(plain.mediation == nil)
        let noGesture = try await finish(t, plain, userPresent: false)
        #expect(try noGesture.status == 400 && noGesture.json()["code"] as? String == "user_not_present", "\(noGesture.text)")
        let other = try await options(t, "kim", mediation: "modal")
        #expect(other.status == 400)
    }
}

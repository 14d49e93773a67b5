import Crypto
import FIDO
import Foundation
import JSON
import Schema
import Testing
import TestSupport
import Tokens

/// FIDO UAF through the gateway: the TrustedFacets document at the AppID, registration on the
/// registration service, the key crossing to the authentication service by event, sign-in with
/// a session token, and the refusals (replay, counter, facet, AppID, policy).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct UAFStackTests {
    static let gateway = "http://127.0.0.1:8080"
    static let origin = "http://localhost:8080"

    struct Tenant {
        let id: String
        let key: String
        var registration: String { "\(UAFStackTests.gateway)/registration/v1/tenants/\(id)" }
        var authentication: String { "\(UAFStackTests.gateway)/authentication/v1/tenants/\(id)" }
        var appID: String { "\(UAFStackTests.origin)/registration/v1/tenants/\(id)/uaf/facets" }
    }

    /// A new tenant (origin http://localhost:8080) with an RP key, known to the authentication service.
    func tenant() async throws -> Tenant {
        let id = "uaf-\(UInt32.random(in: 0...UInt32.max))"
        let put = try await TestHTTP.json(
            "PUT", "\(Stack.registration)/v1/admin/tenants/\(id)", token: TestStack.adminToken,
            json: #"{"displayName":"UAF","rpId":"localhost","origins":["\#(Self.origin)"]}"#)
        #expect(put.status == 201)
        let issued = try await TestHTTP.json("POST", "\(Stack.registration)/v1/admin/tenants/\(id)/api-keys", token: TestStack.adminToken, json: "{}")
        let key = try #require(try issued.json()["apiKey"] as? String)
        #expect(await TestStack.eventually { (try? await TestHTTP.send("GET", "http://127.0.0.1:8082/v1/tenants/\(id)"))?.status == 200 })
        return Tenant(id: id, key: key)
    }

    func post(_ url: String, key: String? = nil, _ body: some Encodable) async throws -> TestHTTP.Response {
        try await TestHTTP.json("POST", url, token: key, json: String(decoding: try JSONValueEncoder().encodeToBytes(body), as: UTF8.self))
    }

    func registrationRequest(_ t: Tenant, username: String) async throws -> UAFRegistrationRequest {
        let r = try await post("\(t.registration)/uaf/registrations/requests", key: t.key, UAFRegistrationRequestBody(username: username))
        #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
        let envelope = try JSONValueDecoder().decode(UAFRequestEnvelope.self, from: r.body)
        return try JSONValueDecoder().decode(UAFRegistrationRequest.self, from: envelope.uafRequest[0])
    }

    func authenticationRequest(_ t: Tenant, username: String, transactionText: String? = nil) async throws -> UAFAuthenticationRequest {
        let r = try await post("\(t.authentication)/uaf/authentications/requests", UAFAuthenticationRequestBody(username: username, transactionText: transactionText))
        #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
        let envelope = try JSONValueDecoder().decode(UAFRequestEnvelope.self, from: r.body)
        return try JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
    }

    func finish(_ url: String, key: String? = nil, _ uafResponse: String) async throws -> (status: Int, json: [String: Any]) {
        let r = try await post(url, key: key, UAFResponseBody(uafResponse: uafResponse))
        return (r.status, (try? r.json()) ?? [:])
    }

    @Test func registerSignInAndRefusals() async throws {
        let t = try await tenant()
        // The AppID is served through the gateway: the TrustedFacets document.
        let facets = try await TestHTTP.send("GET", "\(t.registration)/uaf/facets")
        #expect(facets.status == 200 && facets.headers.first { $0.key.lowercased() == "content-type" }?.value == "application/fido.trusted-apps+json")
        #expect(String(decoding: facets.body, as: UTF8.self).contains(Self.origin))

        let username = "uaf-user-\(UInt32.random(in: 0...UInt32.max))"
        let request = try await registrationRequest(t, username: username)
        #expect(request.header.appID == t.appID)
        let authenticator = SoftUAFAuthenticator(aaid: "FFFF#0A01", facetID: Self.origin)
        let registered = try await finish("\(t.registration)/uaf/registrations", key: t.key, try authenticator.register(request))
        #expect(registered.status == 201, "\(registered.json)")

        // Sign-in knows the key once registration's event has arrived: the request names it.
        let keyID = Base64URL.encode(authenticator.registrations[0].keyID)
        #expect(await TestStack.eventually {
            (try? await authenticationRequest(t, username: username))?.policy.accepted.first?.first?.keyIDs == [keyID]
        })
        let answer = try authenticator.authenticate(try await authenticationRequest(t, username: username))
        let signedIn = try await finish("\(t.authentication)/uaf/authentications", answer)
        #expect(signedIn.status == 200, "\(signedIn.json)")
        #expect(signedIn.json["username"] as? String == username && signedIn.json["keyId"] as? String == keyID)
        // The session token verifies with the authentication service's published keys.
        let token = try #require(signedIn.json["sessionToken"] as? String)
        let jwks = try await TestHTTP.send("GET", "\(Self.gateway)/authentication/.well-known/jwks.json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/authentication", audience: t.id))
        let jwt = try verifier.verify(token, now: Date())
        #expect(jwt.claims.subject == username && jwt.claims.audience == [t.id])

        let replay = try await finish("\(t.authentication)/uaf/authentications", answer)
        #expect(replay.status == 400 && replay.json["code"] as? String == "challenge_replayed", "\(replay.json)")
        authenticator.rewindCounter(to: 0)
        let clone = try await finish("\(t.authentication)/uaf/authentications", try authenticator.authenticate(try await authenticationRequest(t, username: username)))
        #expect(clone.status == 400 && clone.json["code"] as? String == "uaf_sign_counter_not_increased", "\(clone.json)")
        authenticator.rewindCounter(to: 10)

        authenticator.facetID = "https://evil.example"
        let facet = try await finish("\(t.authentication)/uaf/authentications", try authenticator.authenticate(try await authenticationRequest(t, username: username)))
        #expect(facet.status == 400 && facet.json["code"] as? String == "uaf_facet_not_trusted", "\(facet.json)")
        authenticator.facetID = Self.origin
        let app = try await finish(
            "\(t.authentication)/uaf/authentications",
            try authenticator.authenticate(try await authenticationRequest(t, username: username), appID: "https://evil.example/uaf/facets"))
        #expect(app.status == 400 && app.json["code"] as? String == "uaf_app_id_mismatch", "\(app.json)")

        // Transaction confirmation: the text the authenticator showed and signed.
        let confirmed = try await finish(
            "\(t.authentication)/uaf/authentications",
            try authenticator.authenticate(try await authenticationRequest(t, username: username, transactionText: "Pay 12.00 EUR to ACME")))
        #expect(confirmed.status == 200 && confirmed.json["transactionConfirmed"] as? Bool == true, "\(confirmed.json)")

        // The tenant's UAF policy, set on registration, is enforced on registration at once and
        // on sign-in once its event has arrived.
        let settings = try await TestHTTP.json(
            "PUT", "\(Stack.registration)/v1/admin/tenants/\(t.id)/uaf-settings", token: TestStack.adminToken,
            json: #"{"facetIds":["\#(Self.origin)"],"policy":{"accepted":[[{"assertionSchemes":["UAFV1TLV"]}]],"disallowed":[{"aaid":["FFFF#0A01"]}]}}"#)
        #expect(settings.status == 200)
        let refusedRegistration = try await finish(
            "\(t.registration)/uaf/registrations", key: t.key, try authenticator.register(try await registrationRequest(t, username: username)))
        #expect(refusedRegistration.status == 400 && refusedRegistration.json["code"] as? String == "policy_uaf_disallowed", "\(refusedRegistration.json)")
        #expect(await TestStack.eventually {
            guard let request = try? await authenticationRequest(t, username: username),
                let answer = try? authenticator.authenticate(request, keyID: authenticator.registrations[0].keyID),
                let result = try? await finish("\(t.authentication)/uaf/authentications", answer)
            else { return false }
            return result.status == 400 && result.json["code"] as? String == "policy_uaf_disallowed"
        })
        // Deregistration through the gateway (the AAID's # as %23): the DeregistrationRequest
        // comes back, and the key stops working once its event has arrived.
        let deleted = try await TestHTTP.send(
            "DELETE", "\(t.registration)/users/\(username)/uaf/registrations/FFFF%230A01/\(keyID)", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(deleted.status == 200, "\(String(decoding: deleted.body, as: UTF8.self))")
        #expect(String(decoding: deleted.body, as: UTF8.self).contains(#""op":"Dereg""#))
        #expect(await TestStack.eventually {
            guard let request = try? await authenticationRequest(t, username: username),
                let answer = try? authenticator.authenticate(request, keyID: authenticator.registrations[0].keyID),
                let result = try? await finish("\(t.authentication)/uaf/authentications", answer)
            else { return false }
            return result.status == 400 && result.json["code"] as? String == "credential_suspended"
        })
    }
}

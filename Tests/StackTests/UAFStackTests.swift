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
        /// A registration replica's base URL, to register there rather than through the gateway.
        var replica: String? = nil
        var registration: String { "\(replica ?? "\(UAFStackTests.gateway)/registration")/v1/tenants/\(id)" }
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

    /// A software authenticator of `aaid` (showing `display`, when given) that registered one key
    /// of `username` (201), once the authentication service knows the key (its request offers it).
    func registeredAuthenticator(_ t: Tenant, username: String, aaid: String, display: UAFDisplayPNGCharacteristics? = nil) async throws
        -> SoftUAFAuthenticator
    {
        let authenticator = SoftUAFAuthenticator(aaid: aaid, facetID: Self.origin)
        authenticator.display = display
        let registered = try await finish(
            "\(t.registration)/uaf/registrations", key: t.key, try authenticator.register(try await registrationRequest(t, username: username)))
        #expect(registered.status == 201, "\(registered.json)")
        // The authentication service knows the key once registration's event has arrived.
        let keyID = Base64URL.encode(authenticator.registrations[0].keyID)
        #expect(await TestStack.eventually {
            (try? await authenticationRequest(t, username: username))?.policy.accepted.first?.first?.keyIDs == [keyID]
        })
        return authenticator
    }

    /// The tenant's authentication ruleset: every sign-in is the sequence `uaf`.
    func signInWithUAF(_ t: Tenant) async throws {
        let rules = try await TestHTTP.json(
            "PUT", "http://127.0.0.1:8082/v1/admin/tenants/\(t.id)/rulesets/authentication", token: TestStack.adminToken,
            json: #"{"rules": [{"name": "uaf", "action": "TRIGGER_AUTHENTICATION", "sequences": [["uaf"]]}]}"#)
        #expect(rules.status == 200, "\(String(decoding: rules.body, as: UTF8.self))")
    }

    /// A payment of `username` (with `png` as its image when given) created through the gateway,
    /// once the transaction service knows the tenant's RP key from registration's event.
    func transaction(_ t: Tenant, username: String, png: [UInt8]? = nil) async throws -> TransactionResource {
        let images = png.map { #","images":[{"content":"\#(Base64URL.encode($0))","tcDisplayPNGCharacteristics":\#(Self.imageCharacteristics)}]"# } ?? ""
        var created: TestHTTP.Response?
        #expect(await TestStack.eventually {
            created = try? await TestHTTP.json(
                "POST", "\(Self.gateway)/transaction/v1/tenants/\(t.id)/transactions", token: t.key,
                json: #"{"username":"\#(username)","text":"Pay €42.00 to ACME Ltd","amount":"42.00","currency":"EUR","payee":"ACME Ltd","type":"payment"\#(images)}"#)
            return created?.status == 201
        })
        let tx = try JSONValueDecoder().decode(TransactionResource.self, from: try #require(created).body)
        if let png { #expect(tx.images?.first.flatMap { Base64URL.decode($0.content) } == png) }
        return tx
    }

    /// The tcToken the transaction service issues once it has checked the step again, verified
    /// by the RP (the verify route and the JWKS).
    func expectTCTokenVerifies(_ t: Tenant, _ tx: TransactionResource, username: String) async throws {
        var token: String?
        #expect(await TestStack.eventually {
            let r = try? await TestHTTP.send(
                "GET", "\(Self.gateway)/transaction/v1/tenants/\(t.id)/transactions/\(tx.transactionId)", headers: ["Authorization": "Bearer \(t.key)"])
            token = r.flatMap { try? JSONValueDecoder().decode(TransactionResource.self, from: $0.body) }?.tcToken
            return token != nil
        })
        let tcToken = try #require(token)
        let check = try await TestHTTP.json(
            "POST", "\(Self.gateway)/transaction/v1/tenants/\(t.id)/transactions/\(tx.transactionId)/tctoken/verify", token: t.key,
            json: String(decoding: try JSONValueEncoder().encodeToBytes(TCTokenVerifyRequest(tcToken: tcToken)), as: UTF8.self))
        #expect(check.status == 200, "\(String(decoding: check.body, as: UTF8.self))")
        #expect(try JSONValueDecoder().decode(TCTokenVerifyResult.self, from: check.body) == TCTokenVerifyResult(valid: true, alreadyConsumed: false))
        let jwks = try await TestHTTP.send("GET", "http://127.0.0.1:8083/v1/tenants/\(t.id)/.well-known/jwks.json")
        let jwt = try JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/transaction", audience: t.id)
        ).verify(tcToken, now: Date())
        #expect(jwt.claims[claim: "amr"] == .array(["uaf"]) && jwt.claims[claim: "txn"] == .string(tx.transactionId) && jwt.claims.subject == username)
        #expect(jwt.claims[claim: "txn_hash"] == .string(tx.detailsHash))
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
        // The RP revokes this session by its id, as a flow's (DirectSessionID): once, then 404.
        let sid = try #require(jwt.claims[claim: "sid"].flatMap { if case .string(let s) = $0 { s } else { nil } })
        let revoke = { try await TestHTTP.send("DELETE", "\(t.authentication)/sessions/\(sid)", headers: ["Authorization": "Bearer \(t.key)"]) }
        let revoked = try await revoke()
        #expect(revoked.status == 204, "\(String(decoding: revoked.body, as: UTF8.self))")
        #expect(try await revoke().status == 404)

        let replay = try await finish("\(t.authentication)/uaf/authentications", answer)
        #expect(replay.status == 400 && replay.json["code"] as? String == "challenge_replayed", "\(replay.json)")
        authenticator.rewindCounter(to: 0)
        let clone = try await finish("\(t.authentication)/uaf/authentications", try authenticator.authenticate(try await authenticationRequest(t, username: username)))
        #expect(clone.status == 400 && clone.json["code"] as? String == "uaf_sign_counter_not_increased", "\(clone.json)")
        // The suspected clone is suspended on registration (from the authentication service's
        // event) and works again once the RP resumes it.
        let listing = "\(t.registration)/users/\(username)/uaf/registrations"
        #expect(await TestStack.eventually {
            let r = try? await TestHTTP.send("GET", listing, headers: ["Authorization": "Bearer \(t.key)"])
            return r.map { String(decoding: $0.body, as: UTF8.self).contains(#""status":"suspended""#) } == true
        })
        let resumed = try await TestHTTP.json("PATCH", "\(listing)/FFFF%230A01/\(keyID)", token: t.key, json: #"{"status":"active"}"#)
        #expect(resumed.status == 200, "\(String(decoding: resumed.body, as: UTF8.self))")
        authenticator.rewindCounter(to: 10)
        #expect(await TestStack.eventually {
            guard let request = try? await authenticationRequest(t, username: username), let answer = try? authenticator.authenticate(request),
                let result = try? await finish("\(t.authentication)/uaf/authentications", answer)
            else { return false }
            return result.status == 200
        })

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
        // A criterion Signet's metadata cannot answer is refused by name, not left never to match.
        let unsupported = try await TestHTTP.json(
            "PUT", "\(Stack.registration)/v1/admin/tenants/\(t.id)/uaf-settings", token: TestStack.adminToken,
            json: #"{"facetIds":["\#(Self.origin)"],"policy":{"accepted":[[{"aaid":["FFFF#0A01"]},{"tcDisplay":1}]]}}"#)
        #expect(unsupported.status == 400 && (try? unsupported.json())?["field"] as? String == "policy.accepted[0][1].tcDisplay", "\(String(decoding: unsupported.body, as: UTF8.self))")
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

    /// The direct UAF route honours the user's `uaf` standing and counts its refused responses
    /// towards it, as a flow's uaf step does: a success clears the count, two failures put the
    /// method on probation (429), the third locks it (423, the user found by the key alone too),
    /// and the RP's unlock opens it again. Before, the route never counted a failure, so a
    /// stolen or cloned key could be hammered without end.
    @Test func theDirectRouteCountsFailuresAndRefusesALockedKey() async throws {
        let t = try await tenant()
        let username = "uaf-hammer-\(UInt32.random(in: 0...UInt32.max))"
        let authenticator = try await registeredAuthenticator(t, username: username, aaid: "FFFF#0A01")
        let settings = try await TestHTTP.json(
            "PUT", "http://127.0.0.1:8082/v1/admin/tenants/\(t.id)/authentication-settings", token: TestStack.adminToken,
            json: #"{"probationAfterFailures": 2, "probationSeconds": 1, "lockAfterFailures": 3}"#)
        #expect(settings.status == 200, "\(String(decoding: settings.body, as: UTF8.self))")
        /// One request and its answer (from `facetID`), by username or by the key alone.
        func signIn(named: Bool = true, facetID: String = Self.origin) async throws -> (status: Int, json: [String: Any]) {
            let r = try await post("\(t.authentication)/uaf/authentications/requests", UAFAuthenticationRequestBody(username: named ? username : nil))
            #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
            let envelope = try JSONValueDecoder().decode(UAFRequestEnvelope.self, from: r.body)
            let request = try JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
            authenticator.facetID = facetID
            defer { authenticator.facetID = Self.origin }
            return try await finish(
                "\(t.authentication)/uaf/authentications", try authenticator.authenticate(request, keyID: authenticator.registrations[0].keyID))
        }
        let evil = "https://evil.example"
        // A failure, then a success: the count is cleared (another failure alone is no probation).
        let failed = try await signIn(facetID: evil)
        #expect(failed.status == 400 && failed.json["code"] as? String == "uaf_facet_not_trusted", "\(failed.json)")
        let cleared = try await signIn()
        #expect(cleared.status == 200, "\(cleared.json)")
        let after = try await signIn(facetID: evil)
        #expect(after.status == 400, "\(after.json)")
        let stillClear = try await signIn()
        #expect(stillClear.status == 200, "\(stillClear.json)")
        // Two failures: probation.
        for _ in 0..<2 {
            let f = try await signIn(facetID: evil)
            #expect(f.status == 400 && f.json["code"] as? String == "uaf_facet_not_trusted", "\(f.json)")
        }
        let probation = try await signIn()
        #expect(probation.status == 429 && probation.json["code"] as? String == "method_probation", "\(probation.json)")
        // The third, by the key alone: locked, by name too, until the RP unlocks it.
        try await Task.sleep(for: .milliseconds(1100))
        let third = try await signIn(named: false, facetID: evil)
        #expect(third.status == 400 && third.json["code"] as? String == "uaf_facet_not_trusted", "\(third.json)")
        let locked = try await signIn(named: false)
        #expect(locked.status == 423 && locked.json["code"] as? String == "method_locked", "\(locked.json)")
        let lockedByName = try await signIn()
        #expect(lockedByName.status == 423 && lockedByName.json["code"] as? String == "method_locked", "\(lockedByName.json)")
        let unlock = try await TestHTTP.send(
            "POST", "\(t.authentication)/users/\(username)/methods/uaf/unlock", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(unlock.status == 204, "\(String(decoding: unlock.body, as: UTF8.self))")
        let again = try await signIn(named: false)
        #expect(again.status == 200 && again.json["username"] as? String == username, "\(again.json)")
    }

    /// `image/png` transaction confirmation through the gateway: the PNG and its characteristics
    /// go to the client, the authenticator signs the image's hash and the sign-in says the
    /// transaction was confirmed; a signed hash of another image, and a PNG with a text chunk,
    /// are refused with their codes.
    @Test func aPNGTransactionIsConfirmedAndAnotherImageRefused() async throws {
        let t = try await tenant()
        let username = "uaf-png-\(UInt32.random(in: 0...UInt32.max))"
        let authenticator = try await registeredAuthenticator(t, username: username, aaid: "FFFF#0A03")
        let display = UAFDisplayPNGCharacteristics(width: 24, height: 12, bitDepth: 8, colorType: 2)
        authenticator.display = display
        let png = TestPNG.make(width: 24, height: 12, colorType: 2)
        func pngRequest(_ image: [UInt8]) async throws -> TestHTTP.Response {
            try await TestHTTP.json(
                "POST", "\(t.authentication)/uaf/authentications/requests",
                json: #"{"username":"\#(username)","transaction":[{"contentType":"text/plain","content":"\#(Base64URL.encode(Array("Pay 7 EUR".utf8)))"},{"contentType":"image/png","content":"\#(Base64URL.encode(image))","tcDisplayPNGCharacteristics":{"width":24,"height":12,"bitDepth":8,"colorType":2,"compression":0,"filter":0,"interlace":0}}]}"#)
        }
        func request(_ r: TestHTTP.Response) throws -> UAFAuthenticationRequest {
            #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
            let envelope = try JSONValueDecoder().decode(UAFRequestEnvelope.self, from: r.body)
            return try JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
        }
        let sent = try request(try await pngRequest(png))
        #expect(sent.transaction?.last?.tcDisplayPNGCharacteristics == display && sent.transaction?.last.flatMap { Base64URL.decode($0.content) } == png)
        let confirmed = try await finish("\(t.authentication)/uaf/authentications", try authenticator.authenticate(sent))
        #expect(confirmed.status == 200 && confirmed.json["transactionConfirmed"] as? Bool == true, "\(confirmed.json)")
        #expect(confirmed.json["username"] as? String == username)

        // The authenticator signed the hash of another image than the ones sent.
        let swapped = try await finish(
            "\(t.authentication)/uaf/authentications",
            try authenticator.authenticate(try request(try await pngRequest(png)), transactionContent: TestPNG.make(width: 24, height: 12, colorType: 0)))
        #expect(swapped.status == 400 && swapped.json["code"] as? String == "uaf_transaction_content_hash_mismatch", "\(swapped.json)")
        // A PNG carrying a text chunk never reaches a client.
        let hidden = try await pngRequest(TestPNG.make(width: 24, height: 12, colorType: 2, extra: [TestPNG.chunk("tEXt", Array("k\u{0}v".utf8))]))
        #expect(hidden.status == 400)
        #expect((try? hidden.json())?["code"] as? String == "uaf_transaction_png_unsupported_chunk", "\(String(decoding: hidden.body, as: UTF8.self))")
    }

    /// The issue's "done when": a UAF authenticator confirms a transaction-service transaction in
    /// an adaptive sign-in, and the RP verifies the tcToken the transaction service issues after
    /// checking the UAF step again.
    @Test func uafConfirmsATransactionWhoseTCTokenTheRPVerifies() async throws {
        let t = try await tenant()
        let username = "uaf-tx-\(UInt32.random(in: 0...UInt32.max))"
        let authenticator = try await registeredAuthenticator(t, username: username, aaid: "FFFF#0A02")
        try await signInWithUAF(t)
        let tx = try await transaction(t, username: username)

        // The sign-in starts once the authentication service knows the transaction, and offers
        // uaf once it knows the key.
        var flow: [String: Any] = [:]
        #expect(await TestStack.eventually {
            let r = try? await TestHTTP.json("POST", "\(t.authentication)/signins", json: #"{"context":{"transactionId":"\#(tx.transactionId)"}}"#)
            flow = (try? r?.json()) ?? [:]
            return r?.status == 201
        })
        let signin = try #require(flow["signinId"] as? String, "\(flow)")
        #expect(flow["sequences"] as? [[String]] == [["uaf"]], "\(flow)")
        let base = "\(t.authentication)/signins/\(signin)/methods/uaf"
        var request: UAFAuthenticationRequest?
        #expect(await TestStack.eventually {
            guard let c = try? await TestHTTP.json("POST", "\(base)/challenge", json: "{}"), c.status == 200,
                let envelope = try? JSONValueDecoder().decode(UAFRequestEnvelope.self, from: c.body)
            else { return false }
            request = try? JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
            return true
        })
        let shown = try #require(request?.transaction?.first?.content)
        #expect(Base64URL.decode(shown) == Array(tx.details.uafDisplayText.utf8))
        let answer = try authenticator.authenticate(try #require(request))
        let verified = try await post("\(base)/verify", UAFResponseBody(uafResponse: answer))
        let done = (try? verified.json()) ?? [:]
        #expect(verified.status == 200 && done["status"] as? String == "SUCCEEDED", "\(done)")

        // The transaction service checks the UAF step again and issues the tcToken; the RP verifies it.
        try await expectTCTokenVerifies(t, tx, username: username)
    }

    // MARK: - The policy on metadata at sign-in

    /// A UAF model of an MDS3 BLOB: basic surrogate attestation, P-256 raw keys, one user
    /// verification method and the given key protection.
    static func uafEntry(aaid: String, userVerification: String, keyProtection: [String]) -> [String: Any] {
        var entry = MetadataTestPKI.entry(statuses: [("FIDO_CERTIFIED_L1", "2026-01-01")], description: "UAF model \(aaid)")
        var statement = entry["metadataStatement"] as? [String: Any] ?? [:]
        statement["protocolFamily"] = "uaf"
        statement["aaid"] = aaid.lowercased()
        statement["publicKeyAlgAndEncodings"] = ["ecc_x962_raw"]
        statement["attestationTypes"] = ["basic_surrogate"]
        statement["userVerificationDetails"] = [[["userVerificationMethod": userVerification]]]
        statement["keyProtection"] = keyProtection
        entry["metadataStatement"] = statement
        entry["aaid"] = aaid.lowercased()
        return entry
    }

    /// UAF Protocol §3.5.7.5 step 4.a, end to end: a registration replica whose MDS3 BLOB
    /// describes two UAF models registers a key of each; `uaf.registered` carries each model's
    /// `userVerificationDetails` and `keyProtection` to the authentication service, which matches
    /// the tenant's policy on them at sign-in (through the gateway). Before, sign-in matched
    /// without metadata: a fingerprint-only policy refused the fingerprint model too, and a
    /// policy disallowing software keys let the software-key model sign in.
    @Test func thePolicyAtSignInIsMatchedOnTheMetadataOfRegistration() async throws {
        try TestStack.require()
        let replica = try await MetadataReplica.start(name: "uaf-mds-replica", port: 18186) { chain in
            try MetadataTestPKI.blob(
                payload: MetadataTestPKI.payload(
                    no: 1,
                    entries: [
                        Self.uafEntry(aaid: "FFFF#0F01", userVerification: "fingerprint_internal", keyProtection: ["hardware", "tee"]),
                        Self.uafEntry(aaid: "FFFF#0F02", userVerification: "passcode_internal", keyProtection: ["software"]),
                    ], nextUpdate: "2027-01-01"),
                chain: chain)
        }
        defer { Task { await replica.stop() } }
        let (id, key) = try await replica.tenant(prefix: "uaf-mds", origin: Self.origin)
        let t = Tenant(id: id, key: key, replica: replica.base)
        #expect(await TestStack.eventually { (try? await TestHTTP.send("GET", "http://127.0.0.1:8082/v1/tenants/\(id)"))?.status == 200 })
        let fingerprint = try await registeredAuthenticator(t, username: "fingerprint-user", aaid: "FFFF#0F01")
        let software = try await registeredAuthenticator(t, username: "software-user", aaid: "FFFF#0F02")
        func signIn(_ authenticator: SoftUAFAuthenticator, _ username: String) async throws -> (status: Int, json: [String: Any]) {
            try await finish("\(t.authentication)/uaf/authentications", try authenticator.authenticate(try await authenticationRequest(t, username: username)))
        }
        func setPolicy(_ policy: String) async throws {
            let put = try await TestHTTP.json(
                "PUT", "\(replica.base)/v1/admin/tenants/\(id)/uaf-settings", token: TestStack.adminToken,
                json: #"{"facetIds":["\#(Self.origin)"],"policy":\#(policy)}"#)
            #expect(put.status == 200, "\(put.text)")
        }

        // Only fingerprint authenticators: once the policy has arrived the passcode model is
        // refused, and the fingerprint model signs in.
        try await setPolicy(#"{"accepted":[[{"userVerification":2}]]}"#)
        #expect(await TestStack.eventually { (try? await signIn(software, "software-user"))?.json["code"] as? String == "policy_uaf_not_accepted" })
        let fingerprintSignIn = try await signIn(fingerprint, "fingerprint-user")
        #expect(fingerprintSignIn.status == 200, "\(fingerprintSignIn.json)")

        // Software keys disallowed: the registered software key is refused at sign-in.
        try await setPolicy(#"{"accepted":[[{"assertionSchemes":["UAFV1TLV"]}]],"disallowed":[{"keyProtection":1}]}"#)
        #expect(await TestStack.eventually { (try? await signIn(software, "software-user"))?.json["code"] as? String == "policy_uaf_disallowed" })
        let hardwareSignIn = try await signIn(fingerprint, "fingerprint-user")
        #expect(hardwareSignIn.status == 200, "\(hardwareSignIn.json)")
    }
}

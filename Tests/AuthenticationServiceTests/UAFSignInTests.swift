import Crypto
import FIDO
import Foundation
import HTTPServer
import JSON
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// FIDO UAF sign-in through the authentication service's HTTP API over a scratch database: the
/// key arrives as registration's event, a software UAF authenticator answers, and each refusal
/// (replay, counter, facet, AppID, policy, another user's key) carries its code.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct UAFSignInTests {
    typealias Harness = ServiceHarness<AuthenticationService>

    /// A stand-in for the transaction service's internal route that says whose a transaction is
    /// (`TransactionChanged` names the user by subject reference only; a confirmation that
    /// starts without a username asks): every transaction is alice's.
    static func transactionService() throws -> HTTPServer {
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in
            let parts = request.path.split(separator: "/")
            guard request.method == "GET", parts.count == 7, parts[1] == "internal", parts[6] == "username" else { return HTTPResponse(status: 404) }
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/json")], body: Array(#"{"transactionId":"\#(parts[5])","username":"alice"}"#.utf8))
        }
        try server.start()
        return server
    }

    /// Registers a key with `authenticator` (locally) and gives the service its event, with the
    /// metadata characteristics registration found (nil: registered without a statement).
    static func registered(
        _ h: Harness, _ authenticator: SoftUAFAuthenticator, username: String = "alice", userVerificationDetails: [[String]]? = nil,
        keyProtection: [String]? = nil
    ) async throws {
        _ = try authenticator.registrationAssertion(fcParams: "unused")
        let registration = try #require(authenticator.registrations.last)
        let point = Array(try registration.key.publicKey().subjectPublicKeyInfo.suffix(65))
        try await h.consume(
            UAFAuthenticatorRegistered(
                tenantId: "acme", subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: username), aaid: authenticator.aaid, keyId: Base64URL.encode(registration.keyID),
                publicKey: Base64URL.encode(point), keyEncoding: 0x100, signatureAlgorithm: 1, signCounter: 0,
                attestationType: "basic_surrogate", registeredAt: Date(), userVerificationDetails: userVerificationDetails,
                keyProtection: keyProtection),
            source: .registration)
    }

    static func request(_ h: Harness, _ json: String = #"{"username":"alice"}"#) async throws -> UAFAuthenticationRequest {
        let response = await h.send("POST", "/v1/tenants/acme/uaf/authentications/requests", json: json)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let envelope = try JSONValueDecoder().decode(UAFRequestEnvelope.self, from: response.body)
        return try JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
    }

    static func finish(_ h: Harness, _ uafResponse: String) async throws -> (status: Int, body: String) {
        let body = String(decoding: try JSONValueEncoder().encodeToBytes(UAFResponseBody(uafResponse: uafResponse)), as: UTF8.self)
        let response = await h.send("POST", "/v1/tenants/acme/uaf/authentications", json: body)
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    @Test func signsInAndRefusesReplaysClonesAndStrangers() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        try await Self.registered(h, authenticator)

        let request = try await Self.request(h)
        #expect(request.header.op == "Auth" && request.header.appID == "http://localhost:8080/registration/v1/tenants/acme/uaf/facets")
        // The user's key is named in the policy.
        #expect(request.policy.accepted.first?.first?.keyIDs == [Base64URL.encode(authenticator.registrations[0].keyID)])
        let answer = try authenticator.authenticate(request)
        let signedIn = try await Self.finish(h, answer)
        #expect(signedIn.status == 200, "\(signedIn.body)")
        let result = try JSONValueDecoder().decode(UAFAuthenticationResult.self, from: Array(signedIn.body.utf8))
        #expect(result.username == "alice" && result.aaid == "ABCD#0001" && !result.transactionConfirmed && !result.sessionToken.isEmpty)
        // The same response again: the challenge is used.
        let replay = try await Self.finish(h, answer)
        #expect(replay.status == 400 && replay.body.contains("challenge_replayed"), "\(replay.body)")
        // A counter that goes back: a possible clone.
        authenticator.rewindCounter(to: 0)
        let clone = try await Self.finish(h, try authenticator.authenticate(try await Self.request(h)))
        #expect(clone.status == 400 && clone.body.contains("uaf_sign_counter_not_increased"), "\(clone.body)")
        // The key is flagged until registration resumes it (see aUAFSignInIsAnnouncedAndACounterGoingBackFlagsTheKey).
        try await h.consume(
            UAFAuthenticatorStatusChanged(
                tenantId: "acme", aaid: "ABCD#0001", keyId: Base64URL.encode(authenticator.registrations[0].keyID), status: "active", changedAt: Date()),
            source: .registration)
        authenticator.rewindCounter(to: 5)
        #expect(try await Self.finish(h, try authenticator.authenticate(try await Self.request(h))).status == 200)

        // A facet the tenant does not trust, an AppID that is not the tenant's.
        authenticator.facetID = "https://evil.example"
        let facet = try await Self.finish(h, try authenticator.authenticate(try await Self.request(h)))
        #expect(facet.status == 400 && facet.body.contains("uaf_facet_not_trusted"), "\(facet.body)")
        authenticator.facetID = "https://acme.example"
        let app = try await Self.finish(h, try authenticator.authenticate(try await Self.request(h), appID: "https://evil.example/facets"))
        #expect(app.status == 400 && app.body.contains("uaf_app_id_mismatch"), "\(app.body)")

        // Bob's key cannot answer a request for alice.
        let bob = SoftUAFAuthenticator(aaid: "ABCD#0002", facetID: "https://acme.example")
        try await Self.registered(h, bob, username: "bob")
        let stranger = try await Self.finish(h, try bob.authenticate(try await Self.request(h)))
        #expect(stranger.status == 400 && stranger.body.contains("credential_not_allowed"), "\(stranger.body)")
        // An unknown key.
        let unknown = SoftUAFAuthenticator(aaid: "ABCD#0003", facetID: "https://acme.example")
        _ = try unknown.registrationAssertion(fcParams: "x")
        let notFound = try await Self.finish(h, try unknown.authenticate(try await Self.request(h, "{}")))
        #expect(notFound.status == 400 && notFound.body.contains("uaf_unknown_key_id"), "\(notFound.body)")

        // Transaction confirmation: the text is what the authenticator shows and signs.
        let tx = try await Self.request(h, #"{"username":"alice","transactionText":"Pay 10.00 EUR to ACME"}"#)
        #expect(tx.transaction?.first?.contentType == "text/plain")
        let confirmed = try await Self.finish(h, try authenticator.authenticate(tx))
        #expect(confirmed.status == 200 && confirmed.body.contains(#""transactionConfirmed":true"#), "\(confirmed.body)")
        let other = try await Self.request(h, #"{"username":"alice","transactionText":"Pay 10.00 EUR to ACME"}"#)
        let shown = try await Self.finish(h, try authenticator.authenticate(other, transactionContent: Array("Pay 99.00 EUR to EVIL".utf8)))
        #expect(shown.status == 400 && shown.body.contains("uaf_transaction_content_hash_mismatch"), "\(shown.body)")

        // A deregistered key stops working once registration's event has arrived.
        try await h.consume(
            UAFAuthenticatorStatusChanged(
                tenantId: "acme", aaid: "ABCD#0002", keyId: Base64URL.encode(bob.registrations[0].keyID), status: "deleted", changedAt: Date()),
            source: .registration)
        let gone = try await Self.finish(h, try bob.authenticate(try await Self.request(h, #"{"username":"bob"}"#)))
        #expect(gone.status == 400 && gone.body.contains("credential_suspended"), "\(gone.body)")

        // The tenant's policy, from registration's event, is enforced on sign-in too.
        try await h.consume(
            UAFSettingsChanged(
                tenantId: "acme", facetIds: ["https://acme.example"], policy: ["accepted": [[["assertionSchemes": ["UAFV1TLV"]]]], "disallowed": [["aaid": ["ABCD#0001"]]]],
                allowSurrogateWithoutMetadata: true, revision: 1, changedAt: Date()),
            source: .registration)
        let policy = try await Self.finish(h, try authenticator.authenticate(try await Self.request(h)))
        #expect(policy.status == 400 && policy.body.contains("policy_uaf_disallowed"), "\(policy.body)")
    }

    /// UAF Protocol §3.5.7.5 step 4.a: the tenant's policy is matched at sign-in on the metadata
    /// the key registered with (`userVerificationDetails`, `keyProtection` of `uaf.registered`,
    /// kept by the read model). Before, sign-in matched without metadata: a policy accepting only
    /// fingerprints refused every sign-in, one disallowing software keys refused none. A key
    /// whose event carried none is matched as before.
    @Test func thePolicyIsMatchedOnTheMetadataTheKeyRegisteredWith() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let fingerprint = SoftUAFAuthenticator(aaid: "ABCD#0F01", facetID: "https://acme.example")
        try await Self.registered(h, fingerprint, username: "alice", userVerificationDetails: [["fingerprint_internal"]], keyProtection: ["hardware"])
        let passcode = SoftUAFAuthenticator(aaid: "ABCD#0F02", facetID: "https://acme.example")
        try await Self.registered(
            h, passcode, username: "bob", userVerificationDetails: [["passcode_internal"], ["presence_internal"]], keyProtection: ["software"])
        let unknown = SoftUAFAuthenticator(aaid: "ABCD#0F03", facetID: "https://acme.example")
        try await Self.registered(h, unknown, username: "carol")
        func signIn(_ authenticator: SoftUAFAuthenticator, _ username: String) async throws -> (status: Int, body: String) {
            try await Self.finish(h, try authenticator.authenticate(try await Self.request(h, #"{"username":"\#(username)"}"#)))
        }
        func policy(_ policy: JSONValue, revision: Int) async throws {
            try await h.consume(
                UAFSettingsChanged(
                    tenantId: "acme", facetIds: ["https://acme.example"], policy: policy, allowSurrogateWithoutMetadata: true, revision: revision,
                    changedAt: Date()),
                source: .registration)
        }

        try await policy(["accepted": [[["userVerification": 2]]]], revision: 1)
        let alice = try await signIn(fingerprint, "alice")
        #expect(alice.status == 200, "\(alice.body)")
        let bob = try await signIn(passcode, "bob")
        #expect(bob.status == 400 && bob.body.contains("policy_uaf_not_accepted"), "\(bob.body)")
        let carol = try await signIn(unknown, "carol")
        #expect(carol.status == 400 && carol.body.contains("policy_uaf_not_accepted"), "\(carol.body)")

        try await policy(["accepted": [[["assertionSchemes": ["UAFV1TLV"]]]], "disallowed": [["keyProtection": 1]]], revision: 2)
        let softwareKey = try await signIn(passcode, "bob")
        #expect(softwareKey.status == 400 && softwareKey.body.contains("policy_uaf_disallowed"), "\(softwareKey.body)")
        let hardwareKey = try await signIn(fingerprint, "alice")
        #expect(hardwareKey.status == 200, "\(hardwareKey.body)")
        let withoutMetadata = try await signIn(unknown, "carol")
        #expect(withoutMetadata.status == 200, "\(withoutMetadata.body)")
    }

    /// One `uaf` step of a sign-in flow: challenge, the authenticator's answer, verify.
    static func step(_ h: Harness, _ signin: String, _ authenticator: SoftUAFAuthenticator, keyID: [UInt8]? = nil) async throws -> (status: Int, json: [String: Any]) {
        let base = "/v1/tenants/acme/signins/\(signin)/methods/uaf"
        let challenge = await h.send("POST", "\(base)/challenge", json: "{}")
        #expect(challenge.status == 200, "\(String(decoding: challenge.body, as: UTF8.self))")
        let envelope = try JSONValueDecoder().decode(UAFRequestEnvelope.self, from: challenge.body)
        let request = try JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
        let answer = try authenticator.authenticate(request, keyID: keyID)
        let body = String(decoding: try JSONValueEncoder().encodeToBytes(UAFResponseBody(uafResponse: answer)), as: UTF8.self)
        let verified = await h.send("POST", "\(base)/verify", json: body)
        return (verified.status, (try? JSONSerialization.jsonObject(with: Data(verified.body)) as? [String: Any]) ?? [:])
    }

    @Test func uafIsAMethodOfAdaptiveSignIn() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let first = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        let second = SoftUAFAuthenticator(aaid: "ABCD#0002", facetID: "https://acme.example")
        try await Self.registered(h, first)
        try await Self.registered(h, second)
        let put = await h.send(
            "PUT", "/v1/admin/tenants/acme/rulesets/authentication", bearer: Harness.adminToken,
            json: #"{"rules": [{"name": "two-uaf", "action": "TRIGGER_AUTHENTICATION", "sequences": [["uaf", "uaf"]]}]}"#)
        #expect(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
        let started = await h.send("POST", "/v1/tenants/acme/signins", json: #"{"username":"alice"}"#)
        #expect(started.status == 201, "\(String(decoding: started.body, as: UTF8.self))")
        let flow = try #require(try JSONSerialization.jsonObject(with: Data(started.body)) as? [String: Any])
        #expect(flow["sequences"] as? [[String]] == [["uaf", "uaf"]] && flow["matchedRule"] as? String == "two-uaf")
        let id = try #require(flow["signinId"] as? String)

        let one = try await Self.step(h, id, first)
        #expect(one.status == 200 && one.json["completedMethods"] as? [String] == ["uaf"] && one.json["sessionToken"] == nil, "\(one.json)")
        // The same key cannot complete the second step.
        let again = try await Self.step(h, id, first)
        #expect(again.status == 400 && again.json["code"] as? String == "credential_already_used", "\(again.json)")
        let two = try await Self.step(h, id, second)
        #expect(two.status == 200 && two.json["status"] as? String == "SUCCEEDED" && two.json["sessionToken"] is String, "\(two.json)")
    }

    @Test func uafConfirmsATransactionOfAFlowWithEvidenceTheTransactionServiceCanCheck() async throws {
        let transactionService = try Self.transactionService()
        defer { Task { await transactionService.shutdown() } }
        let h = try await Harness.withDatabase(environment: ["SIGNET_TRANSACTION_URL": "http://127.0.0.1:\(transactionService.boundPort)"])
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        try await Self.registered(h, authenticator)
        let put = await h.send(
            "PUT", "/v1/admin/tenants/acme/rulesets/authentication", bearer: Harness.adminToken,
            json: #"{"rules": [{"name": "uaf", "action": "TRIGGER_AUTHENTICATION", "sequences": [["uaf"]]}]}"#)
        #expect(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
        let details = TransactionDetails(text: "Pay €10 to ACME", amount: "10.00", currency: "EUR", payee: "ACME", type: "payment")
        let detailsHash = SHA256.hash(Array(details.canonicalJSON.utf8))
        let id = "tx_" + String(repeating: "cd", count: 16)
        try await h.consume(
            TransactionChanged(
                tenantId: "acme", transactionId: id, revision: 1, status: "PENDING",
                subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"), details: details,
                detailsHash: Base64URL.encode(detailsHash), expiresAt: Date().addingTimeInterval(300), changedAt: Date()),
            source: .transaction)
        let started = await h.send("POST", "/v1/tenants/acme/signins", json: #"{"context":{"transactionId":"\#(id)"}}"#)
        #expect(started.status == 201, "\(String(decoding: started.body, as: UTF8.self))")
        let flow = try #require(try JSONSerialization.jsonObject(with: Data(started.body)) as? [String: Any])
        #expect(flow["sequences"] as? [[String]] == [["uaf"]])
        let signin = try #require(flow["signinId"] as? String)

        // The request shows the details' text and its challenge commits to the details hash.
        let base = "/v1/tenants/acme/signins/\(signin)/methods/uaf"
        let challenge = await h.send("POST", "\(base)/challenge", json: "{}")
        #expect(challenge.status == 200, "\(String(decoding: challenge.body, as: UTF8.self))")
        let envelope = try JSONValueDecoder().decode(UAFRequestEnvelope.self, from: challenge.body)
        let request = try JSONValueDecoder().decode(UAFAuthenticationRequest.self, from: envelope.uafRequest[0])
        let shown = try #require(request.transaction?.first)
        #expect(shown.contentType == "text/plain" && Base64URL.decode(shown.content) == Array(details.uafDisplayText.utf8))
        #expect(details.uafDisplayText == "Pay €10 to ACME\n10.00 EUR to ACME\n(payment)")
        // An authenticator that shows (and signs) other content is refused.
        let other = try authenticator.authenticate(request, transactionContent: Array("Pay €1 to ACME".utf8))
        let refused = await h.send("POST", "\(base)/verify", json: String(decoding: try JSONValueEncoder().encodeToBytes(UAFResponseBody(uafResponse: other)), as: UTF8.self))
        #expect(refused.status == 400 && String(decoding: refused.body, as: UTF8.self).contains("uaf_transaction_content_hash_mismatch"))

        let step = try await Self.step(h, signin, authenticator)
        #expect(step.status == 200 && step.json["status"] as? String == "SUCCEEDED", "\(step.json)")
        #expect((step.json["transaction"] as? [String: Any])?["status"] as? String == "PENDING", "\(step.json)")
        // The decision carries the UAF step, which verifies offline as the transaction service checks it.
        let published = try await h.published()
        let decisionData = try #require(published.first { $0.type == TransactionDecision.eventType }?.data)
        let decision = try JSONValueDecoder().decode(TransactionDecision.self, from: Array(decisionData.utf8))
        #expect(decision.amr == ["uaf"] && decision.assertions.count == 1)
        let evidence = try #require(decision.assertions.first)
        #expect(evidence.format == "uaf" && evidence.aaid == "ABCD#0001" && evidence.keyEncoding == 0x100 && evidence.signatureAlgorithm == 1)
        let record = UAFRegistrationRecord(
            aaid: "ABCD#0001", keyID: authenticator.registrations[0].keyID, publicKey: try #require(Base64URL.decode(evidence.publicKeyCose)),
            keyEncoding: .eccX962Raw, signatureAlgorithm: .secp256r1ECDSASHA256Raw, signCounter: 0, attestationType: .attestationBasicSurrogate)
        try UAFTransactionConfirmation.verify(
            assertion: try #require(Base64URL.decode(evidence.authenticatorData)), fcParams: evidence.clientDataJSON,
            context: UAFResponseContext(appID: "http://localhost:8080/registration/v1/tenants/acme/uaf/facets", trustedFacetIDs: ["https://acme.example"]),
            record: record, detailsHash: detailsHash, nonce: try #require(Base64URL.decode(evidence.nonce)), transactions: [UAFTransactionConfirmation.transaction(text: details.uafDisplayText)])
        #expect(published.contains { $0.type == AuthenticationSucceeded.eventType && $0.data.contains(#""method":"uaf""#) })
    }

    @Test func aUAFSignInIsAnnouncedAndACounterGoingBackFlagsTheKey() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        try await Self.registered(h, authenticator)
        let keyID = Base64URL.encode(authenticator.registrations[0].keyID)
        let signedIn = try await Self.finish(h, try authenticator.authenticate(try await Self.request(h)))
        #expect(signedIn.status == 200, "\(signedIn.body)")
        let succeeded = try #require(try await h.published().first { $0.type == AuthenticationSucceeded.eventType })
        let event = try JSONValueDecoder().decode(AuthenticationSucceeded.self, from: Array(succeeded.data.utf8))
        #expect(event.method == "uaf" && event.aaid == "ABCD#0001" && event.credentialId == keyID && event.signCount == 1 && event.sessionId != nil)
        try event.validate()

        authenticator.rewindCounter(to: 0)
        let clone = try await Self.finish(h, try authenticator.authenticate(try await Self.request(h)))
        #expect(clone.status == 400 && clone.body.contains("uaf_sign_counter_not_increased"), "\(clone.body)")
        let suspected = try #require(try await h.published().first { $0.type == CredentialCloneSuspected.eventType })
        let flagged = try JSONValueDecoder().decode(CredentialCloneSuspected.self, from: Array(suspected.data.utf8))
        #expect(flagged.aaid == "ABCD#0001" && flagged.credentialId == keyID && flagged.storedSignCount == 1 && flagged.presentedSignCount == 1)
        // From then on the key is refused, even with a counter that moves on…
        authenticator.rewindCounter(to: 10)
        let after = try await Self.finish(h, try authenticator.authenticate(try await Self.request(h)))
        #expect(after.status == 400 && after.body.contains("credential_suspended"), "\(after.body)")
        // …until registration resumes it.
        try await h.consume(
            UAFAuthenticatorStatusChanged(tenantId: "acme", aaid: "ABCD#0001", keyId: keyID, status: "active", changedAt: Date()),
            source: .registration)
        let resumed = try await Self.finish(h, try authenticator.authenticate(try await Self.request(h)))
        #expect(resumed.status == 200, "\(resumed.body)")
    }
    @Test func thePlainUAFAPIConfirmsATransactionByItsID() async throws {
        let transactionService = try Self.transactionService()
        defer { Task { await transactionService.shutdown() } }
        let h = try await Harness.withDatabase(environment: ["SIGNET_TRANSACTION_URL": "http://127.0.0.1:\(transactionService.boundPort)"])
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        try await Self.registered(h, authenticator)
        let details = TransactionDetails(text: "Pay €10 to ACME", amount: "10.00", currency: "EUR", payee: "ACME")
        let detailsHash = SHA256.hash(Array(details.canonicalJSON.utf8))
        let id = "tx_" + String(repeating: "ef", count: 16)
        try await h.consume(
            TransactionChanged(
                tenantId: "acme", transactionId: id, revision: 1, status: "PENDING",
                subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"), details: details,
                detailsHash: Base64URL.encode(detailsHash), expiresAt: Date().addingTimeInterval(300), changedAt: Date()),
            source: .transaction)
        // Another user cannot be asked to confirm alice's transaction; an unknown one is 404.
        let other = await h.send("POST", "/v1/tenants/acme/uaf/authentications/requests", json: #"{"username":"bob","transaction":{"transactionId":"\#(id)"}}"#)
        #expect(other.status == 403, "\(String(decoding: other.body, as: UTF8.self))")
        let unknown = await h.send(
            "POST", "/v1/tenants/acme/uaf/authentications/requests", json: #"{"transaction":{"transactionId":"tx_\#(String(repeating: "0", count: 32))"}}"#)
        #expect(unknown.status == 404, "\(String(decoding: unknown.body, as: UTF8.self))")

        let request = try await Self.request(h, #"{"transaction":{"transactionId":"\#(id)"}}"#)
        #expect(request.transaction?.first.flatMap { Base64URL.decode($0.content) } == Array(details.uafDisplayText.utf8))
        #expect(request.policy.accepted.first?.first?.keyIDs == [Base64URL.encode(authenticator.registrations[0].keyID)])
        let done = try await Self.finish(h, try authenticator.authenticate(request))
        #expect(done.status == 200, "\(done.body)")
        let result = try JSONValueDecoder().decode(UAFAuthenticationResult.self, from: Array(done.body.utf8))
        #expect(result.transactionConfirmed && result.transaction == SignInTransaction(transactionId: id, status: "PENDING"))
        let decisionData = try #require(try await h.published().first { $0.type == TransactionDecision.eventType }?.data)
        let decision = try JSONValueDecoder().decode(TransactionDecision.self, from: Array(decisionData.utf8))
        #expect(decision.transactionId == id && decision.amr == ["uaf"] && decision.assertions.first?.format == "uaf")
        try decision.validate()
    }

    /// With the gateway's certificate configured, a client's serverEndPoint must be its hash
    /// (UAF channel binding, Protocol §3.5.7.5 step 3.d); a client that sends none still signs in.
    @Test func channelBindingIsCheckedAgainstTheConfiguredCertificate() async throws {
        let gateway = try MetadataTestPKI.root("gateway.example.test")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("uaf-gateway-\(UUID().uuidString).pem").path
        let pem = "-----BEGIN CERTIFICATE-----\n" + Data(gateway.der).base64EncodedString(options: .lineLength64Characters) + "\n-----END CERTIFICATE-----\n"
        try Data(pem.utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let h = try await Harness.withDatabase(environment: ["SIGNET_UAF_TLS_SERVER_CERTIFICATES": file])
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        try await Self.registered(h, authenticator)

        let bound = UAFServerCertificate(try gateway.certificate)
        authenticator.channelBinding.serverEndPoint = UAFServerCertificate(try MetadataTestPKI.root("proxy.example").certificate).serverEndPoint
        let intercepted = try await Self.finish(h, try authenticator.authenticate(try await Self.request(h)))
        #expect(intercepted.status == 400 && intercepted.body.contains("uaf_channel_binding_mismatch"), "\(intercepted.body)")
        authenticator.channelBinding.serverEndPoint = bound.serverEndPoint
        #expect(try await Self.finish(h, try authenticator.authenticate(try await Self.request(h))).status == 200)
        authenticator.channelBinding = UAFChannelBinding()
        #expect(try await Self.finish(h, try authenticator.authenticate(try await Self.request(h))).status == 200)
    }
}

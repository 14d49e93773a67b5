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
import Tokens
@testable import TransactionService

/// A FIDO UAF confirmation step in the transaction service, over a scratch database: the
/// service knows the user's UAF key from registration's event and verifies the step again
/// (dynamic-linking challenge, displayed text, signature with its own record of the key, the
/// tenant's AppID and trusted facets) before it issues a tcToken; a step that fails any of
/// these leaves the transaction PENDING.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct UAFConfirmationTests {
    typealias Harness = ConfirmationSteps.Harness
    static let key = ConfirmationSteps.key
    static let appID = "http://localhost:8080/registration/v1/tenants/shop/uaf/facets"

    static func seed(_ h: Harness) async throws { try await ConfirmationSteps.seed(h) }

    static func create(_ h: Harness, username: String = "alice") async throws -> TransactionResource {
        try await ConfirmationSteps.create(h, username: username)
    }

    /// Registers a key with `authenticator` and gives the service registration's event.
    static func registered(_ h: Harness, _ authenticator: SoftUAFAuthenticator, username: String = "alice") async throws -> SoftUAFAuthenticator.Registration {
        _ = try authenticator.registrationAssertion(fcParams: "unused")
        let registration = try #require(authenticator.registrations.last)
        let point = Array(try registration.key.publicKey().subjectPublicKeyInfo.suffix(65))
        try await h.consume(
            UAFAuthenticatorRegistered(
                tenantId: "shop", subjectRef: h.context.configuration.subjectKey.ref(tenant: "shop", username: username), aaid: authenticator.aaid, keyId: Base64URL.encode(registration.keyID),
                publicKey: Base64URL.encode(point), keyEncoding: 0x100, signatureAlgorithm: 1, signCounter: 0,
                attestationType: "basic_surrogate", registeredAt: Date(), appId: Self.appID),
            source: .registration)
        return registration
    }

    /// The evidence of a step in which `authenticator` confirmed `tx` (or signed `shown`, or the
    /// bytes `signed`, instead of its text).
    static func evidence(
        _ authenticator: SoftUAFAuthenticator, _ tx: TransactionResource, shown: String? = nil, signed: [UInt8]? = nil, appID: String = Self.appID
    ) throws -> SignedAssertionEvidence {
        let nonce = SecureRandom.bytes(16)
        let hash = try #require(Base64URL.decode(tx.detailsHash))
        let fc = try authenticator.fcParams(
            appID: appID,
            challenge: UAFTransactionConfirmation.challenge(detailsHash: hash, nonce: nonce))
        let text = shown ?? tx.details.uafDisplayText
        let assertion = try authenticator.authenticationAssertion(fcParams: fc, transactionContent: signed ?? Array(text.utf8))
        let registration = try #require(authenticator.registrations.last)
        let point = Array(try registration.key.publicKey().subjectPublicKeyInfo.suffix(65))
        return SignedAssertionEvidence(
            credentialId: Base64URL.encode(registration.keyID), authenticatorData: Base64URL.encode(assertion), clientDataJSON: fc,
            signature: "", publicKeyCose: Base64URL.encode(point), nonce: Base64URL.encode(nonce), format: SignedAssertionEvidence.uafFormat,
            aaid: authenticator.aaid, keyEncoding: 0x100, signatureAlgorithm: 1)
    }

    static func decide(_ h: Harness, _ tx: TransactionResource, _ evidence: SignedAssertionEvidence) async throws -> TransactionResource {
        try await ConfirmationSteps.decide(h, tx, evidence, amr: "uaf")
    }

    @Test func aUAFStepThatSignedTheDetailsConfirmsTheTransaction() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await Self.seed(h)
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://shop.example")
        let registration = try await Self.registered(h, authenticator)
        let tx = try await Self.create(h)
        let confirmed = try await Self.decide(h, tx, try Self.evidence(authenticator, tx))
        #expect(confirmed.status == "CONFIRMED")
        let claims = try await ConfirmationSteps.tcTokenClaims(h, try #require(confirmed.tcToken))
        #expect(claims.subject == "alice")
        #expect(claims[claim: "amr"] == .array(["uaf"]) && claims[claim: "cid"] == .string(Base64URL.encode(registration.keyID)))
        // The evidence keeps the UAF step as signed.
        await ConfirmationSteps.expectEvidence(h, tx, format: "uaf")
    }

    /// A UAF step confirms one transaction: replayed in a decision for another pending
    /// transaction of the user with the same details (same details hash, so the same challenge
    /// verifies), it leaves that one PENDING (before migration 191 it confirmed it too). The
    /// spent challenge stays while the key may sign again (suspended), goes once the key is
    /// deleted, and goes with the user's data on erasure.
    @Test func aUAFStepConfirmsOneTransactionOnly() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await Self.seed(h)
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://shop.example")
        let registration = try await Self.registered(h, authenticator)
        let a = try await Self.create(h)
        let b = try await Self.create(h)
        #expect(a.detailsHash == b.detailsHash)
        let step = try Self.evidence(authenticator, a)
        #expect(try await Self.decide(h, a, step).status == "CONFIRMED")
        let replayed = try await Self.decide(h, b, step)
        #expect(replayed.status == "PENDING" && replayed.tcToken == nil)
        // B with its own step confirms.
        #expect(try await Self.decide(h, b, try Self.evidence(authenticator, b)).status == "CONFIRMED")

        func spent() async throws -> Int {
            try await h.context.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM consumed_evidence").first?.int("n") ?? -1 }
        }
        func status(_ value: String) async throws {
            try await h.consume(
                UAFAuthenticatorStatusChanged(
                    tenantId: "shop", aaid: "ABCD#0001", keyId: Base64URL.encode(registration.keyID), status: value, changedAt: Date()),
                source: .registration)
        }
        #expect(try await spent() == 2)
        try await status("suspended")
        #expect(try await h.context.pool.withConnection { try await ConsumedEvidence.purge(on: $0) } == 0)
        try await status("deleted")
        #expect(try await h.context.pool.withConnection { try await ConsumedEvidence.purge(limit: 1, on: $0) } == 2)
        #expect(try await spent() == 0)

        // Erasure: the user's transactions' spent challenges are exported and erased with them.
        let other = SoftUAFAuthenticator(aaid: "ABCD#0002", facetID: "https://shop.example")
        _ = try await Self.registered(h, other)
        let c = try await Self.create(h)
        #expect(try await Self.decide(h, c, try Self.evidence(other, c)).status == "CONFIRMED")
        let subjectRef = h.context.configuration.subjectKey.ref(tenant: "shop", username: "alice")
        let user = UserDataSubject(tenant: "shop", username: "alice", subject: nil, subjectRef: subjectRef)
        let exported = try await h.context.pool.withConnection { try await TransactionUserData().export(user, reader: "test", on: $0) }
        #expect(exported["spentChallenges"]?.arrayValue?.compactMap { $0["transactionId"] } == [.string(c.transactionId)])
        let tallies = try await h.context.withTransaction { try await TransactionUserData().erase(user, on: $0) }
        #expect(tallies["spentChallenges"] == 1 && tallies["transactions"] == 3)
        #expect(try await spent() == 0)
    }

    /// Migration 192 spends the steps of confirmations made before 191, from their evidence: the
    /// row it derives is the one the confirmation spends now, and the replay is refused.
    @Test func theBackfillSpendsTheStepsOfEarlierConfirmations() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await Self.seed(h)
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://shop.example")
        _ = try await Self.registered(h, authenticator)
        let a = try await Self.create(h)
        let b = try await Self.create(h)
        let step = try Self.evidence(authenticator, a)
        #expect(try await Self.decide(h, a, step).status == "CONFIRMED")
        func rows() async throws -> [String] {
            try await h.context.pool.withConnection {
                try await $0.query(
                    "SELECT encode(challenge, 'hex') || '/' || transaction_id || '/' || coalesce(aaid, '-') || '/' || encode(key_id, 'hex') AS r FROM consumed_evidence")
            }.compactMap { $0.string("r") }
        }
        let spent = try await rows()
        let challenge = DynamicLinkingChallenge.derive(
            detailsHash: try #require(Base64URL.decode(a.detailsHash)), nonce: try #require(Base64URL.decode(step.nonce)))
        #expect(spent.count == 1 && spent.first?.hasPrefix(Hex.encode(challenge) + "/" + a.transactionId + "/ABCD#0001/") == true)
        // As before 191: confirmed, nothing spent.
        let backfill = try #require(TransactionMigrations.all.first { $0.version == 192 })
        try await h.context.pool.withConnection { conn in
            try await conn.query("DELETE FROM consumed_evidence")
            try await conn.execute(backfill.sql)
        }
        #expect(try await rows() == spent)
        #expect(try await Self.decide(h, b, step).status == "PENDING")
    }

    /// A transaction created with a PNG form: the image is checked at creation (a bad one is
    /// refused with its code and creates nothing), it is part of the details hash, a step that
    /// signed the image's hash confirms, and a step that signed another image's hash (over the
    /// same, correct dynamic-linking challenge) leaves it PENDING.
    @Test func aUAFStepThatSignedTheTransactionsImageConfirmsAndAnotherImageDoesNot() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await Self.seed(h)
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://shop.example")
        _ = try await Self.registered(h, authenticator)
        let png = TestPNG.make(width: 24, height: 12, colorType: 2)
        func create(_ image: [UInt8], characteristics: String = #"{"width":24,"height":12,"bitDepth":8,"colorType":2,"compression":0,"filter":0,"interlace":0}"#) async -> HTTPResponse {
            let body = #"{"username":"alice","text":"Pay €10 to ACME","amount":"10.00","currency":"EUR","payee":"ACME","images":[{"content":"\#(Base64URL.encode(image))","tcDisplayPNGCharacteristics":\#(characteristics)}]}"#
            return await h.send("POST", "/v1/tenants/shop/transactions", bearer: Self.key, json: body)
        }
        func problem(_ r: HTTPResponse) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:] }
        func code(_ r: HTTPResponse) -> String? { problem(r)["code"] as? String }
        // Refused images, each with its code and the member it names.
        let hidden = await create(TestPNG.make(width: 24, height: 12, colorType: 2, extra: [TestPNG.chunk("tEXt", Array("k\u{0}v".utf8))]))
        #expect(hidden.status == 400 && code(hidden) == "uaf_transaction_png_unsupported_chunk", "\(String(decoding: hidden.body, as: UTF8.self))")
        #expect(problem(hidden)["field"] as? String == "images[0].content")
        let mismatch = await create(png, characteristics: #"{"width":32,"height":12,"bitDepth":8,"colorType":2,"compression":0,"filter":0,"interlace":0}"#)
        #expect(mismatch.status == 400 && code(mismatch) == "uaf_transaction_png_characteristics_mismatch")
        let notPNG = await create(Array("not a png".utf8))
        #expect(notPNG.status == 400 && code(notPNG) == "uaf_transaction_png_malformed")
        #expect(try await h.published().filter { $0.type == TransactionChanged.eventType }.isEmpty, "refused creations created nothing")

        let created = await create(png)
        // The event carries the image with the details (transaction content, as the text is).
        let changed = try #require(try await h.published().last { $0.type == TransactionChanged.eventType })
        #expect(try JSONValueDecoder().decode(TransactionChanged.self, from: Array(changed.data.utf8)).details.images?.first?.content == Base64URL.encode(png))
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let tx = try JSONValueDecoder().decode(TransactionResource.self, from: created.body)
        #expect(tx.images?.count == 1 && tx.images?.first.flatMap { Base64URL.decode($0.content) } == png)
        // The image is in the details hash.
        var withoutImage = tx.details
        withoutImage.images = nil
        #expect(tx.detailsHash == Base64URL.encode(SHA256.hash(Array(tx.details.canonicalJSON.utf8))))
        #expect(tx.detailsHash != Base64URL.encode(SHA256.hash(Array(withoutImage.canonicalJSON.utf8))))

        let other = try await Self.decide(h, tx, try Self.evidence(authenticator, tx, signed: TestPNG.make(width: 24, height: 12, colorType: 0)))
        #expect(other.status == "PENDING" && other.tcToken == nil)
        let confirmed = try await Self.decide(h, tx, try Self.evidence(authenticator, tx, signed: png))
        #expect(confirmed.status == "CONFIRMED" && confirmed.tcToken != nil)
    }

    /// PATCH replaces the images as creation sets them: checked first (a refused image amends
    /// nothing), then in the recomputed details hash; a step that signed the old image over the
    /// new hash leaves the transaction PENDING, one that signed the new image confirms it.
    @Test func amendingTheImagesChecksThemAndRecomputesTheHash() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await Self.seed(h)
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://shop.example")
        _ = try await Self.registered(h, authenticator)
        let colour = TestPNG.make(width: 24, height: 12, colorType: 2)
        let grey = TestPNG.make(width: 24, height: 12, colorType: 0)
        func images(_ png: [UInt8], colorType: Int) -> String {
            #"[{"content":"\#(Base64URL.encode(png))","tcDisplayPNGCharacteristics":{"width":24,"height":12,"bitDepth":8,"colorType":\#(colorType),"compression":0,"filter":0,"interlace":0}}]"#
        }
        let created = await h.send(
            "POST", "/v1/tenants/shop/transactions", bearer: Self.key,
            json: #"{"username":"alice","text":"Pay €10 to ACME","amount":"10.00","currency":"EUR","payee":"ACME","images":\#(images(colour, colorType: 2))}"#)
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        let tx = try JSONValueDecoder().decode(TransactionResource.self, from: created.body)
        let path = "/v1/tenants/shop/transactions/\(tx.transactionId)"
        func read() async throws -> TransactionResource {
            try JSONValueDecoder().decode(TransactionResource.self, from: await h.send("GET", path, bearer: Self.key).body)
        }

        // A refused image amends nothing.
        let hidden = TestPNG.make(width: 24, height: 12, colorType: 0, extra: [TestPNG.chunk("tEXt", Array("k\u{0}v".utf8))])
        let refused = await h.send("PATCH", path, bearer: Self.key, json: #"{"text":"Pay €11 to ACME","images":\#(images(hidden, colorType: 0))}"#)
        let problem = (try? JSONSerialization.jsonObject(with: Data(refused.body))) as? [String: Any] ?? [:]
        #expect(refused.status == 400 && problem["code"] as? String == "uaf_transaction_png_unsupported_chunk" && problem["field"] as? String == "images[0].content", "\(problem)")
        let unchanged = try await read()
        #expect(unchanged.detailsHash == tx.detailsHash && unchanged.text == tx.text && unchanged.images == tx.images)
        let eventsBefore = try await h.published().filter { $0.type == TransactionChanged.eventType }.count
        #expect(eventsBefore == 1, "the refused PATCH published nothing")

        let patched = await h.send("PATCH", path, bearer: Self.key, json: #"{"images":\#(images(grey, colorType: 0))}"#)
        #expect(patched.status == 200, "\(String(decoding: patched.body, as: UTF8.self))")
        let amended = try JSONValueDecoder().decode(TransactionResource.self, from: patched.body)
        #expect(amended.images?.count == 1 && amended.images?.first.flatMap { Base64URL.decode($0.content) } == grey)
        #expect(amended.images?.first?.tcDisplayPNGCharacteristics == UAFDisplayPNGCharacteristics(width: 24, height: 12, bitDepth: 8, colorType: 0))
        #expect(amended.detailsHash != tx.detailsHash && amended.detailsHash == Base64URL.encode(SHA256.hash(Array(amended.details.canonicalJSON.utf8))))
        #expect(try await read().detailsHash == amended.detailsHash)
        // The amendment's event carries the new image and the recomputed hash.
        let changes = try await h.published().filter { $0.type == TransactionChanged.eventType }
        #expect(changes.count == eventsBefore + 1)
        let event = try JSONValueDecoder().decode(TransactionChanged.self, from: Array(try #require(changes.last).data.utf8))
        #expect(event.details.images?.map(\.content) == [Base64URL.encode(grey)] && event.detailsHash == amended.detailsHash)

        #expect(try await Self.decide(h, amended, try Self.evidence(authenticator, amended, signed: colour)).status == "PENDING")
        #expect(try await Self.decide(h, amended, try Self.evidence(authenticator, amended, signed: grey)).status == "CONFIRMED")
    }

    @Test func aUAFStepThatDoesNotBindTheTransactionConfirmsNothing() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await Self.seed(h)
        let alice = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://shop.example")
        _ = try await Self.registered(h, alice)
        let bob = SoftUAFAuthenticator(aaid: "ABCD#0002", facetID: "https://shop.example")
        _ = try await Self.registered(h, bob, username: "bob")
        let tx = try await Self.create(h)

        // Another text than the details' display text.
        #expect(try await Self.decide(h, tx, try Self.evidence(alice, tx, shown: "Pay €1 to ACME")).status == "PENDING")
        // Another user's key.
        #expect(try await Self.decide(h, tx, try Self.evidence(bob, tx)).status == "PENDING")
        // A public key in the evidence other than the one registered.
        var swapped = try Self.evidence(alice, tx)
        swapped.publicKeyCose = Base64URL.encode(Array(try PrivateKey.generateP256().publicKey().subjectPublicKeyInfo.suffix(65)))
        #expect(try await Self.decide(h, tx, swapped).status == "PENDING")
        // The nonce of another challenge.
        var renonced = try Self.evidence(alice, tx)
        renonced.nonce = Base64URL.encode(SecureRandom.bytes(16))
        #expect(try await Self.decide(h, tx, renonced).status == "PENDING")
        // A suspended key.
        try await h.consume(
            UAFAuthenticatorStatusChanged(
                tenantId: "shop", aaid: "ABCD#0001", keyId: Base64URL.encode(alice.registrations[0].keyID), status: "suspended", changedAt: Date()),
            source: .registration)
        #expect(try await Self.decide(h, tx, try Self.evidence(alice, tx)).status == "PENDING")
        // Resumed, the same key's proper step confirms it: the refusals above were the binding's.
        try await h.consume(
            UAFAuthenticatorStatusChanged(
                tenantId: "shop", aaid: "ABCD#0001", keyId: Base64URL.encode(alice.registrations[0].keyID), status: "active", changedAt: Date()),
            source: .registration)
        #expect(try await Self.decide(h, tx, try Self.evidence(alice, tx)).status == "CONFIRMED")
    }

    /// The AppID and facet are checked again here, against this service's own record of the
    /// tenant's (registration's events), not taken from the authentication service.
    @Test func aUAFStepForAnotherAppIDOrFacetConfirmsNothing() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await Self.seed(h)
        let alice = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://shop.example")
        _ = try await Self.registered(h, alice)
        let tx = try await Self.create(h)

        // Signed, with the right key and content, for another AppID.
        #expect(try await Self.decide(h, tx, try Self.evidence(alice, tx, appID: "https://evil.example/uaf/facets")).status == "PENDING")
        // From a facet the tenant does not trust (not one of its origins, no UAF settings).
        alice.facetID = "android:apk-key-hash:bE0f1WtRJrZv/C0y9CM73bAUqiI"
        #expect(try await Self.decide(h, tx, try Self.evidence(alice, tx)).status == "PENDING")
        // The tenant's UAF settings name that app: its facet is trusted from then on, and the
        // web origin, no longer listed, is not.
        try await h.consume(
            UAFSettingsChanged(
                tenantId: "shop", facetIds: ["android:apk-key-hash:bE0f1WtRJrZv/C0y9CM73bAUqiI"], policy: ["accepted": [[["assertionSchemes": ["UAFV1TLV"]]]]],
                allowSurrogateWithoutMetadata: true, revision: 1, changedAt: Date()),
            source: .registration)
        alice.facetID = "https://shop.example"
        #expect(try await Self.decide(h, tx, try Self.evidence(alice, tx)).status == "PENDING")
        alice.facetID = "android:apk-key-hash:bE0f1WtRJrZv/C0y9CM73bAUqiI"
        #expect(try await Self.decide(h, tx, try Self.evidence(alice, tx)).status == "CONFIRMED")
    }

    /// Without any AppID announced for the tenant (no registration event carrying it), no UAF
    /// step confirms: the check fails closed.
    @Test func withoutAKnownAppIDNoUAFStepConfirms() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await Self.seed(h)
        let alice = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://shop.example")
        _ = try alice.registrationAssertion(fcParams: "unused")
        let registration = try #require(alice.registrations.last)
        let point = Array(try registration.key.publicKey().subjectPublicKeyInfo.suffix(65))
        try await h.consume(
            UAFAuthenticatorRegistered(
                tenantId: "shop", subjectRef: h.context.configuration.subjectKey.ref(tenant: "shop", username: "alice"), aaid: alice.aaid, keyId: Base64URL.encode(registration.keyID),
                publicKey: Base64URL.encode(point), keyEncoding: 0x100, signatureAlgorithm: 1, signCounter: 0,
                attestationType: "basic_surrogate", registeredAt: Date()),
            source: .registration)
        let tx = try await Self.create(h)
        #expect(try await Self.decide(h, tx, try Self.evidence(alice, tx)).status == "PENDING")
    }
}

import Crypto
import FIDO
import Foundation
import Kafka
import Schema
import ServiceKit
import Testing
import TestSupport
import Tokens

/// Transaction confirmation through the running services: the RP creates a transaction on the
/// transaction service, the user confirms it in a sign-in flow on the authentication service
/// (the passkey signs the dynamic-linking challenge of the details), the transaction service
/// checks the signed steps again and issues a tcToken the RP verifies, online and offline.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct TransactionStackTests {
    static let transaction = "http://127.0.0.1:8083"
    static let authentication = "http://127.0.0.1:8082"
    let adaptive = AdaptiveSignInStackTests()

    func create(_ t: AdaptiveSignInStackTests.Tenant, username: String, amount: String, payee: String = "ACME Ltd", expiresIn: Int = 300) async throws -> TransactionResource {
        let body = TransactionCreateRequest(
            username: username, text: "Pay €\(amount) to \(payee)", amount: amount, currency: "EUR", payee: payee, type: "payment",
            expiresInSeconds: expiresIn)
        let r = try await TestHTTP.send(
            "POST", "\(Self.transaction)/v1/tenants/\(t.id)/transactions", headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"],
            body: try AdaptiveSignInStackTests.json(body))
        #expect(r.status == 201, "\(r.text)")
        return try AdaptiveSignInStackTests.decode(TransactionResource.self, r)
    }

    func get(_ t: AdaptiveSignInStackTests.Tenant, _ id: String) async throws -> TransactionResource {
        try AdaptiveSignInStackTests.decode(
            TransactionResource.self,
            try await TestHTTP.send("GET", "\(Self.transaction)/v1/tenants/\(t.id)/transactions/\(id)", headers: ["Authorization": "Bearer \(t.key)"]))
    }

    /// Starts the confirmation once the authentication service knows the transaction.
    func startConfirmation(_ t: AdaptiveSignInStackTests.Tenant, _ id: String) async throws -> TestHTTP.Response {
        let body = Array(#"{"context": {"transactionId": "\#(id)", "transactionAmount": 1}}"#.utf8)
        var last: TestHTTP.Response?
        _ = await TestStack.eventually {
            last = try? await TestHTTP.send(
                "POST", "\(Self.authentication)/v1/tenants/\(t.id)/signins", headers: ["Content-Type": "application/json"], body: body)
            return last?.status != 404
        }
        return try #require(last)
    }

    func verifyToken(_ t: AdaptiveSignInStackTests.Tenant, _ id: String, _ token: String) async throws -> TCTokenVerifyResult {
        let r = try await TestHTTP.send(
            "POST", "\(Self.transaction)/v1/tenants/\(t.id)/transactions/\(id)/tctoken/verify",
            headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"], body: try AdaptiveSignInStackTests.json(TCTokenVerifyRequest(tcToken: token)))
        #expect(r.status == 200, "\(r.text)")
        return try AdaptiveSignInStackTests.decode(TCTokenVerifyResult.self, r)
    }

    @Test func aPasskeyConfirmsWhatWasShownAndTheRPVerifiesTheTCToken() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let passkey = try await adaptive.register("gina", in: t)
        let tx = try await create(t, username: "gina", amount: "385.00")
        #expect(tx.status == "PENDING")
        let canonical = #"{"amount":"385.00","currency":"EUR","payee":"ACME Ltd","text":"Pay €385.00 to ACME Ltd","type":"payment"}"#
        #expect(tx.details.canonicalJSON == canonical)
        #expect(tx.detailsHash == Base64URL.encode(SHA256.hash(Array(canonical.utf8))))

        // The sign-in binds to the transaction's user, and the rules see its real amount.
        let started = try AdaptiveSignInStackTests.decode(SignInStarted.self, try await startConfirmation(t, tx.transactionId))
        #expect(started.action == "TRIGGER_AUTHENTICATION" && started.sequences == [["fido2"]])
        let done = try await adaptive.step(t, started.signinId, with: passkey)
        let result = try AdaptiveSignInStackTests.decode(SignInProgress.self, done)
        #expect(result.status == "SUCCEEDED", "\(done.text)")
        // The app learns that the confirmation is on its way…
        #expect(result.transaction == SignInTransaction(transactionId: tx.transactionId, status: "PENDING"), "\(done.text)")

        var confirmed: TransactionResource?
        #expect(await TestStack.eventually {
            confirmed = try? await get(t, tx.transactionId)
            return confirmed?.status == "CONFIRMED"
        })
        let token = try #require(confirmed?.tcToken)
        // …and gets the tcToken back with the sign-in's result, the one the RP reads.
        var handedBack: SignInTransaction?
        #expect(await TestStack.eventually {
            let r = try? await TestHTTP.send("GET", "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(started.signinId)")
            handedBack = r.flatMap { try? AdaptiveSignInStackTests.decode(SignInProgress.self, $0).transaction }
            return handedBack?.status == "CONFIRMED"
        })
        #expect(handedBack?.tcToken == token)
        #expect(try await verifyToken(t, tx.transactionId, token) == TCTokenVerifyResult(valid: true, alreadyConsumed: false))
        #expect(try await verifyToken(t, tx.transactionId, token) == TCTokenVerifyResult(valid: true, alreadyConsumed: true))

        // Offline, with the published keys only.
        let jwks = try await TestHTTP.send("GET", "\(Self.transaction)/v1/tenants/\(t.id)/.well-known/jwks.json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/transaction", audience: t.id))
        let jwt = try verifier.verify(token, now: Date())
        #expect(jwt.header.type == "tc+jwt" && jwt.claims.subject == "gina")
        #expect(jwt.claims[claim: "txn"] == .string(tx.transactionId) && jwt.claims[claim: "txn_hash"] == .string(tx.detailsHash))
        #expect(jwt.claims[claim: "amount"] == .string("385.00") && jwt.claims[claim: "currency"] == .string("EUR"))
        #expect(jwt.claims[claim: "payee"] == .string("ACME Ltd") && jwt.claims[claim: "amr"] == .array(["fido2"]))
        #expect(jwt.claims[claim: "cid"] == .string(passkey.credentialIDBase64URL) && jwt.claims.id != nil)
        // And with PyJWT, a standard JWT library, given only the JWKS.
        let python = TestStack.environment["SIGNET_SINK_PYTHON"] ?? "\(TestStack.dataDir)/venv/bin/python"
        if FileManager.default.isExecutableFile(atPath: python) {
            let script = """
                import json, sys, jwt
                d = json.load(sys.stdin)
                keys = {k.key_id: k for k in jwt.PyJWKSet.from_dict(d["jwks"]).keys}
                key = keys[jwt.get_unverified_header(d["token"])["kid"]]
                c = jwt.decode(d["token"], key=key.key, algorithms=["ES256"], audience=d["aud"], issuer=d["iss"])
                print(json.dumps({"txn": c["txn"], "amount": c["amount"], "payee": c["payee"]}))
                """
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = ["-c", script]
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let request: [String: Any] = [
                "jwks": try JSONSerialization.jsonObject(with: Data(jwks.body)), "token": token, "aud": t.id, "iss": "http://localhost:8080/transaction",
            ]
            input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: request))
            try input.fileHandleForWriting.close()
            let answer = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let decoded = try JSONSerialization.jsonObject(with: answer) as? [String: String]
            #expect(process.terminationStatus == 0 && decoded == ["txn": tx.transactionId, "amount": "385.00", "payee": "ACME Ltd"])
        } else {
            #expect(TestStack.environment["CI"] == nil, "PyJWT is needed: no Python at \(python)")
        }
        let serviceWide = try await TestHTTP.send("GET", "\(Self.transaction)/.well-known/jwks.json")
        #expect(try JWKSet(json: serviceWide.body).key(withID: jwt.header.keyID ?? "") != nil)

        // The token of this transaction does not confirm another.
        let other = try await create(t, username: "gina", amount: "10.00")
        #expect(try await verifyToken(t, other.transactionId, token) == TCTokenVerifyResult(valid: false, reason: "transaction_mismatch", alreadyConsumed: false))

        // The evidence reproduces the verification offline.
        let evidenceResponse = try await TestHTTP.send(
            "GET", "\(Self.transaction)/v1/tenants/\(t.id)/transactions/\(tx.transactionId)/evidence", headers: ["Authorization": "Bearer \(t.key)"])
        let evidence = try AdaptiveSignInStackTests.decode(TransactionEvidence.self, evidenceResponse)
        let detailsHash = SHA256.hash(Array(evidence.displayed.utf8))
        #expect(Base64URL.encode(detailsHash) == evidence.detailsHash && evidence.tcToken == token && evidence.assertions.count == 1)
        for a in evidence.assertions {
            let clientData = try #require(Base64URL.decode(a.clientDataJSON))
            let collected = try CollectedClientData(bytes: clientData)
            let challenge = DynamicLinkingChallenge.derive(detailsHash: detailsHash, nonce: try #require(Base64URL.decode(a.nonce)))
            #expect(collected.type == "webauthn.get" && Base64URL.decode(collected.challenge) == challenge)
            let key = try COSEKey(bytes: try #require(Base64URL.decode(a.publicKeyCose)))
            let signed = try #require(Base64URL.decode(a.authenticatorData)) + SHA256.hash(clientData)
            #expect(key.verify(signature: try #require(Base64URL.decode(a.signature)), message: signed))
            #expect(a.credentialId == passkey.credentialIDBase64URL)
        }
    }

    @Test func amendedDetailsExpiryAndRejectionStopTheConfirmation() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let passkey = try await adaptive.register("hugo", in: t)
        // The amount changes after the challenge was issued: the signature no longer matches.
        let tx = try await create(t, username: "hugo", amount: "385.00")
        let started = try AdaptiveSignInStackTests.decode(SignInStarted.self, try await startConfirmation(t, tx.transactionId))
        let base = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(started.signinId)/methods/fido2"
        let c = try await TestHTTP.send("POST", "\(base)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
        let options = try JSONDecoder().decode(RequestOptionsJSON.self, from: JSONSerialization.data(withJSONObject: try #require(try c.json()["publicKey"] as? [String: Any])))
        let amended = try await TestHTTP.send(
            "PATCH", "\(Self.transaction)/v1/tenants/\(t.id)/transactions/\(tx.transactionId)",
            headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"], body: Array(#"{"amount": "3850.00"}"#.utf8))
        #expect(amended.status == 200)
        let auth = TestStack.pool(database: "signet_authentication", size: 1)
        defer { auth.close() }
        #expect(await TestStack.eventually {
            let rows = try? await auth.withConnection { try await $0.query("SELECT revision FROM transactions WHERE id = \(tx.transactionId)") }
            return rows?.first?.int("revision") == 2
        })
        let verify = try await TestHTTP.send(
            "POST", "\(base)/verify", headers: ["Content-Type": "application/json"],
            body: try AdaptiveSignInStackTests.json(FIDO2VerifyRequest(credential: try passkey.get(options, origin: AdaptiveSignInStackTests.origin))))
        let code = try verify.json()["code"] as? String
        #expect(verify.status == 400 && code == "challenge_mismatch", "\(verify.text)")
        #expect(try await get(t, tx.transactionId).status == "PENDING")

        // An expired transaction cannot be confirmed.
        let short = try await create(t, username: "hugo", amount: "20.00", expiresIn: 5)
        _ = try await startConfirmation(t, short.transactionId)
        try await Task.sleep(for: .seconds(6))
        let late = try await TestHTTP.send(
            "POST", "\(Self.authentication)/v1/tenants/\(t.id)/signins", headers: ["Content-Type": "application/json"],
            body: Array(#"{"context": {"transactionId": "\#(short.transactionId)"}}"#.utf8))
        let lateCode = try late.json()["code"] as? String
        #expect(late.status == 409 && lateCode == "transaction_not_pending")
        #expect(await TestStack.eventually(timeout: .seconds(20)) { (try? await get(t, short.transactionId))?.status == "EXPIRED" })

        // A reject before any step is verified is nobody's: whoever knows the transaction id can
        // start a sign-in for it. Refused, and the transaction stays PENDING (before this stop it
        // was REJECTED). The user's rejection after a verified step: below.
        let refused = try await create(t, username: "hugo", amount: "99.00")
        let flow = try AdaptiveSignInStackTests.decode(SignInStarted.self, try await startConfirmation(t, refused.transactionId))
        let reject = try await TestHTTP.send("POST", "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(flow.signinId)/reject")
        let rejectCode = try? reject.json()["code"] as? String
        #expect(reject.status == 403 && rejectCode == "authentication_required", "\(reject.text)")
        // The decision event, had there been one, reaches the transaction service in well under this.
        try await Task.sleep(for: .seconds(2))
        #expect(try await get(t, refused.transactionId).status == "PENDING")
        let still = try AdaptiveSignInStackTests.decode(
            SignInProgress.self, try await TestHTTP.send("GET", "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(flow.signinId)"))
        #expect(still.status == "IN_PROGRESS")
    }

    @Test func theUserRejectsAfterAVerifiedStep() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let first = try await adaptive.register("kim", in: t)
        _ = try await adaptive.register("kim", in: t)
        #expect(try await adaptive.putRuleset(t, AdaptiveSignInStackTests.ruleset).status == 200)
        // Two steps for a large amount: the first shows that the user is the transaction's, and
        // the user then declines instead of signing again.
        let tx = try await create(t, username: "kim", amount: "5000.00")
        let started = try AdaptiveSignInStackTests.decode(SignInStarted.self, try await startConfirmation(t, tx.transactionId))
        #expect(started.sequences == [["fido2", "fido2"]])
        let one = try AdaptiveSignInStackTests.decode(SignInProgress.self, try await adaptive.step(t, started.signinId, with: first))
        #expect(one.status == "IN_PROGRESS")
        let reject = try await TestHTTP.send("POST", "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(started.signinId)/reject")
        #expect(reject.status == 200, "\(reject.text)")
        #expect((try? AdaptiveSignInStackTests.decode(SignInProgress.self, reject))?.status == "REJECTED")
        #expect(await TestStack.eventually { (try? await get(t, tx.transactionId))?.status == "REJECTED" })
    }

    @Test func aConfirmationsStepsConfirmOneTransactionOnly() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let passkey = try await adaptive.register("lena", in: t)
        // Two pending transactions of one user with byte-identical details: one details hash.
        let a = try await create(t, username: "lena", amount: "250.00")
        let b = try await create(t, username: "lena", amount: "250.00")
        #expect(a.detailsHash == b.detailsHash && a.transactionId != b.transactionId)
        let started = try AdaptiveSignInStackTests.decode(SignInStarted.self, try await startConfirmation(t, a.transactionId))
        let done = try AdaptiveSignInStackTests.decode(SignInProgress.self, try await adaptive.step(t, started.signinId, with: passkey))
        #expect(done.status == "SUCCEEDED")
        #expect(await TestStack.eventually { (try? await get(t, a.transactionId))?.status == "CONFIRMED" })
        let evidence = try AdaptiveSignInStackTests.decode(
            TransactionEvidence.self,
            try await TestHTTP.send(
                "GET", "\(Self.transaction)/v1/tenants/\(t.id)/transactions/\(a.transactionId)/evidence", headers: ["Authorization": "Bearer \(t.key)"]))
        // Whoever can produce on the authentication topic replays A's decision, with B's id.
        let replayed = try EventEnvelope(
            TransactionDecision(
                tenantId: t.id, transactionId: b.transactionId, decision: "confirmed", detailsHash: b.detailsHash, signinId: started.signinId,
                amr: evidence.amr, assertions: evidence.assertions, decidedAt: Date()),
            source: ServiceName.authentication.eventSource, subject: t.id)
        let producer = try Stack.producer()
        for result in await producer.sendAll([replayed.kafkaMessage(topic: Topic.authentication, key: t.id)]) { _ = try result.get() }
        #expect(await TestStack.eventually { (try? await Stack.processedCount(.transaction, eventID: replayed.id)) == 1 })
        // Refused: A's steps were spent by A's confirmation (before this stop B was CONFIRMED).
        #expect(try await get(t, b.transactionId).status == "PENDING")
        let pool = TestStack.pool(database: "signet_transaction", size: 1)
        defer { pool.close() }
        let spent = try await pool.withConnection {
            try await $0.query("SELECT transaction_id FROM consumed_evidence WHERE tenant_id = \(t.id)")
        }.compactMap { $0.string("transaction_id") }
        #expect(spent == [a.transactionId])
    }

    @Test func aLargeAmountMakesTheRulesDemandASecondMethod() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let first = try await adaptive.register("ida", in: t)
        let second = try await adaptive.register("ida", in: t)
        #expect(try await adaptive.putRuleset(t, AdaptiveSignInStackTests.ruleset).status == 200)
        let tx = try await create(t, username: "ida", amount: "5000.00")
        // The client claims a small amount; the rules see the transaction's.
        let started = try AdaptiveSignInStackTests.decode(SignInStarted.self, try await startConfirmation(t, tx.transactionId))
        #expect(started.matchedRule == "big-amount" && started.sequences == [["fido2", "fido2"]])
        let one = try AdaptiveSignInStackTests.decode(SignInProgress.self, try await adaptive.step(t, started.signinId, with: first))
        #expect(one.status == "IN_PROGRESS")
        #expect(try await get(t, tx.transactionId).status == "PENDING")
        let two = try AdaptiveSignInStackTests.decode(SignInProgress.self, try await adaptive.step(t, started.signinId, with: second))
        #expect(two.status == "SUCCEEDED")
        var confirmed: TransactionResource?
        #expect(await TestStack.eventually {
            confirmed = try? await get(t, tx.transactionId)
            return confirmed?.status == "CONFIRMED"
        })
        let jwks = try await TestHTTP.send("GET", "\(Self.transaction)/v1/tenants/\(t.id)/.well-known/jwks.json")
        let jwt = try JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/transaction", audience: t.id)
        ).verify(try #require(confirmed?.tcToken), now: Date())
        #expect(jwt.claims[claim: "amr"] == .array(["fido2", "fido2"]))
    }

    @Test func securePaymentConfirmationAndQuickAuthenticationConfirmTransactions() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let passkey = try await adaptive.register("jo", in: t)

        // Secure Payment Confirmation: the merchant's page shows the total and payee; the
        // assertion (client data payment.get) is accepted when they are the transaction's.
        func spc(amountShown: String) async throws -> (TestHTTP.Response, String) {
            let tx = try await create(t, username: "jo", amount: "385.00")
            let started = try AdaptiveSignInStackTests.decode(SignInStarted.self, try await startConfirmation(t, tx.transactionId))
            let base = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(started.signinId)/methods/fido2"
            let c = try await TestHTTP.send("POST", "\(base)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
            let options = try JSONDecoder().decode(
                RequestOptionsJSON.self, from: JSONSerialization.data(withJSONObject: try #require(try c.json()["publicKey"] as? [String: Any])))
            let assertion = try passkey.getPayment(
                options, origin: "https://shop.example", topOrigin: "https://shop.example", payeeName: "ACME Ltd", currency: "EUR", value: amountShown)
            let verify = try await TestHTTP.send(
                "POST", "\(base)/verify", headers: ["Content-Type": "application/json"],
                body: try AdaptiveSignInStackTests.json(FIDO2VerifyRequest(credential: assertion)))
            return (verify, tx.transactionId)
        }
        let (wrong, _) = try await spc(amountShown: "38.50")
        let wrongCode = try wrong.json()["code"] as? String
        #expect(wrong.status == 400 && wrongCode == "payment_details_mismatch", "\(wrong.text)")
        let (ok, id) = try await spc(amountShown: "385.0")
        #expect((try? AdaptiveSignInStackTests.decode(SignInProgress.self, ok))?.status == "SUCCEEDED", "\(ok.text)")
        #expect(await TestStack.eventually { (try? await get(t, id))?.status == "CONFIRMED" })

        // Quick authentication of a transaction: one round trip, the time-derived nonce inside
        // the dynamic-linking challenge.
        let quickTx = try await create(t, username: "jo", amount: "12.00", payee: "Globex")
        #expect(await TestStack.eventually { (try? await startConfirmation(t, quickTx.transactionId))?.status == 201 })
        let time = Int64(Date().timeIntervalSince1970)
        let nonce = Array(QuickAuthChallenge.derive(tenant: t.id, credentialID: passkey.credentialID, time: time).prefix(16))
        let challenge = DynamicLinkingChallenge.derive(detailsHash: try #require(Base64URL.decode(quickTx.detailsHash)), nonce: nonce)
        let options = RequestOptionsJSON(
            challenge: Base64URL.encode(challenge), timeout: nil, rpId: "localhost", allowCredentials: [], userVerification: "preferred", hints: [])
        let quick = try await TestHTTP.send(
            "POST", "\(Self.authentication)/v1/tenants/\(t.id)/signins/quick", headers: ["Content-Type": "application/json"],
            body: try AdaptiveSignInStackTests.json(
                QuickSignInRequest(
                    time: time, credential: try passkey.get(options, origin: AdaptiveSignInStackTests.origin), context: ["transactionId": .string(quickTx.transactionId)])))
        #expect((try? AdaptiveSignInStackTests.decode(QuickSignInResult.self, quick))?.status == "SUCCEEDED", "\(quick.text)")
        var confirmed: TransactionResource?
        #expect(await TestStack.eventually {
            confirmed = try? await get(t, quickTx.transactionId)
            return confirmed?.status == "CONFIRMED"
        })
        #expect(try await verifyToken(t, quickTx.transactionId, try #require(confirmed?.tcToken)).valid)
    }
}

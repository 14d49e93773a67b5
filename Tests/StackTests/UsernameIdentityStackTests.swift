import Crypto
import FIDO
import Foundation
import Kafka
import Schema
import ServiceKit
import Testing
import TestSupport
import Tokens

/// One definition of a username's identity (its exact bytes, in NFC) at every comparison site,
/// tried as the account takeover of the security findings was: a second user whose username is
/// canonically equivalent to the victim's (NFD `jose` + U+0301 for NFC `josé`; U+212A KELVIN
/// SIGN + `ate` for `Kate`; U+212B ANGSTROM SIGN; U+037E GREEK QUESTION MARK) must not exist,
/// and case and width variants (`kate`, fullwidth `Ｋate`) are other accounts, consistently.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct UsernameIdentityStackTests {
    static let registration = "http://127.0.0.1:8081"
    static let authentication = "http://127.0.0.1:8082"
    static let transaction = "http://127.0.0.1:8083"
    let adaptive = AdaptiveSignInStackTests()

    /// Non-NFC spellings of valid NFC usernames.
    static let lookAlikes: [(victim: String, attacker: String)] = [
        ("jos\u{E9}", "jose\u{301}"), ("Kate", "\u{212A}ate"), ("\u{C5}ngstr\u{F6}m", "\u{212B}ngstr\u{F6}m"), ("why;", "why\u{37E}"),
    ]

    static func pathComponent(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    func signIn(_ t: AdaptiveSignInStackTests.Tenant, _ username: String, with authenticator: SoftAuthenticator) async throws -> String {
        let started = try await adaptive.start(t, username: username)
        let done = try await adaptive.step(t, started.signinId, with: authenticator)
        let progress = try AdaptiveSignInStackTests.decode(SignInProgress.self, done)
        return try #require(progress.sessionToken, "\(done.text)")
    }

    static func expectInvalidUsername(_ r: TestHTTP.Response, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let body = try? r.json()
        #expect(
            r.status == 400 && body?["code"] as? String == "invalid_field" && body?["field"] as? String == "username", "\(what): \(r.status) \(r.text)",
            sourceLocation: sourceLocation)
    }

    @Test func canonicallyEquivalentUsernamesAreRefusedAtEveryEntrance() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let rp = ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"]
        let victim = try await adaptive.register("jos\u{E9}", in: t)
        let victimToken = try await signIn(t, "jos\u{E9}", with: victim)
        for (_, attacker) in Self.lookAlikes {
            #expect(!UsernameRules.isValid(attacker))
            let json = { (s: String) in try AdaptiveSignInStackTests.json(s) }
            let name = try json(attacker)
            let path = Self.pathComponent(attacker)
            // Registration: a passkey, a method, the lists.
            try Self.expectInvalidUsername(
                try await TestHTTP.send(
                    "POST", "\(Self.registration)/v1/tenants/\(t.id)/webauthn/registrations/options", headers: rp,
                    body: try AdaptiveSignInStackTests.json(RegistrationOptionsRequest(username: attacker))), "registration options")
            try Self.expectInvalidUsername(
                try await TestHTTP.send(
                    "POST", "\(Self.registration)/v1/tenants/\(t.id)/users/\(path)/methods", headers: rp, body: Array(#"{"type":"totp"}"#.utf8)),
                "method setup")
            for (method, suffix) in [("GET", "credentials"), ("GET", "methods"), ("DELETE", "credentials/\(victim.credentialIDBase64URL)")] {
                try Self.expectInvalidUsername(
                    try await TestHTTP.send(method, "\(Self.registration)/v1/tenants/\(t.id)/users/\(path)/\(suffix)", headers: rp), "\(method) \(suffix)")
                // The victim's own session token on the look-alike path: refused, not served.
                try Self.expectInvalidUsername(
                    try await TestHTTP.send(
                        method, "\(Self.registration)/v1/tenants/\(t.id)/users/\(path)/\(suffix)", headers: ["Authorization": "Bearer \(victimToken)"]),
                    "victim token \(method) \(suffix)")
            }
            // Authentication: sign-in, WebAuthn options, sign-up, unlock.
            try Self.expectInvalidUsername(
                try await TestHTTP.send(
                    "POST", "\(Self.authentication)/v1/tenants/\(t.id)/signins", headers: ["Content-Type": "application/json"],
                    body: Array(#"{"username":\#(String(decoding: name, as: UTF8.self))}"#.utf8)), "sign-in")
            try Self.expectInvalidUsername(
                try await TestHTTP.send(
                    "POST", "\(Self.authentication)/v1/tenants/\(t.id)/webauthn/authentications/options", headers: ["Content-Type": "application/json"],
                    body: try AdaptiveSignInStackTests.json(AuthenticationOptionsRequest(username: attacker))), "authentication options")
            try Self.expectInvalidUsername(
                try await TestHTTP.send(
                    "POST", "\(Self.authentication)/v1/tenants/\(t.id)/signups", headers: rp,
                    body: Array(#"{"username":\#(String(decoding: name, as: UTF8.self))}"#.utf8)), "sign-up")
            try Self.expectInvalidUsername(
                try await TestHTTP.send("POST", "\(Self.authentication)/v1/tenants/\(t.id)/users/\(path)/methods/fido2/unlock", headers: rp), "unlock")
            // Transaction.
            try Self.expectInvalidUsername(
                try await TestHTTP.send(
                    "POST", "\(Self.transaction)/v1/tenants/\(t.id)/transactions", headers: rp,
                    body: try AdaptiveSignInStackTests.json(
                        TransactionCreateRequest(
                            username: attacker, text: "Pay €1 to ACME", amount: "1.00", currency: "EUR", payee: "ACME", type: "payment",
                            expiresInSeconds: 300))), "transaction")
        }
        // The victim's account is untouched and still theirs.
        let list = try await TestHTTP.send(
            "GET", "\(Self.registration)/v1/tenants/\(t.id)/users/\(Self.pathComponent("jos\u{E9}"))/credentials", headers: ["Authorization": "Bearer \(victimToken)"])
        let listed = (try list.json()["credentials"] as? [[String: Any]])?.compactMap { $0["credentialId"] as? String }
        #expect(list.status == 200 && listed == [victim.credentialIDBase64URL], "\(list.text)")
    }

    @Test func caseAndWidthVariantsAreOtherAccountsEverywhere() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let victim = try await adaptive.register("Kate", in: t)
        let tx = try await TransactionStackTests().create(t, username: "Kate", amount: "99.00")
        for variant in ["kate", "KATE", "\u{FF2B}ate"] {
            #expect(UsernameRules.isValid(variant) && !UsernameRules.identical(variant, "Kate"))
            let attacker = try await adaptive.register(variant, in: t)
            let token = try await signIn(t, variant, with: attacker)
            let auth = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
            let kate = Self.pathComponent("Kate")
            // Kate's credentials: not listed, not deleted, no passkey added to her account.
            let list = try await TestHTTP.send("GET", "\(Self.registration)/v1/tenants/\(t.id)/users/\(kate)/credentials", headers: auth)
            #expect(list.status == 403, "\(variant): \(list.text)")
            let delete = try await TestHTTP.send(
                "DELETE", "\(Self.registration)/v1/tenants/\(t.id)/users/\(kate)/credentials/\(victim.credentialIDBase64URL)", headers: auth)
            #expect(delete.status == 403, "\(variant): \(delete.text)")
            let methods = try await TestHTTP.send("GET", "\(Self.registration)/v1/tenants/\(t.id)/users/\(kate)/methods", headers: auth)
            #expect(methods.status == 403, "\(variant): \(methods.text)")
            let options = try await TestHTTP.send(
                "POST", "\(Self.registration)/v1/tenants/\(t.id)/webauthn/registrations/options", headers: auth,
                body: try AdaptiveSignInStackTests.json(RegistrationOptionsRequest(username: "Kate")))
            #expect(options.status == 403, "\(variant): \(options.text)")
            // Kate's transaction: the variant's passkey cannot confirm it.
            let started = try AdaptiveSignInStackTests.decode(SignInStarted.self, try await TransactionStackTests().startConfirmation(t, tx.transactionId))
            let step = try await adaptive.step(t, started.signinId, with: attacker)
            #expect(step.status >= 400, "\(variant): \(step.text)")
        }
        // Kate still signs in with her passkey, and her transaction is still pending.
        _ = try await signIn(t, "Kate", with: victim)
        #expect(try await TransactionStackTests().get(t, tx.transactionId).status == "PENDING")
    }

    /// The transaction service takes no one's word that a signing credential is the
    /// transaction's user's: a decision event whose assertion verifies, signed by another
    /// user's registered passkey over the right dynamic-linking challenge, confirms nothing.
    @Test func aConfirmationSignedByAnotherUsersPasskeyIsRefusedByTheTransactionService() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        _ = try await adaptive.register("Kate", in: t)
        let other = try await adaptive.register("kate", in: t)
        let tx = try await TransactionStackTests().create(t, username: "Kate", amount: "42.00")
        let hash = try #require(Base64URL.decode(tx.detailsHash))

        func decision(by authenticator: SoftAuthenticator) throws -> TransactionDecision {
            let nonce = SecureRandom.bytes(16)
            let challenge = DynamicLinkingChallenge.derive(detailsHash: hash, nonce: nonce)
            let options = RequestOptionsJSON(
                challenge: Base64URL.encode(challenge), timeout: nil, rpId: "localhost", allowCredentials: [], userVerification: "required", hints: [])
            let a = try authenticator.get(options, origin: AdaptiveSignInStackTests.origin)
            let evidence = SignedAssertionEvidence(
                credentialId: a.id, authenticatorData: a.response.authenticatorData, clientDataJSON: a.response.clientDataJSON,
                signature: a.response.signature, publicKeyCose: Base64URL.encode(authenticator.coseKey), nonce: Base64URL.encode(nonce))
            return TransactionDecision(
                tenantId: t.id, transactionId: tx.transactionId, decision: "confirmed", detailsHash: tx.detailsHash, signinId: "si_forged",
                amr: ["fido2"], assertions: [evidence], decidedAt: Date())
        }
        // The transaction service has seen both credentials before the forged decision.
        let forged = try EventEnvelope(try decision(by: other), source: ServiceName.authentication.eventSource, subject: t.id)
        let producer = try Stack.producer()
        for result in await producer.sendAll([forged.kafkaMessage(topic: Topic.authentication, key: t.id)]) { _ = try result.get() }
        #expect(await TestStack.eventually { (try? await Stack.processedCount(.transaction, eventID: forged.id)) == 1 })
        #expect(try await TransactionStackTests().get(t, tx.transactionId).status == "PENDING")
    }
}

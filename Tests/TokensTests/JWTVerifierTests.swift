import Crypto
import Foundation
import Testing
import Tokens

/// Claim validation through the whole verifier: time, issuer, audience, presence, types.
@Suite struct JWTVerifierTests {
    let privateKey: PrivateKey
    let signer: JWTSigner
    let verifier: JWTVerifier

    init() throws {
        privateKey = try PrivateKey.generateP256()
        signer = try JWTSigner(privateKey: privateKey)
        verifier = JWTVerifier(keySet: try JWKSet(keys: [signer.publicJWK]), options: Scenario.options())
    }

    func verify(_ claims: JWTClaims, at now: Date = Scenario.now, options: JWTValidationOptions? = nil) throws -> JWT {
        let token = try signer.sign(claims)
        let verifier = options.map { JWTVerifier(key: signer.verificationKey, options: $0) } ?? self.verifier
        return try verifier.verify(token, now: now)
    }

    /// A token over `payload` JSON as given (for types and shapes Signet would never sign).
    func verifyRaw(_ payload: String) throws -> JWT {
        let token = try Forge.token(
            header: #"{"alg":"ES256","typ":"JWT","kid":"\#(signer.keyID)"}"#, payload: payload, key: privateKey)
        return try verifier.verify(token, now: Scenario.now)
    }

    // MARK: - Time

    @Test func expiredTokenIsRefusedBeyondTheLeeway() throws {
        let claims = Scenario.claims(lifetime: 300)
        let exp = claims.expiresAt!
        #expect(try verify(claims, at: exp.addingTimeInterval(-1)).claims == claims)
        // Within the default 30 s of leeway.
        #expect(try verify(claims, at: exp.addingTimeInterval(29)).claims == claims)
        expectJOSEError(.expired) { try verify(claims, at: exp.addingTimeInterval(30)) }
        expectJOSEError(.expired) { try verify(claims, at: exp.addingTimeInterval(3600)) }
        // With no leeway, exp itself is already too late (RFC 7519 §4.1.4).
        let strict = Scenario.options { $0.leeway = 0 }
        expectJOSEError(.expired) { try verify(claims, at: exp, options: strict) }
    }

    @Test func notBeforeInTheFutureIsRefused() throws {
        var claims = Scenario.claims()
        claims.notBefore = Scenario.now.addingTimeInterval(120)
        expectJOSEError(.notYetValid) { try verify(claims) }
        #expect(try verify(claims, at: Scenario.now.addingTimeInterval(91)).claims == claims)  // 29 s early
        claims.notBefore = Scenario.now.addingTimeInterval(20)
        #expect(try verify(claims).claims == claims)
    }

    @Test func issuedInTheFutureIsRefused() throws {
        let claims = Scenario.claims(issuedAt: Scenario.now.addingTimeInterval(600))
        expectJOSEError(.notYetValid) { try verify(claims) }
    }

    @Test func maximumLifetimeIsEnforcedWhenSet() throws {
        let options = Scenario.options { $0.maximumLifetime = 600 }
        #expect(try verify(Scenario.claims(lifetime: 600), options: options).claims.subject == "user-42")
        expectJOSEError(.lifetimeTooLong) { try verify(Scenario.claims(lifetime: 601), options: options) }
        var noIssuedAt = Scenario.claims(lifetime: 60)
        noIssuedAt.issuedAt = nil
        expectJOSEError(.missingClaim) { try verify(noIssuedAt, options: options) }
        noIssuedAt.notBefore = Scenario.now
        #expect(try verify(noIssuedAt, options: options).claims == noIssuedAt)
    }

    @Test func missingExpirationIsRefusedUnlessOptional() throws {
        var claims = Scenario.claims()
        claims.expiresAt = nil
        expectJOSEError(.missingClaim) { try verify(claims) }
        #expect(try verify(claims, options: Scenario.options { $0.requireExpiration = false }).claims == claims)
    }

    // MARK: - Issuer and audience

    @Test(arguments: ["https://evil.test/authentication", "https://signet.test/authentication/", "HTTPS://SIGNET.TEST/AUTHENTICATION", ""])
    func wrongIssuerIsRefused(issuer: String) throws {
        expectJOSEError(.issuerMismatch) { try verify(Scenario.claims(issuer: issuer)) }
    }

    @Test func missingIssuerIsRefused() throws {
        var claims = Scenario.claims()
        claims.issuer = nil
        expectJOSEError(.missingClaim) { try verify(claims) }
    }

    @Test(arguments: [["rp-other"], ["rp-demo-2", "RP-DEMO"], ["rp-dem"]])
    func wrongAudienceIsRefused(audience: [String]) throws {
        expectJOSEError(.audienceMismatch) { try verify(Scenario.claims(audience: audience)) }
    }

    @Test func audienceMayBeAnArrayThatContainsUs() throws {
        let jwt = try verify(Scenario.claims(audience: ["rp-other", Scenario.audience]))
        #expect(jwt.claims.audience == ["rp-other", Scenario.audience])
        var claims = Scenario.claims()
        claims.audience = nil
        expectJOSEError(.missingClaim) { try verify(claims) }
    }

    @Test func requiredClaimsMustBePresent() throws {
        let options = Scenario.options { $0.requiredClaims = ["sub", "amr"] }
        expectJOSEError(.missingClaim) { try verify(Scenario.claims(), options: options) }
        let withAMR = Scenario.claims(extra: ["amr": ["hwk", "user"]])
        #expect(try verify(withAMR, options: options).claims.extra["amr"] == ["hwk", "user"])
    }

    // MARK: - Payload shape

    @Test func registeredClaimsOfTheWrongTypeAreInvalid() throws {
        let base = #""iss":"\#(Scenario.issuer)","aud":"\#(Scenario.audience)""#
        for payload in [
            #"{\#(base),"exp":"1800000300"}"#,
            #"{\#(base),"exp":true}"#,
            #"{\#(base),"exp":1800000300,"nbf":null}"#,
            #"{"iss":["\#(Scenario.issuer)"],"aud":"\#(Scenario.audience)","exp":1800000300}"#,
            #"{"iss":"\#(Scenario.issuer)","aud":[],"exp":1800000300}"#,
            #"{"iss":"\#(Scenario.issuer)","aud":[42],"exp":1800000300}"#,
            #"{\#(base),"exp":1800000300,"sub":7}"#,
        ] {
            expectJOSEError(.invalidClaim, "\(payload)") { try verifyRaw(payload) }
        }
    }

    @Test func payloadThatIsNotOneStrictJSONObjectIsMalformed() throws {
        for payload in [
            // Two aud members: JSONDecoder would keep the first, JSONSerialization the last.
            #"{"iss":"\#(Scenario.issuer)","aud":"rp-other","aud":"\#(Scenario.audience)","exp":1800000300}"#,
            #"["not","an","object"]"#,
            #"{"iss":"\#(Scenario.issuer)""#,
            "",
        ] {
            expectJOSEError(.malformed, "\(payload)") { try verifyRaw(payload) }
        }
    }

    @Test func fractionalNumericDatesAreAccepted() throws {
        let jwt = try verifyRaw(#"{"iss":"\#(Scenario.issuer)","aud":"\#(Scenario.audience)","exp":1800000300.5}"#)
        #expect(jwt.claims.expiresAt == Date(timeIntervalSince1970: 1_800_000_300.5))
    }

    @Test func extraClaimsAndTypedPayloadsComeThrough() throws {
        struct TransactionClaims: Decodable, Equatable {
            let sub: String
            let amr: [String]
            let transaction: Transaction
            struct Transaction: Decodable, Equatable {
                let id: String
                let amount: String
                let payee: String
            }
        }
        let claims = Scenario.claims(extra: [
            "amr": ["hwk", "face"], "acr": "urn:signet:aal2", "sign_up": false,
            "transaction": ["id": "tx-1", "amount": "12.50 EUR", "payee": "ACME"],
        ])
        let jwt = try verify(claims)
        #expect(jwt.claims.extra["acr"]?.stringValue == "urn:signet:aal2")
        #expect(jwt.claims.extra["sign_up"]?.boolValue == false)
        #expect(jwt.claims[claim: "transaction"]?.objectValue?["payee"] == "ACME")
        let typed = try jwt.decodePayload(as: TransactionClaims.self)
        #expect(typed.amr == ["hwk", "face"])
        #expect(typed.transaction == .init(id: "tx-1", amount: "12.50 EUR", payee: "ACME"))
    }
}

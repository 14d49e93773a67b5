import Crypto
import Foundation
import Testing
import Tokens

/// The compact form and the algorithm rules, each rejection with its precise code.
@Suite struct JWSTests {
    let privateKey: PrivateKey
    let signer: JWTSigner
    let keySet: JWKSet
    let verifier: JWTVerifier
    let claims = Scenario.claims()

    init() throws {
        privateKey = try PrivateKey.generateP256()
        signer = try JWTSigner(privateKey: privateKey)
        keySet = try JWKSet(keys: [signer.publicJWK])
        verifier = JWTVerifier(keySet: keySet, options: Scenario.options())
    }

    /// A token with `header` (JSON text) over the standard claims, signed by the test key.
    func forged(header: String, algorithm: SignatureAlgorithm = .es256) throws -> String {
        try Forge.token(header: header, payload: Scenario.payload(claims), key: privateKey, algorithm: algorithm)
    }

    @Test func signedTokenVerifiesAndHasTheDocumentedHeader() throws {
        let token = try signer.sign(claims)
        let header = String(decoding: try #require(Base64URL.decode(String(token.prefix { $0 != "." }))), as: UTF8.self)
        #expect(header == #"{"alg":"ES256","typ":"JWT","kid":"\#(signer.keyID)"}"#)
        let jwt = try verifier.verify(token, now: Scenario.now)
        #expect(jwt.claims == claims)
        #expect(jwt.header.keyID == signer.keyID)
        // r‖s, 64 bytes, not DER.
        let jws = try JWS(compact: token)
        #expect(jws.signature.count == 64)
    }

    // MARK: - alg

    @Test(arguments: ["none", "None", "NONE", "nOnE"])
    func unsecuredTokensAreRefused(alg: String) throws {
        let header = #"{"alg":"\#(alg)","kid":"\#(signer.keyID)"}"#
        let unsigned = try Forge.token(header: header, payload: Scenario.payload(claims))
        #expect(unsigned.hasSuffix("."))
        expectJOSEError(.unsupportedAlgorithm) { try verifier.verify(unsigned, now: Scenario.now) }
        // Nor with a signature attached.
        let signed = try forged(header: header)
        expectJOSEError(.unsupportedAlgorithm) { try verifier.verify(signed, now: Scenario.now) }
        expectJOSEError(.unsupportedAlgorithm) { try JWS(compact: signed) }
    }

    @Test func hs256WithThePublicKeyAsSecretIsRefused() throws {
        // The classic confusion: an attacker HMACs the token with the verifier's public key
        // (its PEM/DER, its JWK text, its raw point) and hopes the library takes alg from the
        // header. Every one of these is refused before any MAC is computed.
        let publicKey = try privateKey.publicKey()
        let secrets: [[UInt8]] = [
            publicKey.subjectPublicKeyInfo,
            Array(signer.publicJWK.jsonString.utf8),
            Array(publicKey.subjectPublicKeyInfo.suffix(65)),
        ]
        for alg in ["HS256", "HS384", "HS512"] {
            for secret in secrets {
                let header = #"{"alg":"\#(alg)","typ":"JWT","kid":"\#(signer.keyID)"}"#
                let input = Forge.b64(header) + "." + Forge.b64(Scenario.payload(claims))
                let mac = SHA256.hmac(key: secret, data: Array(input.utf8))
                let token = input + "." + Base64URL.encode(mac)
                expectJOSEError(.unsupportedAlgorithm) { try verifier.verify(token, now: Scenario.now) }
                let configured = JWTVerifier(key: signer.verificationKey, options: Scenario.options())
                expectJOSEError(.unsupportedAlgorithm) { try configured.verify(token, now: Scenario.now) }
            }
        }
    }

    @Test(arguments: ["ES384", "ES512", "RS256", "PS256", "EdDSA"])
    func headerAlgorithmOtherThanTheKeysIsRefused(alg: String) throws {
        let token = try forged(header: #"{"alg":"\#(alg)","kid":"\#(signer.keyID)"}"#)
        expectJOSEError(.algorithmMismatch) { try verifier.verify(token, now: Scenario.now) }
        // Allowing the other algorithm does not let the token choose it: the key fixes ES256.
        let permissive = JWTVerifier(keySet: keySet, options: Scenario.options(allowedAlgorithms: Set(JWSAlgorithm.allCases)))
        expectJOSEError(.algorithmMismatch) { try permissive.verify(token, now: Scenario.now) }
    }

    @Test(arguments: ["es256", "ES256 ", "HS256", "RSA-OAEP", "ES256K", ""])
    func unknownAlgorithmNamesAreRefused(alg: String) throws {
        let token = try forged(header: #"{"alg":"\#(alg)","kid":"\#(signer.keyID)"}"#)
        expectJOSEError(.unsupportedAlgorithm) { try verifier.verify(token, now: Scenario.now) }
    }

    @Test func keyWhoseAlgorithmIsNotAllowedIsRefused() throws {
        let edOnly = JWTVerifier(keySet: keySet, options: Scenario.options(allowedAlgorithms: [.edDSA]))
        expectJOSEError(.unsupportedAlgorithm) { try edOnly.verify(try signer.sign(claims), now: Scenario.now) }
        let configured = JWTVerifier(key: signer.verificationKey, options: Scenario.options(allowedAlgorithms: [.edDSA]))
        expectJOSEError(.unsupportedAlgorithm) { try configured.verify(try signer.sign(claims), now: Scenario.now) }
    }

    @Test(arguments: [#"{"kid":"k"}"#, #"{"alg":256}"#, #"{"alg":null}"#, #"["ES256"]"#, #""ES256""#])
    func headerWithoutAStringAlgIsMalformed(header: String) throws {
        let token = try forged(header: header)
        expectJOSEError(.malformed) { try JWS(compact: token) }
    }

    // MARK: - Keys

    @Test func unknownKeyIDIsRefused() throws {
        let token = try forged(header: #"{"alg":"ES256","kid":"not-a-published-kid"}"#)
        expectJOSEError(.unknownKey) { try verifier.verify(token, now: Scenario.now) }
    }

    @Test func missingKeyIDIsRefusedWithAKeySet() throws {
        let token = try forged(header: #"{"alg":"ES256"}"#)
        expectJOSEError(.unknownKey) { try verifier.verify(token, now: Scenario.now) }
        // A configured key needs no kid.
        let configured = JWTVerifier(key: signer.verificationKey, options: Scenario.options())
        #expect(try configured.verify(token, now: Scenario.now).claims == claims)
        // But a kid naming another key is refused even then.
        let other = try forged(header: #"{"alg":"ES256","kid":"other"}"#)
        expectJOSEError(.unknownKey) { try configured.verify(other, now: Scenario.now) }
    }

    @Test func anotherKeysSignatureUnderThePublishedKidIsInvalid() throws {
        let impostor = try PrivateKey.generateP256()
        let token = try Forge.token(
            header: #"{"alg":"ES256","kid":"\#(signer.keyID)"}"#, payload: Scenario.payload(claims), key: impostor)
        expectJOSEError(.signatureInvalid) { try verifier.verify(token, now: Scenario.now) }
    }

    @Test func tamperedPayloadIsInvalid() throws {
        let token = try signer.sign(claims)
        var changed = claims
        changed.subject = "admin"
        let tampered = Forge.replacing(part: 1, of: token, with: Forge.b64(Scenario.payload(changed)))
        expectJOSEError(.signatureInvalid) { try verifier.verify(tampered, now: Scenario.now) }
    }

    @Test func signatureOfTheWrongShapeIsInvalid() throws {
        let token = try signer.sign(claims)
        let input = String(token[..<token.lastIndex(of: ".")!])
        // DER instead of r‖s.
        let der = try privateKey.sign(Array(input.utf8), algorithm: .es256)
        expectJOSEError(.signatureInvalid) { try verifier.verify(input + "." + Base64URL.encode(der), now: Scenario.now) }
        // Truncated, extended, zero.
        let raw = try #require(Base64URL.decode(String(token[token.index(after: token.lastIndex(of: ".")!)...])))
        for bad in [Array(raw.dropLast()), raw + [0], [UInt8](repeating: 0, count: 64)] {
            expectJOSEError(.signatureInvalid) { try verifier.verify(input + "." + Base64URL.encode(bad), now: Scenario.now) }
        }
    }

    // MARK: - Compact form

    @Test func wrongNumberOfPartsIsMalformed() throws {
        let token = try signer.sign(claims)
        let parts = token.split(separator: ".").map(String.init)
        let candidates = [
            parts[0] + "." + parts[1],  // two parts
            token + ".",  // trailing dot
            token + "." + parts[2],  // four parts
            parts[0] + "." + parts[1] + ".." + parts[2],  // empty part inserted
            [parts[0], "", "", "", parts[2]].joined(separator: "."),  // JWE shape
            "." + token,
            "",
            "....",
        ]
        for candidate in candidates {
            expectJOSEError(.malformed, "\(candidate.prefix(20))…") { try verifier.verify(candidate, now: Scenario.now) }
        }
    }

    @Test func badBase64URLIsMalformed() throws {
        let token = try signer.sign(claims)
        let parts = token.split(separator: ".").map(String.init)
        for index in 0..<3 {
            let part = parts[index]
            let standardAlphabet = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            let head = String(part.prefix(4))
            let tail = String(part.dropFirst(4))
            let variants: [String] = [
                part + "=",  // padding
                part + "==",
                standardAlphabet + "+/",  // standard alphabet
                head + " " + tail,  // whitespace
                head + "\n" + tail,
                String(part.dropLast()) + "é",  // outside the alphabet
                String(part.dropLast()) + "%",
            ]
            for variant in variants {
                let bad = Forge.replacing(part: index, of: token, with: variant)
                expectJOSEError(.malformed, "part \(index): \(variant.suffix(8))") { try verifier.verify(bad, now: Scenario.now) }
            }
        }
        // A length no base64 text can have (4n+1).
        let header = parts[0] + String(repeating: "A", count: (4 - parts[0].count % 4) % 4 + 1)
        expectJOSEError(.malformed) { try JWS(compact: Forge.replacing(part: 0, of: token, with: header)) }
    }

    @Test func nonCanonicalBase64URLIsMalformed() throws {
        // A 64-byte signature is 86 characters whose last one carries 4 padding bits: "…Q"
        // (0b010000) and "…R" (0b010001) decode alike, so only the canonical one is accepted.
        let token = try signer.sign(claims)
        let signature = String(token[token.index(after: token.lastIndex(of: ".")!)...])
        #expect(signature.count == 86)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let last = try #require(alphabet.firstIndex(of: signature.last!))
        let sibling = String(alphabet[last | 1])
        let bad = Forge.replacing(part: 2, of: token, with: String(signature.dropLast()) + sibling)
        expectJOSEError(.malformed) { try verifier.verify(bad, now: Scenario.now) }
    }

    @Test func headerThatIsNotAStrictJSONObjectIsMalformed() throws {
        for header in [
            #"{"alg":"ES256","alg":"ES256"}"#,  // duplicate member
            #"{"alg":"ES256","kid":"\#(signer.keyID)","kid":"x"}"#,
            #"{"alg":"ES256",}"#,
            #"{"alg":"ES256"} x"#,
            "not json",
            "",
        ] {
            let token = try Forge.token(header: header, payload: Scenario.payload(claims), key: privateKey)
            expectJOSEError(.malformed, "\(header)") { try JWS(compact: token) }
        }
    }

    @Test func oversizedHeaderAndTokenAreRefused() throws {
        let padding = String(repeating: "x", count: 2100)
        let token = try forged(header: #"{"alg":"ES256","kid":"\#(signer.keyID)","pad":"\#(padding)"}"#)
        expectJOSEError(.tooLarge) { try verifier.verify(token, now: Scenario.now) }
        // Just under the limit passes the size check.
        let small = try forged(header: #"{"alg":"ES256","kid":"\#(signer.keyID)","pad":"\#(padding.prefix(1900))"}"#)
        #expect(try verifier.verify(small, now: Scenario.now).claims == claims)
        // A larger header limit admits it.
        let generous = JWTVerifier(
            keySet: keySet, options: Scenario.options { $0.limits = JWS.Limits(maximumHeaderLength: 4096) })
        #expect(try generous.verify(token, now: Scenario.now).claims == claims)

        let big = Scenario.claims(extra: ["blob": .string(String(repeating: "y", count: 17_000))])
        expectJOSEError(.tooLarge) { try verifier.verify(try signer.sign(big), now: Scenario.now) }
    }

    // MARK: - crit

    @Test func unknownCriticalExtensionIsRefused() throws {
        let token = try forged(header: #"{"alg":"ES256","kid":"\#(signer.keyID)","crit":["exp-v2"],"exp-v2":1}"#)
        expectJOSEError(.unsupportedCriticalHeader) { try verifier.verify(token, now: Scenario.now) }
        // RFC 7797 b64 is not supported either.
        let b64 = try forged(header: #"{"alg":"ES256","kid":"\#(signer.keyID)","crit":["b64"],"b64":false}"#)
        expectJOSEError(.unsupportedCriticalHeader) { try verifier.verify(b64, now: Scenario.now) }
        // A verifier that declares it understands the extension accepts it.
        let aware = JWTVerifier(keySet: keySet, options: Scenario.options { $0.understoodCriticalParameters = ["exp-v2"] })
        let jwt = try aware.verify(token, now: Scenario.now)
        #expect(jwt.header.critical == ["exp-v2"])
        #expect(jwt.header.additionalParameters["exp-v2"] == .int(1))
    }

    @Test(arguments: [
        #""crit":[]"#,  // empty
        #""crit":"exp-v2""#,  // not an array
        #""crit":["alg"]"#,  // registered name
        #""crit":["kid"]"#,
        #""crit":["absent"]"#,  // not present in the header
        #""crit":["exp-v2","exp-v2"],"exp-v2":1"#,  // duplicate
        #""crit":[1]"#,
    ])
    func invalidCritIsMalformed(member: String) throws {
        let token = try forged(header: #"{"alg":"ES256","kid":"\#(signer.keyID)",\#(member)}"#)
        let aware = JWTVerifier(
            keySet: keySet, options: Scenario.options { $0.understoodCriticalParameters = ["exp-v2", "absent"] })
        expectJOSEError(.malformed) { try aware.verify(token, now: Scenario.now) }
    }

    // MARK: - typ

    @Test func explicitTypingIsEnforcedWhenAsked() throws {
        let typed = JWTVerifier(keySet: keySet, options: Scenario.options { $0.expectedType = "tc+jwt" })
        #expect(try typed.verify(try signer.sign(claims, type: "tc+jwt"), now: Scenario.now).header.type == "tc+jwt")
        #expect(try typed.verify(try signer.sign(claims, type: "application/TC+JWT"), now: Scenario.now).claims == claims)
        expectJOSEError(.typeMismatch) { try typed.verify(try signer.sign(claims), now: Scenario.now) }
        let untyped = try forged(header: #"{"alg":"ES256","kid":"\#(signer.keyID)"}"#)
        expectJOSEError(.typeMismatch) { try typed.verify(untyped, now: Scenario.now) }
    }

    // MARK: - Other algorithms

    @Test func keysOfTheWrongTypeForAnAlgorithmAreRefused() throws {
        // Crypto generates only P-256 keys; the Ed25519 and RSA paths are covered by the RFC
        // vectors. Here: a P-256 key never pairs with another algorithm, wherever it is tried.
        var jwk = signer.publicJWK
        jwk.algorithm = "RS256"
        expectJOSEError(.invalidKey) { try JWK(json: jwk.jsonString) }
        expectJOSEError(.invalidKey) { try JWK(publicKey: try privateKey.publicKey(), algorithm: .rs256) }
        expectJOSEError(.invalidKey) {
            try JWSVerificationKey(publicKey: try privateKey.publicKey(), algorithm: .edDSA)
        }
        expectJOSEError(.invalidKey) { try JWS.sign(payload: [1], header: JWSHeader(algorithm: .es384), key: privateKey) }
    }
}

import Crypto
import Foundation
import Testing
import Tokens

/// RFC 7515 Appendix A and RFC 8037 Appendix A, read from `../shared/vectors/rfc_jose.json`.
@Suite(.enabled(if: JOSEVectors.shouldRun, JOSEVectors.skipMessage))
struct RFCVectorTests {
    @Test func vectorFileIsPresent() throws {
        // Under CI this is what fails loudly when the vectors folder is missing.
        #expect(JOSEVectors.isAvailable, "\(JOSEVectors.file.path) is missing")
        #expect(try JOSEVectors.all().count == 6)
    }

    static let verifyingVectors: [(name: String, algorithm: JWSAlgorithm)] = [
        ("RFC7515-A.3-ES256", .es256),
        ("RFC7515-A.2-RS256 (public key only)", .rs256),
        ("RFC7515-A.4-ES512", .es512),
        ("RFC8037-A.4-Ed25519", .edDSA),
    ]

    @Test(arguments: verifyingVectors)
    func verifiesWithItsPublicJWK(name: String, algorithm: JWSAlgorithm) throws {
        let vector = try JOSEVectors.vector(name)
        #expect(vector["alg"] as? String == algorithm.rawValue)
        let jwk = try JWK(json: JOSEVectors.publicJWKJSON(vector))
        // The JWKs carry no alg: the algorithm is fixed by the key type and the allowed list.
        let key = try JWSVerificationKey(jwk: jwk, allowedAlgorithms: [algorithm])
        #expect(key.algorithm == algorithm)

        let jws = try JWS(compact: try #require(vector["jws_compact"] as? String))
        #expect(jws.header.algorithm == algorithm)
        try jws.verify(with: key)

        let expectedPayload = (vector["payload_json"] as? String) ?? (vector["payload_utf8"] as? String)
        if let expectedPayload { #expect(jws.payload == Array(expectedPayload.utf8)) }

        // Converting through Crypto and back gives the same key material.
        let roundTripped = try JWK(publicKey: jwk.publicKey())
        #expect(roundTripped.parameters == jwk.parameters)
    }

    @Test func rsaVectorIsRefusedWhenTheAlgorithmIsAmbiguous() throws {
        // An RSA JWK without alg fits six algorithms; letting the token choose among them is
        // what this module never does.
        let jwk = try JWK(json: JOSEVectors.publicJWKJSON(JOSEVectors.vector("RFC7515-A.2-RS256 (public key only)")))
        expectJOSEError(.unsupportedAlgorithm) { try JWSVerificationKey(jwk: jwk, allowedAlgorithms: [.rs256, .ps256]) }
        // With PS256 fixed, the RS256 token is an algorithm mismatch.
        let ps256 = try JWSVerificationKey(jwk: jwk, allowedAlgorithms: [.ps256])
        let vector = try JOSEVectors.vector("RFC7515-A.2-RS256 (public key only)")
        expectJOSEError(.algorithmMismatch) {
            try JWS(compact: try #require(vector["jws_compact"] as? String)).verify(with: ps256)
        }
    }

    @Test func ed25519ThumbprintMatchesRFC8037() throws {
        let vector = try JOSEVectors.vector("RFC8037-A.4-Ed25519")
        let jwk = try JWK(json: JOSEVectors.publicJWKJSON(vector))
        #expect(jwk.thumbprintBase64URL == vector["jwk_thumbprint_sha256_b64url"] as? String)
        // Optional members do not change the thumbprint (RFC 7638 §3.2).
        var withExtras = jwk
        withExtras.keyID = "some-kid"
        withExtras.algorithm = "EdDSA"
        #expect(withExtras.thumbprint == jwk.thumbprint)
    }

    @Test func ed25519SigningReproducesRFC8037() throws {
        // Ed25519 is deterministic: signing the RFC's input with its d gives its signature.
        let vector = try JOSEVectors.vector("RFC8037-A.4-Ed25519")
        let jwk = try #require(vector["jwk"] as? [String: Any])
        let dText = try #require(jwk["d"] as? String)
        let d = try #require(Base64URL.decode(dText))
        // PKCS#8 for Ed25519 (RFC 8410 §7): version 0, id-Ed25519, OCTET STRING { OCTET STRING d }.
        let pkcs8 = DER.sequence(
            DER.tlv(0x02, [0]), DER.sequence(DER.oid("1.3.101.112")), DER.tlv(0x04, DER.tlv(0x04, d)))
        let pem = "-----BEGIN PRIVATE KEY-----\n\(Data(pkcs8).base64EncodedString())\n-----END PRIVATE KEY-----\n"
        let key = try PrivateKey.fromPEM(pem)
        let compact = try JWS.sign(
            payload: Array(try #require(vector["payload_utf8"] as? String).utf8), header: JWSHeader(algorithm: .edDSA),
            key: key)
        #expect(compact == vector["jws_compact"] as? String)
    }

    @Test func hs256IsRefusedByDesign() throws {
        let vector = try JOSEVectors.vector("RFC7515-A.1-HS256")
        expectJOSEError(.unsupportedAlgorithm) { try JWS(compact: try #require(vector["jws_compact"] as? String)) }
        // Nor is its symmetric key accepted as a JWK.
        let jwk = try #require(vector["jwk"] as? [String: Any])
        let json = String(decoding: try JSONSerialization.data(withJSONObject: jwk), as: UTF8.self)
        expectJOSEError(.unsupportedKey) { try JWK(json: json) }
    }

    @Test func tamperedES256IsRejected() throws {
        let vector = try JOSEVectors.vector("RFC7515-A.3-ES256-tampered-signature (derived negative case)")
        let key = try JWSVerificationKey(jwk: JWK(json: JOSEVectors.publicJWKJSON(vector)), allowedAlgorithms: [.es256])
        let jws = try JWS(compact: try #require(vector["jws_compact"] as? String))
        expectJOSEError(.signatureInvalid) { try jws.verify(with: key) }
    }

    @Test func es256VectorClaimsAreHeldToTheValidationRules() throws {
        // A.3's claims: iss "joe", exp 1300819380, a private claim, and no aud.
        let vector = try JOSEVectors.vector("RFC7515-A.3-ES256")
        let key = try JWSVerificationKey(jwk: JWK(json: JOSEVectors.publicJWKJSON(vector)), allowedAlgorithms: [.es256])
        let token = try #require(vector["jws_compact"] as? String)
        let jws = try JWS(compact: token)
        try jws.verify(with: key)
        let claims = try JSONDecoder().decode(JWTClaims.self, from: Data(jws.payload))
        #expect(claims.issuer == "joe")
        #expect(claims.expiresAt == Date(timeIntervalSince1970: 1_300_819_380))
        #expect(claims.extra["http://example.com/is_root"] == .bool(true))

        let beforeExpiry = Date(timeIntervalSince1970: 1_300_819_000)
        let options = JWTValidationOptions(issuer: "joe", audience: "anyone")
        expectJOSEError(.missingClaim) { try options.validate(claims, now: beforeExpiry) }
        // The whole pipeline stops at the same place: signature fine, aud missing.
        expectJOSEError(.missingClaim) { try JWTVerifier(key: key, options: options).verify(token, now: beforeExpiry) }

        var addressed = claims
        addressed.audience = ["anyone"]
        try options.validate(addressed, now: beforeExpiry)
        expectJOSEError(.expired) { try options.validate(addressed, now: Date(timeIntervalSince1970: 1_300_819_410)) }
    }
}

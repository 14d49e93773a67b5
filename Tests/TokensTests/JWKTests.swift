import Crypto
import Foundation
import Testing
import Tokens
import JSON

/// JWK parsing, validation, conversion and thumbprints.
@Suite struct JWKTests {
    let privateKey: PrivateKey
    let jwk: JWK

    init() throws {
        privateKey = try PrivateKey.generateP256()
        jwk = try JWK(publicKey: privateKey.publicKey(), keyID: "k1", algorithm: .es256)
    }

    /// `jwk`'s members with some replaced (nil removes), as JSON text.
    func variant(_ changes: [String: JSONValue?]) -> String {
        var members = jwk.jsonObject
        for (name, value) in changes { members[name] = value }
        return JSONValue.object(members).jsonString
    }

    @Test func publicKeyRoundTripsThroughJSON() throws {
        let parsed = try JWK(json: jwk.jsonString)
        #expect(parsed == jwk)
        #expect(parsed.keyType == "EC")
        #expect(parsed.keyID == "k1" && parsed.use == "sig" && parsed.jwsAlgorithm == .es256)
        guard case .ec(.p256, let x, let y) = parsed.parameters else {
            Issue.record("not a P-256 key")
            return
        }
        #expect(x.count == 32 && y.count == 32)
        // The rebuilt key verifies what the private key signs.
        let message = Array("message".utf8)
        let signature = try privateKey.sign(message, algorithm: .es256)
        #expect(try parsed.publicKey().verify(signature: signature, message: message, algorithm: .es256))
    }

    @Test func jsonHasTheExpectedMembers() throws {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(jwk.jsonString.utf8)) as? [String: String])
        #expect(Set(object.keys) == ["kty", "crv", "x", "y", "kid", "use", "alg"])
        #expect(object["kty"] == "EC" && object["crv"] == "P-256" && object["alg"] == "ES256")
    }

    @Test func thumbprintFollowsRFC7638() throws {
        // SHA-256 over {"crv","kty","x","y"} in that order, no whitespace; kid/use/alg ignored.
        guard case .ec(_, let x, let y) = jwk.parameters else { return }
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(Base64URL.encode(x))","y":"\#(Base64URL.encode(y))"}"#
        #expect(jwk.thumbprint == SHA256.hash(Array(canonical.utf8)))
        #expect(jwk.thumbprintBase64URL == Base64URL.encode(SHA256.hash(Array(canonical.utf8))))
        let bare = JWK(parameters: jwk.parameters)
        #expect(bare.thumbprint == jwk.thumbprint)
    }

    @Test func unknownMembersAreIgnored() throws {
        let parsed = try JWK(json: variant(["x5t": "abc", "ext": true]))
        #expect(parsed == jwk)
    }

    static let invalid: [(name: String, changes: [String: JSONValue?], code: JOSEError.Code)] = [
        ("no kty", ["kty": nil], .invalidKey),
        ("kty number", ["kty": 2], .malformed),
        ("kty oct", ["kty": "oct", "k": "AAAA"], .unsupportedKey),
        ("kty lower-case", ["kty": "ec"], .unsupportedKey),
        ("curve secp256k1", ["crv": "secp256k1"], .unsupportedKey),
        ("no crv", ["crv": nil], .invalidKey),
        ("no y", ["y": nil], .invalidKey),
        ("x short", ["x": .string(Base64URL.encode([UInt8](repeating: 1, count: 31)))], .invalidKey),
        ("x long", ["x": .string(Base64URL.encode([UInt8](repeating: 1, count: 33)))], .invalidKey),
        ("x padded", ["x": .string(Base64URL.encode([UInt8](repeating: 1, count: 32)) + "=")], .invalidKey),
        ("x standard base64", ["x": "+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/8"], .invalidKey),
        ("x number", ["x": 5], .malformed),
        ("point off the curve", ["x": .string(Base64URL.encode([UInt8](repeating: 1, count: 32)))], .invalidKey),
        ("private d", ["d": .string(Base64URL.encode([UInt8](repeating: 7, count: 32)))], .invalidKey),
        ("alg of another key type", ["alg": "RS256"], .invalidKey),
        ("alg ES384 on P-256", ["alg": "ES384"], .invalidKey),
        ("kid number", ["kid": 1], .malformed),
        ("kid too long", ["kid": .string(String(repeating: "k", count: 257))], .invalidKey),
        ("use array", ["use": ["sig"]], .malformed),
        ("key_ops not strings", ["key_ops": [1]], .malformed),
        ("key_ops duplicate", ["key_ops": ["verify", "verify"]], .invalidKey),
    ]

    @Test(arguments: 0..<invalid.count)
    func invalidJWKIsRefusedWithItsCode(index: Int) throws {
        let entry = JWKTests.invalid[index]
        expectJOSEError(entry.code, "\(entry.name)") { try JWK(json: variant(entry.changes)) }
    }

    @Test func otherKeyTypesAreValidatedToo() throws {
        let ed = #"{"kty":"OKP","crv":"Ed25519","x":"\#(Base64URL.encode([UInt8](repeating: 0x11, count: 32)))"}"#
        #expect(try JWK(json: ed).keyType == "OKP")
        expectJOSEError(.unsupportedKey) { try JWK(json: ed.replacingOccurrences(of: "Ed25519", with: "X25519")) }
        expectJOSEError(.unsupportedKey) { try JWK(json: ed.replacingOccurrences(of: "Ed25519", with: "Ed448")) }
        let ed31 = #"{"kty":"OKP","crv":"Ed25519","x":"\#(Base64URL.encode([UInt8](repeating: 0x11, count: 31)))"}"#
        expectJOSEError(.invalidKey) { try JWK(json: ed31) }

        // RSA: 1024-bit moduli, leading zeros and even or unit exponents are refused before
        // OpenSSL sees them.
        func rsa(_ n: [UInt8], _ e: [UInt8]) -> String {
            #"{"kty":"RSA","n":"\#(Base64URL.encode(n))","e":"\#(Base64URL.encode(e))"}"#
        }
        let n2048 = [0xC1] + [UInt8](repeating: 0x35, count: 254) + [0x01]
        expectJOSEError(.invalidKey) { try JWK(json: rsa(Array(n2048.prefix(128)), [1, 0, 1])) }
        expectJOSEError(.invalidKey) { try JWK(json: rsa([0] + n2048, [1, 0, 1])) }
        expectJOSEError(.invalidKey) { try JWK(json: rsa(n2048, [0, 1, 0, 1])) }
        expectJOSEError(.invalidKey) { try JWK(json: rsa(n2048, [1, 0, 0])) }
        expectJOSEError(.invalidKey) { try JWK(json: rsa(n2048, [1])) }
        expectJOSEError(.invalidKey) { try JWK(json: rsa(n2048 + [UInt8](repeating: 1, count: 800), [1, 0, 1])) }
        var withPrime = rsa(n2048, [1, 0, 1])
        withPrime.removeLast()
        expectJOSEError(.invalidKey) { try JWK(json: withPrime + #","p":"AQAB"}"#) }
    }

    @Test func documentsThatAreNotOneJSONObjectAreMalformed() throws {
        for text in ["", "[]", "null", #"{"kty":"EC","kty":"EC"}"#, #"{"kty":"EC""#, "{} {}"] {
            expectJOSEError(.malformed, "\(text)") { try JWK(json: text) }
        }
        expectJOSEError(.tooLarge) { try JWK(json: variant(["pad": .string(String(repeating: "p", count: 9000))])) }
    }

    // MARK: - Binding to an algorithm

    @Test func verificationKeyRespectsUseKeyOpsAndTheAllowedList() throws {
        #expect(try JWSVerificationKey(jwk: jwk, allowedAlgorithms: [.es256]).algorithm == .es256)
        expectJOSEError(.unsupportedAlgorithm) { try JWSVerificationKey(jwk: jwk, allowedAlgorithms: [.rs256, .edDSA]) }

        var encryption = jwk
        encryption.use = "enc"
        expectJOSEError(.invalidKey) { try JWSVerificationKey(jwk: encryption, allowedAlgorithms: [.es256]) }

        var signOnly = jwk
        signOnly.keyOperations = ["sign"]
        expectJOSEError(.invalidKey) { try JWSVerificationKey(jwk: signOnly, allowedAlgorithms: [.es256]) }
        signOnly.keyOperations = ["verify"]
        #expect(try JWSVerificationKey(jwk: signOnly, allowedAlgorithms: [.es256]).keyID == "k1")

        var encryptionAlg = jwk
        encryptionAlg.algorithm = "ECDH-ES"
        let parsed = try JWK(json: encryptionAlg.jsonString)  // a valid JWK…
        expectJOSEError(.unsupportedAlgorithm) { try JWSVerificationKey(jwk: parsed, allowedAlgorithms: [.es256]) }  // …not for JWS

        var noAlg = jwk
        noAlg.algorithm = nil
        #expect(try JWSVerificationKey(jwk: noAlg, allowedAlgorithms: Set(JWSAlgorithm.allCases)).algorithm == .es256)
    }

    @Test func jwkSignedTokenVerifiesWithTheKeyItDescribes() throws {
        let signer = try JWTSigner(privateKey: privateKey)
        let key = try JWSVerificationKey(jwk: JWK(json: signer.publicJWK.jsonString), allowedAlgorithms: [.es256])
        try JWS(compact: try signer.sign(Scenario.claims())).verify(with: key)
        #expect(signer.keyID == signer.publicJWK.thumbprintBase64URL)
    }
}

import Crypto
import Foundation
import Testing
import Tokens
import JSON

/// JWK Set documents: parsing, bounds, lookup, serialization.
@Suite struct JWKSetTests {
    static func newJWK(kid: String?) throws -> JWK {
        try JWK(publicKey: PrivateKey.generateP256().publicKey(), keyID: kid, algorithm: .es256)
    }

    static func document(_ members: [String]) -> String { #"{"keys":[\#(members.joined(separator: ","))]}"# }

    @Test func parsesLooksUpAndSerializes() throws {
        let a = try JWKSetTests.newJWK(kid: "a")
        let b = try JWKSetTests.newJWK(kid: "b")
        let set = try JWKSet(json: JWKSetTests.document([a.jsonString, b.jsonString]))
        #expect(set.keys == [a, b])
        #expect(set.key(withID: "b") == b)
        #expect(set.key(withID: "c") == nil)
        #expect(set.ignoredKeyCount == 0)
        #expect(try set.verificationKey(withID: "a", allowedAlgorithms: [.es256]).keyID == "a")
        expectJOSEError(.unknownKey) { try set.verificationKey(withID: "c", allowedAlgorithms: [.es256]) }

        let reparsed = try JWKSet(json: set.jsonString)
        #expect(reparsed.keys == set.keys)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(set.jsonString.utf8)) as? [String: Any])
        #expect((object["keys"] as? [Any])?.count == 2)
    }

    @Test func unsupportedKeysAreSkippedAndCounted() throws {
        // RFC 7517 §5: ignore key types that are not understood.
        let a = try JWKSetTests.newJWK(kid: "a")
        let set = try JWKSet(json: JWKSetTests.document([
            #"{"kty":"oct","k":"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow","kid":"hmac"}"#,
            a.jsonString,
            #"{"kty":"OKP","crv":"X25519","x":"AAAA","kid":"ecdh"}"#,
        ]))
        #expect(set.keys == [a])
        #expect(set.ignoredKeyCount == 2)
        expectJOSEError(.unknownKey) { try set.verificationKey(withID: "hmac", allowedAlgorithms: [.es256]) }
    }

    @Test func aMalformedSupportedKeyFailsTheSet() throws {
        let a = try JWKSetTests.newJWK(kid: "a")
        var members = a.jsonObject
        members["d"] = .string(Base64URL.encode([UInt8](repeating: 3, count: 32)))
        expectJOSEError(.invalidKey) {
            try JWKSet(json: JWKSetTests.document([JSONValue.object(members).jsonString]))
        }
        members = a.jsonObject
        members["y"] = members["x"]
        expectJOSEError(.invalidKey) {
            try JWKSet(json: JWKSetTests.document([JSONValue.object(members).jsonString]))
        }
    }

    @Test func duplicateKeyIDsAreRefused() throws {
        let a = try JWKSetTests.newJWK(kid: "same")
        let b = try JWKSetTests.newJWK(kid: "same")
        expectJOSEError(.invalidKey) { try JWKSet(json: JWKSetTests.document([a.jsonString, b.jsonString])) }
        expectJOSEError(.invalidKey) { try JWKSet(keys: [a, b]) }
        // Keys without kid do not collide (they just cannot be looked up).
        let anonymous = try JWKSet(keys: [JWKSetTests.newJWK(kid: nil), JWKSetTests.newJWK(kid: nil)])
        #expect(anonymous.keys.count == 2)
    }

    @Test func setsAreBounded() throws {
        let one = try JWKSetTests.newJWK(kid: nil).jsonString
        expectJOSEError(.tooLarge) {
            try JWKSet(json: JWKSetTests.document(Array(repeating: one, count: JWKSet.maximumKeyCount + 1)))
        }
        let padded = #"{"keys":[],"pad":"\#(String(repeating: "p", count: JWKSet.maximumSize))"}"#
        expectJOSEError(.tooLarge) { try JWKSet(json: padded) }
        let keys = try (0...JWKSet.maximumKeyCount).map { try JWKSetTests.newJWK(kid: "k\($0)") }
        expectJOSEError(.tooLarge) { try JWKSet(keys: keys) }
    }

    @Test(arguments: [
        "{}", #"{"keys":{}}"#, #"{"keys":"none"}"#, #"{"keys":[1]}"#, #"{"keys":[[]]}"#, "[]", "", #"{"keys":[],"keys":[]}"#,
    ])
    func malformedDocumentsAreRefused(text: String) {
        expectJOSEError(.malformed) { try JWKSet(json: text) }
    }

    @Test func emptySetIsValid() throws {
        let set = try JWKSet(json: #"{"keys":[]}"#)
        #expect(set.keys.isEmpty)
        #expect(set.jsonString == #"{"keys":[]}"#)
    }
}

import Foundation
import Testing
@testable import Tokens
import JSON

/// The claim set's JSON form and its Codable conformance.
@Suite struct JWTClaimsTests {
    @Test func registeredAndExtraClaimsRoundTrip() throws {
        let claims = JWTClaims(
            issuer: "https://signet.test/transaction", subject: "user-42", audience: ["rp-demo"],
            expiresAt: Date(timeIntervalSince1970: 1_800_000_300), notBefore: Date(timeIntervalSince1970: 1_800_000_000),
            issuedAt: Date(timeIntervalSince1970: 1_800_000_000), id: "jti-1",
            extra: ["amr": ["hwk", "user"], "acr": "aal2", "sign_up": true, "transaction": ["amount": "10.00"]])
        let object = claims.jsonObject
        #expect(object["aud"] == "rp-demo")  // one audience is written as a string
        #expect(object["exp"] == .int(1_800_000_300))
        #expect(object["amr"] == ["hwk", "user"])
        #expect(try JWTClaims(jsonObject: object) == claims)

        // Codable, through Foundation.
        let data = try JSONEncoder().encode(claims)
        #expect(try JSONDecoder().decode(JWTClaims.self, from: data) == claims)
    }

    /// What a signer writes is the claim set's JSON object, byte for byte: every claim set and
    /// absent, one audience and several, registered names in `extra` left out, names whose
    /// order a dictionary would not keep, strings that need escaping.
    @Test func writtenClaimsAreTheJSONObjectsBytes() {
        let t = Date(timeIntervalSince1970: 1_800_000_000.75)
        var sets = [
            JWTClaims(),
            JWTClaims(issuer: "https://signet.test/a", subject: "user \"42\" \u{1F600}\n", audience: ["one"], expiresAt: t, notBefore: t,
                issuedAt: t, id: "j", extra: ["amr": ["hwk", "user"], "acr": "aal2", "zz": 1, "Aa": .null, "iss": "ignored", "aud2": 1.5]),
            JWTClaims(audience: ["a", "b"], extra: ["sid": "s", "cid": "c", "auth_time": 1_800_000_000, "exp": "ignored"]),
            JWTClaims(issuedAt: Date(timeIntervalSince1970: 1e30), extra: ["nested": ["b": 1, "a": [1, 2]]]),
        ]
        for i in 0..<50 {
            var extra: [String: JSONValue] = [:]
            for k in 0..<(i % 9) { extra["k\(k * 7 % 13)_\(i)"] = .string("v\(k)") }
            sets.append(JWTClaims(subject: "s\(i)", audience: i % 2 == 0 ? ["t"] : nil, expiresAt: t, id: i % 3 == 0 ? nil : "id", extra: extra))
        }
        for claims in sets {
            var direct = JSONWriter()
            claims.write(to: &direct)
            var reference = JSONWriter()
            reference.write(.object(claims.jsonObject))
            #expect(direct.bytes == reference.bytes, "\(reference.text)")
        }
    }

    @Test func audienceArraysStayArrays() throws {
        let claims = JWTClaims(audience: ["a", "b"])
        #expect(claims.jsonObject["aud"] == ["a", "b"])
        #expect(try JWTClaims(jsonObject: ["aud": ["a"]]).audience == ["a"])
        #expect(try JWTClaims(jsonObject: ["aud": "a"]).audience == ["a"])
    }

    @Test func registeredNamesInExtraDoNotOverrideProperties() throws {
        var claims = JWTClaims(issuer: "real", extra: ["iss": "forged", "exp": 1])
        #expect(claims.jsonObject["iss"] == "real")
        #expect(claims.jsonObject["exp"] == nil)
        claims.extra["custom"] = 1
        #expect(claims[claim: "custom"] == 1)
        #expect(claims[claim: "iss"] == "real")
    }

    @Test func timesAreWholeSecondsRoundedDown() {
        let claims = JWTClaims(expiresAt: Date(timeIntervalSince1970: 1_800_000_300.9))
        #expect(claims.jsonObject["exp"] == .int(1_800_000_300))
    }

    /// JWSFuzz: `"iat": 1700000009223372036854775808` (≈ 1.7e33) trapped the conversion to
    /// `Int64` when `JWTVerifier.verify` read the claims' JSON form. Past `Int64` a time stays a
    /// double, and reads back as the same date.
    @Test func timesPastInt64DoNotTrap() throws {
        let members = try JSONParser.parse(Array(#"{"iat": 1700000009223372036854775808, "exp": -1e300}"#.utf8)).objectValue ?? [:]
        let claims = try JWTClaims(jsonObject: members)
        let json = claims.jsonObject
        #expect(json["iat"] == .double(try #require(Double("1700000009223372036854775808"))))
        #expect(json["exp"] == .double(-1e300))
        #expect(try JWTClaims(jsonObject: json) == claims)
    }

    @Test func wrongTypesAreInvalidClaims() {
        for members: [String: JSONValue] in [
            ["iss": 1], ["sub": ["a"]], ["jti": true], ["exp": "soon"], ["nbf": nil], ["iat": ["x": 1]],
            ["aud": 1], ["aud": []], ["aud": ["a", 1]],
        ] {
            let error = #expect(throws: JOSEError.self) { try JWTClaims(jsonObject: members) }
            #expect(error?.code == .invalidClaim)
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(JWTClaims.self, from: Data(#"{"exp":"x"}"#.utf8)) }
    }
}

import Foundation
import Testing
import Tokens
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

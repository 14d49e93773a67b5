import Crypto
import Foundation
import JSON
import Testing
import Tokens
@testable import OOBService

/// The APNs provider token: ES256 under the .p8 key with its key id, the team as `iss`, kept
/// for less than APNs' hour and then made again.
@Suite struct APNsProviderTokenTests {
    @Test func theTokenIsReusedForFiftyMinutesThenRemade() async throws {
        let key = try PrivateKey.generateP256()
        let token = APNsProviderToken(credentials: .init(key: key, keyID: "ABC123DEFG", teamID: "TEAM123456", url: "http://127.0.0.1:2643"))
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let first = try await token.current(now: start)
        #expect(try await token.current(now: start.addingTimeInterval(49 * 60)) == first)
        let renewed = try await token.current(now: start.addingTimeInterval(51 * 60))
        #expect(renewed != first)

        let jws = try JWS(compact: first)
        #expect(jws.header.algorithm == .es256 && jws.header.keyID == "ABC123DEFG")
        try jws.verify(with: try JWSVerificationKey(publicKey: try key.publicKey(), algorithm: .es256))
        let claims = try JWTClaims(jsonObject: try #require(JSONParser.parse(jws.payload).objectValue))
        #expect(claims.issuer == "TEAM123456" && claims.issuedAt == start)
    }
}

import Crypto
import Foundation
import FuzzSupport
import JSON
import Tokens

/// JWS compact parsing and verification (`JWS(compact:)`, `JWTVerifier.verify`) and JWT claim
/// sets, with one fixed ES256 key.
///
/// Input: a first byte 0 makes the rest a claim set that the target signs with the fixed key
/// (so that claim validation is reached); anything else is a compact token as received.
///
/// Properties: every refusal is a `JOSEError` (typed throws); a parsed JWS's parts agree with the
/// compact text; a verified JWT's claims survive their own JSON form (`jsonObject` read back
/// gives the same claims); a token signed here always parses and verifies.
@main
enum JWSFuzz {
    static func main() { Fuzz.run(testOneInput) }

    /// A key for this fuzzer only: it signs and verifies nothing else.
    static let privateKey = try! PrivateKey.fromPEM("""
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgNdr0mv4yhzTKe3Dv
        vQAeOiFlI6nm+WapUMXidKj5QW+hRANCAATl0Q7QtWNWVwhknDF3gkxTazx/naxw
        N/5fI9yS+fRT2L4nF8zBzP1hHYVWg7IJ4sqyCrbzIhCWvLWyBAVBLYts
        -----END PRIVATE KEY-----
        """)
    static let key = try! JWSVerificationKey(publicKey: privateKey.publicKey(), algorithm: .es256, keyID: "fuzz")
    static let verifier = JWTVerifier(
        key: key,
        options: JWTValidationOptions(
            issuer: "https://issuer.example", audience: "fuzz", maximumLifetime: 3600, requiredClaims: ["sub"],
            expectedType: "JWT", understoodCriticalParameters: ["b64x"]))
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        if bytes.first == 0 {
            let payload = Array(bytes.dropFirst())
            let token: String
            do {
                token = try JWS.sign(payload: payload, header: JWSHeader(algorithm: .es256, keyID: "fuzz", type: "JWT"), key: privateKey)
            } catch {
                Fuzz.fail("signing refused: \(error)")
            }
            do {
                let jws = try JWS(compact: token, limits: JWS.Limits(maximumLength: 1 << 20))
                if jws.payload != payload { Fuzz.fail("payload changed by signing") }
                try jws.verify(with: key)
            } catch {
                Fuzz.fail("a token signed here does not verify: \(error)")
            }
            check(token)
        } else {
            check(String(decoding: bytes, as: UTF8.self))
        }
        return 0
    }

    static func check(_ token: String) {
        if let jws = try? JWS(compact: token, understoodCriticalParameters: ["b64x"]) {
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            if parts.count != 3 { Fuzz.fail("parsed a JWS of \(parts.count) parts") }
            if Base64URL.encode(jws.payload) != String(parts[1]) { Fuzz.fail("payload does not match its part") }
            if Base64URL.encode(jws.signature) != String(parts[2]) { Fuzz.fail("signature does not match its part") }
            _ = try? jws.verify(with: key)
        }
        guard let jwt = try? verifier.verify(token, now: now) else { return }
        let again: JWTClaims
        do {
            again = try JWTClaims(jsonObject: jwt.claims.jsonObject)
        } catch {
            Fuzz.fail("claims do not read back from their JSON: \(error)")
        }
        if again != jwt.claims { Fuzz.fail("claims changed through their JSON") }
    }
}

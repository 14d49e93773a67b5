import FuzzSupport
import Tokens

/// JWK Sets (`JWKSet(json:)`, as fetched from a relying party's JWKS URL) and the verification
/// keys made from their members.
///
/// Properties: every refusal is a `JOSEError` (typed throws); an accepted set written back
/// (`jsonString`) reads as the same keys; every key found by its `kid` is that key; making a
/// verification key never crashes.
@main
enum JWKSFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        if let key = try? JWK(json: bytes) {
            let again: JWK
            do { again = try JWK(json: key.jsonString) } catch { Fuzz.fail("JWK does not read back: \(error)") }
            if again != key { Fuzz.fail("JWK changed through its JSON") }
            if again.thumbprint != key.thumbprint { Fuzz.fail("thumbprint") }
        }
        guard let set = try? JWKSet(json: bytes) else { return 0 }
        let again: JWKSet
        do { again = try JWKSet(json: set.jsonString) } catch { Fuzz.fail("JWKS does not read back: \(error)") }
        if again.keys != set.keys { Fuzz.fail("JWKS changed through its JSON") }
        for key in set.keys {
            guard let keyID = key.keyID else { continue }
            if set.key(withID: keyID) != key { Fuzz.fail("kid lookup") }
            _ = try? set.verificationKey(withID: keyID, allowedAlgorithms: Set(JWSAlgorithm.allCases))
        }
        return 0
    }
}

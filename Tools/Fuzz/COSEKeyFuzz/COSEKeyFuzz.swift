import FIDO
import FuzzSupport

/// COSE_Key parsing (`COSEKey(bytes:)`), the credential public key of every registration.
///
/// Properties: a refusal is a `COSEKeyError` (typed throws); an accepted key keeps its input as
/// `bytes`, its algorithm agrees with its key type, and verifying a signature over junk is a
/// plain `false`, never a crash.
@main
enum COSEKeyFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        guard let key = try? COSEKey(bytes: bytes) else { return 0 }
        if key.bytes != bytes { Fuzz.fail("COSEKey.bytes differs from its input") }
        if key.verify(signature: Array(bytes.prefix(72)), message: bytes) {
            Fuzz.fail("a key verified its own encoding as a signature")
        }
        return 0
    }
}

@testable import FIDO
import FuzzSupport

/// The TPM 2.0 structures of the `tpm` attestation format: `certInfo` (TPMS_ATTEST) and
/// `pubArea` (TPMT_PUBLIC), both parsed from every input.
///
/// Properties: a refusal is a `TPMStructures.ParseError` (typed throws); what parses has fields
/// no longer than the input and an ECC point or RSA modulus of a size the input can hold.
@main
enum TPMFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        if let info = try? TPMStructures.CertifyInfo(bytes) {
            if info.extraData.count + info.attestedName.count + 4 + 2 > bytes.count { Fuzz.fail("certInfo fields longer than the input") }
        }
        if let area = try? TPMStructures.PublicArea(bytes) {
            switch area.key {
            case .ecc(_, let x, let y):
                if x.count + y.count > bytes.count { Fuzz.fail("ECC point longer than the input") }
            case .rsa(let modulus, _):
                if modulus.count > bytes.count { Fuzz.fail("modulus longer than the input") }
            }
        }
        return 0
    }
}

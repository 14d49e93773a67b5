import Crypto
import Testing

@testable import FIDO

/// The TPM hash functions against FIPS 180-2 Appendix A/C/D known answers ("abc").
@Suite struct AttestationDigestTests {
    @Test(arguments: [
        (AttestationDigest.sha1, "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (.sha384, "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"),
        (
            .sha512,
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        ),
    ])
    func knownAnswer(_ digest: AttestationDigest, _ hex: String) {
        let output = digest.hash(Array("abc".utf8))
        #expect(output.count == digest.size)
        let encoded: String = Hex.encode(output)
        #expect(encoded == hex)
    }

    @Test func algorithmsMapToTheirHash() {
        #expect(AttestationDigest(COSEAlgorithm.rs1) == .sha1)
        #expect(AttestationDigest(COSEAlgorithm.es256) == .sha256)
        #expect(AttestationDigest(COSEAlgorithm.ps384) == .sha384)
        #expect(AttestationDigest(COSEAlgorithm.rs512) == .sha512)
        #expect(AttestationDigest(COSEAlgorithm.eddsa) == nil)
        #expect(AttestationDigest(tpmAlgorithm: 0x000B) == .sha256)
        #expect(AttestationDigest(tpmAlgorithm: 0x0012) == nil)
    }
}

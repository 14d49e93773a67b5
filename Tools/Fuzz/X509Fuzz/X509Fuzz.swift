import Crypto
import Foundation
import FuzzSupport

/// X.509 DER parsing (`X509Certificate(derEncoded:)`, Crypto's own DER reader then OpenSSL),
/// CRL distribution points, CRLs (`X509CRL(derEncoded:)`) and chain building
/// (`X509TrustStore.verify`, with the CRLs given when there are any).
///
/// Input: DER certificates one after another (split on their outer SEQUENCE headers): the
/// leaf first, intermediates, and the trust anchor last, as in an x5c with its root; an
/// element that is not a certificate is tried as a CRL.
///
/// Properties: a refusal is a `CryptoError`; an accepted certificate keeps its DER, its
/// fingerprint is the SHA-256 of it, its validity is ordered; an accepted chain starts with the
/// leaf, ends at the anchor and is no longer than the certificates given.
@main
enum X509Fuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        var certificates: [X509Certificate] = []
        var crls: [X509CRL] = []
        for der in Fuzz.derElements(bytes).prefix(6) {
            let certificate: X509Certificate
            do {
                certificate = try X509Certificate(derEncoded: der)
            } catch is CryptoError {
                do {
                    let crl = try X509CRL(derEncoded: der)
                    if crl.derEncoded != der { Fuzz.fail("CRL DER changed") }
                    crls.append(crl)
                } catch is CryptoError {
                } catch {
                    Fuzz.fail("CRL refusal is not a CryptoError: \(type(of: error))")
                }
                continue
            } catch {
                Fuzz.fail("refusal is not a CryptoError: \(type(of: error))")
            }
            do {
                for uri in try certificate.crlDistributionPointURIs() where !uri.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
                    Fuzz.fail("a distribution point URI is not printable ASCII")
                }
            } catch is CryptoError {
            } catch {
                Fuzz.fail("distribution point refusal is not a CryptoError: \(type(of: error))")
            }
            if certificate.derEncoded != der { Fuzz.fail("DER changed") }
            if certificate.sha256Fingerprint != SHA256.hash(der) { Fuzz.fail("fingerprint") }
            _ = certificate.description
            _ = certificate.extensions.count
            certificates.append(certificate)
        }
        guard certificates.count >= 2, let anchor = certificates.last else { return 0 }
        let store: X509TrustStore
        do {
            store = try X509TrustStore(anchors: [anchor])
        } catch is CryptoError {
            return 0
        } catch {
            Fuzz.fail("trust store refusal is not a CryptoError: \(type(of: error))")
        }
        let leaf = certificates[0]
        let intermediates = Array(certificates.dropFirst().dropLast())
        let time = leaf.notBefore.addingTimeInterval(1)
        do {
            let options = X509VerificationOptions(crls: crls.isEmpty ? nil : crls)
            let chain = try store.verify(leaf, intermediates: intermediates, at: time, options: options)
            if chain.certificates.first != leaf { Fuzz.fail("chain does not start at the leaf") }
            if chain.certificates.count > certificates.count { Fuzz.fail("chain longer than its certificates") }
        } catch is CryptoError {
        } catch {
            Fuzz.fail("chain refusal is not a CryptoError: \(type(of: error))")
        }
        return 0
    }
}

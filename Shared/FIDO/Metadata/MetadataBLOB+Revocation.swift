import Crypto
import FoundationEssentials

extension MetadataBLOB {
    /// Where the CRLs that cover the signing chain are published (MDS 3.0 §3.2: the chain is
    /// validated per RFC 5280, revocation included): for each certificate of the chain that is
    /// not self-issued (each one below the root, and an anchor that is not a root), the `http`
    /// and `https` URIs of its CRL distribution points, in chain order; a self-signed root is
    /// covered by the CRL it issues for the certificate below it.
    ///
    /// - Returns: `[]` when the chain is a configured root alone (nothing to check); nil when a
    ///   certificate of the chain names no such location (its revocation cannot be checked).
    /// - Throws: ``MetadataError/Code/revocationUnknown`` when a certificate's
    ///   cRLDistributionPoints extension is not well-formed (fail closed: not "names none").
    public func revocationLocations() throws(MetadataError) -> [[String]]? {
        var locations: [[String]] = []
        for (depth, certificate) in signingChain.enumerated() where !certificate.isSelfIssued {
            let named: [String]
            do {
                named = try certificate.crlDistributionPointURIs()
            } catch {
                throw MetadataError(.revocationUnknown, "the signing chain's certificate at depth \(depth) has a malformed cRLDistributionPoints extension")
            }
            let uris = named.filter { uri in
                let scheme = uri.prefix { $0 != ":" }.lowercased()
                return scheme == "http" || scheme == "https"
            }
            guard !uris.isEmpty else { return nil }
            locations.append(uris)
        }
        return locations
    }

    /// Validates the signing chain again at `time`, with revocation checked against `crls`:
    /// every certificate of the chain must be covered by a current CRL of its issuer among them
    /// (signed by that issuer) and absent from it.
    ///
    /// - Throws: ``MetadataError/Code/certificateRevoked`` for a certificate listed as revoked;
    ///   ``MetadataError/Code/revocationUnknown`` when a certificate's CRL is missing, expired,
    ///   not yet valid or not signed by its issuer; ``MetadataError/Code/chainUntrusted`` otherwise.
    public func checkRevocation(crls: [X509CRL], configuration: Configuration, at time: Date = Date()) throws(MetadataError) {
        guard let leaf = signingChain.first, signingChain.count > 1 || !leaf.isSelfIssued else { return }
        let error: CryptoError
        do {
            let store = try X509TrustStore(anchors: configuration.roots)
            _ = try store.verify(
                leaf, intermediates: Array(signingChain.dropFirst()), at: time,
                options: X509VerificationOptions(allowPartialChain: configuration.allowPartialChain, crls: crls))
            return
        } catch let e as CryptoError {
            error = e
        } catch {
            throw MetadataError(.chainUntrusted, "the signing chain could not be validated again")
        }
        let unknown: [X509VerifyReason] = [.unableToGetCRL, .crlHasExpired, .crlNotYetValid, .crlSignatureFailure]
        for depth in 0..<(signingChain.count + 1) {
            if error == .x509Verification(.certificateRevoked, depth: depth) {
                throw MetadataError(.certificateRevoked, "the signing chain's certificate at depth \(depth) is revoked")
            }
            for reason in unknown where error == .x509Verification(reason, depth: depth) {
                throw MetadataError(.revocationUnknown, "no current CRL vouches for the signing chain's certificate at depth \(depth): \(reason)")
            }
        }
        throw MetadataError(.chainUntrusted, "the signing chain does not validate with its CRLs: \(error)")
    }
}

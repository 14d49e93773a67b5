import Crypto

/// Where the trust anchors for an attestation come from: configured roots per format (Apple
/// WebAuthn Root CA for `apple`, Google's roots for `android-key` and `android-safetynet`, a
/// tenant's own roots…) and, once metadata is loaded, the `attestationRootCertificates` of the
/// FIDO MDS3 statement for the authenticator's AAGUID.
public protocol AttestationTrustAnchorSource: Sendable {
    /// The anchors a trust path for `format` from the authenticator model `aaguid` may end at.
    ///
    /// - Parameters:
    ///   - aaguid: The AAGUID from authenticator data; nil when it is zero or unattested
    ///     (`fido-u2f`, whose signature does not cover it), so that it can never select anchors.
    ///   - format: The attestation statement format identifier.
    /// - Returns: The anchors; empty when there are none (the attestation is then not trusted).
    func anchors(for aaguid: AAGUID?, format: String) -> [X509Certificate]

    /// Anchors found from the attestation certificate itself, consulted only when the AAGUID
    /// is not attested (`fido-u2f`, a zero AAGUID): FIDO MDS3 finds such authenticators by
    /// `attestationCertificateKeyIdentifiers` (the SHA-1 of the certificate's public key).
    /// Default: none.
    func anchors(forAttestationCertificate certificate: X509Certificate) -> [X509Certificate]
}

extension AttestationTrustAnchorSource {
    public func anchors(forAttestationCertificate certificate: X509Certificate) -> [X509Certificate] { [] }
}

/// An ``AttestationTrustAnchorSource`` backed by a closure (e.g. a metadata store's lookup).
public struct TrustAnchorLookup: AttestationTrustAnchorSource {
    private let lookup: @Sendable (AAGUID?, String) -> [X509Certificate]

    public init(_ lookup: @escaping @Sendable (_ aaguid: AAGUID?, _ format: String) -> [X509Certificate]) {
        self.lookup = lookup
    }

    public func anchors(for aaguid: AAGUID?, format: String) -> [X509Certificate] { lookup(aaguid, format) }
}

/// Fixed anchors per format and per AAGUID, e.g. from configuration files. A lookup returns the
/// AAGUID's anchors followed by the format's.
public struct ConfiguredTrustAnchors: AttestationTrustAnchorSource {
    /// Anchors by attestation statement format identifier.
    public var byFormat: [String: [X509Certificate]]
    /// Anchors by authenticator model.
    public var byAAGUID: [AAGUID: [X509Certificate]]

    public init(byFormat: [String: [X509Certificate]] = [:], byAAGUID: [AAGUID: [X509Certificate]] = [:]) {
        self.byFormat = byFormat
        self.byAAGUID = byAAGUID
    }

    public func anchors(for aaguid: AAGUID?, format: String) -> [X509Certificate] {
        (aaguid.flatMap { byAAGUID[$0] } ?? []) + (byFormat[format] ?? [])
    }
}

/// WebAuthn L3 §7.1 steps 23–24 for attestations with a trust path: the x5c chain must be a
/// valid certification path, at the verification time, to one of the anchors its
/// ``AttestationTrustAnchorSource`` gives for the format and AAGUID.
///
/// Path validation is ``X509TrustStore``'s (OpenSSL): signatures, validity of every
/// certificate (the anchor too) at ``AttestationContext/verificationTime``, CA flags, path
/// length, key usage, unknown critical extensions; no revocation (MDS3 status reports are the
/// FIDO mechanism for that). A refusal is ``WebAuthnError/Code/attestationNotTrusted``:
/// ``AttestationFailure/noTrustAnchors`` when there is nothing to chain to,
/// ``AttestationFailure/chainRejected`` with OpenSSL's reason and depth in the detail otherwise.
public struct TrustAnchorEvaluator: AttestationTrustEvaluator {
    /// Where anchors come from.
    public let source: any AttestationTrustAnchorSource
    /// Let a path end at an anchor that is not self-signed (`X509_V_FLAG_PARTIAL_CHAIN`).
    /// FIDO MDS3 allows an intermediate CA as `attestationRootCertificates`; leave it false for
    /// configured roots. Default false.
    public var allowsIntermediateAnchors: Bool

    public init(source: any AttestationTrustAnchorSource, allowsIntermediateAnchors: Bool = false) {
        self.source = source
        self.allowsIntermediateAnchors = allowsIntermediateAnchors
    }

    /// An evaluator over a closure lookup.
    public init(
        allowsIntermediateAnchors: Bool = false,
        anchors: @escaping @Sendable (_ aaguid: AAGUID?, _ format: String) -> [X509Certificate]
    ) {
        self.init(source: TrustAnchorLookup(anchors), allowsIntermediateAnchors: allowsIntermediateAnchors)
    }

    public func evaluate(_ result: AttestationResult, context: AttestationContext) throws(WebAuthnError) {
        let step = "§7.1 step 24"
        // The path, leaf first, as the format returned it (the formats parsed it already; a
        // failure here would mean a caller built a result by hand).
        let certificates = try AttestationStatementFields.certificates(result.trustPath, step: step)
        guard !certificates.isEmpty else {
            throw WebAuthnError(.attestationNotTrusted, step: step, "an empty trust path has nothing to validate")
        }
        // The AAGUID selects anchors only where the statement attests it.
        let aaguid = context.attestedCredential.aaguid
        let attestedAAGUID = aaguid.isZero || context.format == "fido-u2f" ? nil : aaguid
        var anchors = source.anchors(for: attestedAAGUID, format: context.format)
        if attestedAAGUID == nil { anchors += source.anchors(forAttestationCertificate: certificates[0]) }
        guard !anchors.isEmpty else {
            throw WebAuthnError(.noTrustAnchors, step: step, "no trust anchors are configured for this format or authenticator")
        }
        do {
            let store = try X509TrustStore(anchors: anchors)
            _ = try store.verify(
                x5c: certificates, at: context.verificationTime,
                options: X509VerificationOptions(allowPartialChain: allowsIntermediateAnchors))
        } catch {
            // OpenSSL's reason and the depth (0 = attestation certificate); never certificate
            // contents (CryptoError guarantees that).
            throw WebAuthnError(.chainRejected, step: step, "\(error)")
        }
    }
}

import FIDO
import Platform

/// WebAuthn L3 §7.1 steps 23–24 for the tenants' current policy, the consumer default
/// (`FIDOPolicy.consumerDefault`: attestation not required, none and self accepted): an
/// attestation whose trust path chains to a configured anchor is trusted; one that does not is
/// still accepted — §7.1 step 24 lets a relying party treat it as if no attestation were given —
/// and logged as untrusted.
///
/// - Important: Per-tenant policies that require attestation (trusted roots, MDS3 status,
///   certification level) are enforced by `FIDOPolicy` once tenant policies are stored; until
///   then every tenant is on the consumer default.
struct ConsumerAttestationTrust: AttestationTrustEvaluator {
    let anchors: TrustAnchorEvaluator
    let logger: Logger

    init(source: any AttestationTrustAnchorSource = ConfiguredTrustAnchors(), logger: Logger) {
        anchors = TrustAnchorEvaluator(source: source, allowsIntermediateAnchors: true)
        self.logger = logger
    }

    func evaluate(_ result: AttestationResult, context: AttestationContext) throws(WebAuthnError) {
        do {
            try anchors.evaluate(result, context: context)
        } catch {
            logger.info("attestation not trusted; accepted as no attestation under the consumer policy", metadata: [
                LogKey.errorCode: .string(error.code.rawValue), "signet.attestation.format": .string(context.format),
            ])
        }
    }
}

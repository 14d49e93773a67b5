import FIDO
import Foundation
import FuzzSupport

/// The attestation object and every attestation statement format, through the entry the
/// registration verifier uses (WebAuthn L3 §7.1 steps 12–22): `AttestationObject(bytes:)`,
/// the credential public key, then the format's verification procedure from the standard
/// registry (`packed`, `tpm`, `android-key`, `android-safetynet`, `fido-u2f`, `apple`, `none`).
///
/// Input: clientDataHash (32 bytes) ‖ attestation object, so that seeds from real
/// registrations verify and mutations explore past their signatures.
///
/// Properties: every refusal is a `WebAuthnError` (typed throws) with a code; an accepted
/// statement's type is one the format can convey, and its trust path entries are non-empty.
@main
enum AttestationFuzz {
    static func main() { Fuzz.run(testOneInput) }

    /// Tolerant options, so that more of each format's procedure is reached.
    static let registry = AttestationFormatRegistry.standard(
        AttestationFormatOptions(
            acceptsTestTPMManufacturers: true, androidKeyRequiresTrustedEnvironment: false,
            safetyNetRequiresCTSProfileMatch: false, safetyNetChecksTimestamp: false, u2fRequiresZeroAAGUID: false))
    /// A fixed verification time inside the vectors' certificate lifetimes.
    static let time = Date(timeIntervalSince1970: 1_700_000_000)

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        guard bytes.count > 32 else { return 0 }
        let clientDataHash = Array(bytes[0..<32])
        let object: AttestationObject
        do {
            object = try AttestationObject(bytes: Array(bytes[32...]))
        } catch {
            return 0
        }
        guard let attested = object.authenticatorData.attestedCredentialData else { return 0 }
        guard let key = try? COSEKey(bytes: attested.credentialPublicKeyBytes) else { return 0 }
        guard let verifier = registry.verifier(for: object.format) else { return 0 }
        let context = AttestationContext(
            format: object.format, statement: object.statement, authenticatorData: object.authenticatorData,
            attestedCredential: attested, credentialPublicKey: key, clientDataHash: clientDataHash, verificationTime: time)
        guard let result = try? verifier.verify(context) else { return 0 }
        switch (object.format, result.type) {
        case ("none", .none), ("packed", .self), ("packed", .basic), ("packed", .attCA), ("tpm", .attCA),
            ("android-key", .basic), ("android-safetynet", .basic), ("fido-u2f", .basic), ("apple", .anonCA):
            break
        default:
            Fuzz.fail("format \(object.format) gave attestation type \(result.type)")
        }
        if result.trustPath.contains(where: \.isEmpty) { Fuzz.fail("empty certificate in the trust path") }
        if result.type == .none || result.type == .self, !result.trustPath.isEmpty { Fuzz.fail("trust path without a trust type") }
        return 0
    }
}

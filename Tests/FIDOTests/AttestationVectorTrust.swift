import Crypto
import FIDO
import Foundation

/// How each registration vector with an attestation trust path is trusted in
/// ``WebAuthnRegistrationVectorTests``, and the format options it needs: one explicit decision
/// per vector, each with its reason.
///
/// Two kinds of trust:
/// - ``Trust/anchors(_:)``: roots from `webauthn_trust_anchors.json`, by name — the real test of
///   the chain, used wherever the file has the root that issued it.
/// - ``Trust/chainTop``: the source test verified without any root (py_webauthn with no
///   `pem_root_certs_bytes`, SimpleWebAuthn with its roots cleared, go-webauthn without an MDS
///   provider) and the vectors do not carry the root. The top certificate of the vector's own
///   x5c becomes the anchor (partial chain), so OpenSSL still checks every signature inside the
///   chain, every validity period at the verification time and the CA flags; only where the
///   chain comes from is taken on trust, as in the source.
enum AttestationVectorTrust {
    enum Trust: Sendable {
        case anchors([String])
        case chainTop
    }

    struct Setup: Sendable {
        var trust: Trust
        var options = AttestationFormatOptions()
    }

    /// Vectors with no pinned clock are verified at this time, not the wall clock: it lies inside
    /// the validity of every unpinned vector's certificates (the latest notBefore among them is
    /// 2024-09-12, the earliest notAfter 2025-03-21), so results do not change as they expire.
    static let defaultVerificationTime = Date(timeIntervalSince1970: 1_735_689_600)  // 2025-01-01T00:00:00Z

    static let googleRoots = (1...4).map { "Google_Hardware_Attestation_Root_\($0)" }
    static let w3cTestCA = "W3C WebAuthn L3 test vectors attestation CA (section 16.1)"
    static let conformanceTPM = AttestationFormatOptions(acceptsTestTPMManufacturers: true)

    /// The decision for every vector whose attestation has a trust path, by vector name.
    static let setups: [String: Setup] = [
        // py_webauthn configures GlobalSign Root CA - R2 for packed, a root that did not issue
        // this Yubico chain; R2 is not in the anchors file, so GlobalSign Root CA (R1), which did
        // not issue it either, stands in. Expected: attestation_not_trusted.
        "py_webauthn/test_verify_registration_response.py::TestVerifyRegistrationResponse.test_raises_when_root_cert_invalid_for_response":
            Setup(trust: .anchors(["GlobalSign_Root_CA"])),
        // Yubico U2F batch certificates: the Yubico U2F Root CA is not in the vectors and the
        // sources configure no root.
        "py_webauthn/test_verify_registration_response_packed.py::TestVerifyRegistrationResponsePacked.test_verify_attestation_from_yubikey_firefox":
            Setup(trust: .chainTop),
        "py_webauthn/test_verify_registration_response_packed.py::TestVerifyRegistrationResponsePacked.test_verify_attestation_with_okp_public_key":
            Setup(trust: .chainTop),
        "py_webauthn/test_verify_registration_response_fido_u2f.py::TestVerifyRegistrationResponseFIDOU2F.test_verify_attestation_from_yubikey_firefox":
            Setup(trust: .chainTop),
        "py_webauthn/test_verify_registration_response_fido_u2f.py::TestVerifyRegistrationResponseFIDOU2F.test_verify_attestation_with_unsupported_token_binding_status":
            Setup(trust: .chainTop),
        "py_webauthn/test_verify_registration_response_fido_u2f.py::TestVerifyRegistrationResponseFIDOU2F.test_verify_attestation_with_unsupported_token_binding":
            Setup(trust: .chainTop),
        "SimpleWebAuthn/verifyRegistrationResponse.test.ts::should verify FIDO U2F attestation": Setup(trust: .chainTop),
        "SimpleWebAuthn/verifyRegistrationResponse.test.ts::should verify Packed (X5C) attestation": Setup(trust: .chainTop),
        "go-webauthn/attestation_test.go::TestAttestationVerify/ShouldVerifyDirectAttestationEC256Titan": Setup(trust: .chainTop),
        // FIDO conformance U2F certificates are self-signed leaves: no root exists beyond them.
        "py_webauthn/test_verify_registration_response_fido_u2f.py::TestVerifyRegistrationResponseFIDOU2F.test_verify_attestation_from_fido_conformance":
            Setup(trust: .chainTop),
        "SimpleWebAuthn/verifyRegistrationResponse.test.ts::should verify FIDO U2F attestation that specifies SHA-1 in its leaf cert public key":
            Setup(trust: .chainTop),
        // Windows TPMs (Surface, Dell, Lenovo, ECC pubArea): x5c ends at the per-TPM-vendor
        // intermediate; the Microsoft TPM Root Certificate Authority 2014 is not in the vectors.
        "py_webauthn/test_verify_registration_response_tpm.py::TestVerifyRegistrationResponseTPM.test_verify_attestation_surface_pro_4":
            Setup(trust: .chainTop),
        "py_webauthn/test_verify_registration_response_tpm.py::TestVerifyRegistrationResponseTPM.test_verify_attestation_dell_xps_13":
            Setup(trust: .chainTop),
        "py_webauthn/test_verify_registration_response_tpm.py::TestVerifyRegistrationResponseTPM.test_verify_attestation_lenovo_carbon_x1":
            Setup(trust: .chainTop),
        "py_webauthn/test_verify_registration_response_tpm.py::TestVerifyRegistrationResponseTPM.test_verify_tpm_with_ecc_public_area_type":
            Setup(trust: .chainTop),
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should verify TPM response with spec-compliant tcgAtTpm SAN structure":
            Setup(trust: .chainTop),
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should verify TPM response with non-spec-compliant tcgAtTpm SAN structure":
            Setup(trust: .chainTop),
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should verify TPM response with ECC public area type": Setup(trust: .chainTop),
        // FIDO conformance TPMs: manufacturer id:FFFFF1D0 (accepted only in test mode) and a
        // FIDO conformance root that is not in the vectors (SimpleWebAuthn configures no TPM root).
        "SimpleWebAuthn/verifyRegistrationResponse.test.ts::should validate TPM RSA response (SHA256)":
            Setup(trust: .chainTop, options: conformanceTPM),
        "SimpleWebAuthn/verifyRegistrationResponse.test.ts::should validate TPM RSA response (SHA1)":
            Setup(trust: .chainTop, options: conformanceTPM),
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should verify TPM response": Setup(trust: .chainTop, options: conformanceTPM),
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should verify SHA1 TPM response": Setup(trust: .chainTop, options: conformanceTPM),
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should verify SHA256 TPM response": Setup(trust: .chainTop, options: conformanceTPM),
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should succeed if id-fido-gen-ce-aaguid extension is present and matches AAGUID in auth data":
            Setup(trust: .chainTop, options: conformanceTPM),
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should fail if id-fido-gen-ce-aaguid extension is present and does not match AAGUID in auth data":
            Setup(trust: .chainTop, options: conformanceTPM),
        // Android Keystore: Google Hardware Attestation Roots from the anchors file (the Pixel 8a
        // chains to root 2, the Galaxy S9+ to root 1, both at their pinned clocks).
        "py_webauthn/test_verify_registration_response_android_key.py::TestVerifyRegistrationResponseAndroidKey.test_verify_attestation_android_key_hardware_authority":
            Setup(trust: .anchors(googleRoots)),
        "SimpleWebAuthn/verifyAttestationAndroidKey.test.ts::should verify Android Keystore response from a Pixel 8a in January 2025":
            Setup(trust: .anchors(googleRoots)),
        "SimpleWebAuthn/verifyAttestationAndroidKey.test.ts::should verify Android Keystore response from a Samsung Galaxy S9+ running Android 10":
            Setup(trust: .anchors(googleRoots)),
        // FIDO conformance Android Keystore chains: SimpleWebAuthn clears the android-key roots
        // for them; their own top certificate is a self-signed FIDO conformance root.
        "SimpleWebAuthn/verifyRegistrationResponse.test.ts::should validate Android-Key response": Setup(trust: .chainTop),
        "SimpleWebAuthn/verifyAttestationAndroidKey.test.ts::should verify Android Keystore response from FIDO Conformance in 2020":
            Setup(trust: .chainTop),
        // SafetyNet: attest.android.com → GTS → GTS Root R1, cross-signed by GlobalSign Root CA,
        // which the anchors file has (SimpleWebAuthn's default SafetyNet root).
        "py_webauthn/test_verify_registration_response_android_safetynet.py::TestVerifyRegistrationResponseAndroidSafetyNet.test_verify_attestation_android_safetynet":
            Setup(trust: .anchors(["GlobalSign_Root_CA"])),
        "SimpleWebAuthn/verifyRegistrationResponse.test.ts::should enforce CTS check by default": Setup(trust: .anchors(["GlobalSign_Root_CA"])),
        "SimpleWebAuthn/verifyRegistrationResponse.test.ts::should skip CTS check when enforcement option is false":
            Setup(trust: .anchors(["GlobalSign_Root_CA"])),
        // Apple: the Apple WebAuthn Root CA from the anchors file.
        "py_webauthn/test_verify_registration_response_apple.py::TestVerifyRegistrationResponseApple.test_verify_attestation_apple_passkey":
            Setup(trust: .anchors(["Apple_WebAuthn_Root_CA"])),
        // Chromium's virtual authenticator: a self-signed batch certificate, no root beyond it.
        "SimpleWebAuthn/verifyAttestationPacked.test.ts::should verify (broken) Packed response from Chrome virtual authenticator":
            Setup(trust: .chainTop),
        // FIDO conformance packed signers issued by "FIDOTEST" (IBM), not in the vectors.
        "SimpleWebAuthn/verifyAttestationPacked.test.ts::should succeed if id-fido-gen-ce-aaguid extension is present and matches AAGUID in auth data":
            Setup(trust: .chainTop),
        "SimpleWebAuthn/verifyAttestationPacked.test.ts::should fail if id-fido-gen-ce-aaguid extension is present and does not match AAGUID in auth data":
            Setup(trust: .chainTop),
        // A virtual authenticator's CA (UNIPI), not in the vectors; go-webauthn uses no MDS here.
        "go-webauthn/attestation_test.go::TestAttestationVerify/ShouldVerifyPackedAttestationGramThanos": Setup(trust: .chainTop),
        // W3C §16: every x5c chains to the W3C test CA from the anchors file.
        "w3c-webauthn-l3-sec16/PackedES256WithMDS": Setup(trust: .anchors([w3cTestCA])),
        "w3c-webauthn-l3-sec16/PackedES384WithMDS": Setup(trust: .anchors([w3cTestCA])),
        "w3c-webauthn-l3-sec16/PackedES512WithMDS": Setup(trust: .anchors([w3cTestCA])),
        "w3c-webauthn-l3-sec16/PackedRS256WithMDS": Setup(trust: .anchors([w3cTestCA])),
        "w3c-webauthn-l3-sec16/PackedEdDSAWithMDS": Setup(trust: .anchors([w3cTestCA])),
        "w3c-webauthn-l3-sec16/AndroidKeyES256NotAllowed": Setup(trust: .anchors([w3cTestCA])),
        "w3c-webauthn-l3-sec16/AppleAnonymousES256": Setup(trust: .anchors([w3cTestCA])),
        // The W3C TPM vector names manufacturer id:00000000 ("WebAuthn Test"): test mode.
        "w3c-webauthn-l3-sec16/TPMES256": Setup(trust: .anchors([w3cTestCA]), options: conformanceTPM),
        // The W3C U2F vector has a non-zero AAGUID. §8.6 has no AAGUID check, and the spec
        // editors' own vector is valid; Signet refuses it by default because the U2F signature
        // does not cover the AAGUID, so this vector runs with that policy off.
        "w3c-webauthn-l3-sec16/FIDOU2FES256":
            Setup(trust: .anchors([w3cTestCA]), options: AttestationFormatOptions(u2fRequiresZeroAAGUID: false)),
    ]

    // MARK: - Anchors file

    /// The certificates of `webauthn_trust_anchors.json`, by name.
    static let namedAnchors: [String: X509Certificate] = {
        var out: [String: X509Certificate] = [:]
        for entry in VectorFiles.entries("webauthn_trust_anchors.json") {
            guard let name = entry["name"] as? String, let pem = entry["pem"] as? String,
                let certificate = try? X509Certificate(pem: pem)
            else { continue }
            out[name] = certificate
        }
        return out
    }()

    // MARK: - Building the verifier's trust

    /// The x5c of an attestation object (or of a SafetyNet JWS header), leaf first.
    static func chain(attestationObject: [UInt8]) throws -> [X509Certificate] {
        let object = try AttestationObject(bytes: attestationObject)
        if let x5c = object.statement[textKey: "x5c"]?.arrayValue {
            return try x5c.map { try X509Certificate(derEncoded: $0.bytesValue ?? []) }
        }
        guard let response = object.statement[textKey: "response"]?.bytesValue,
            let header = String(decoding: response, as: UTF8.self).split(separator: ".").first,
            let headerBytes = Lenient.bytes(String(header)),
            let json = try JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
            let x5c = json["x5c"] as? [String]
        else { return [] }
        return try x5c.map { try X509Certificate(derEncoded: Array(Data(base64Encoded: $0) ?? Data())) }
    }

    /// The trust evaluator for `setup`.
    static func evaluator(_ setup: Setup, format: String, attestationObject: [UInt8]) throws -> TrustAnchorEvaluator {
        switch setup.trust {
        case .anchors(let names):
            let anchors = names.compactMap { namedAnchors[$0] }
            precondition(anchors.count == names.count, "unknown anchor name in \(names)")
            return TrustAnchorEvaluator(source: ConfiguredTrustAnchors(byFormat: [format: anchors]))
        case .chainTop:
            // A chain the strict parser refuses has no top to trust; the format verifier refuses
            // it first anyway (attestation_certificate_malformed).
            let top = (try? chain(attestationObject: attestationObject))?.last
            return TrustAnchorEvaluator(
                source: ConfiguredTrustAnchors(byFormat: [format: top.map { [$0] } ?? []]), allowsIntermediateAnchors: true)
        }
    }
}

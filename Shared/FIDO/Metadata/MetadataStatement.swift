import Crypto
import FoundationEssentials
import Tokens
import JSON

/// The parts of an authenticator's metadata statement (FIDO Metadata Statement 3.0 §4) that
/// Signet uses: identity, description, attestation types and roots, user verification and key
/// protection, algorithms and icon. Every other member is ignored; the ones read here must
/// have the specification's types, and the attestation roots must be well-formed certificates.
public struct MetadataStatement: Sendable {
    /// The model's name, e.g. "YubiKey 5 Series".
    public let description: String
    /// UAF authenticators: the AAID (`vendor#model`).
    public let aaid: String?
    /// FIDO2 authenticators: the AAGUID.
    public let aaguid: AAGUID?
    /// U2F (and some FIDO2) authenticators: SHA-1 key identifiers of the attestation
    /// certificates' public keys, lower-case hex (see ``AttestationKeyIdentifier``).
    public let attestationCertificateKeyIdentifiers: [String]
    /// The firmware version the statement describes.
    public let authenticatorVersion: UInt32
    /// `uaf`, `u2f` or `fido2`.
    public let protocolFamily: String
    /// MDS attestation type names: `basic_full`, `basic_surrogate`, `ecdaa`, `attca`,
    /// `anonca`, `none`.
    public let attestationTypes: [String]
    /// The trust anchors for this model's attestation certificates. A root may be an
    /// intermediate CA (the MDS allows it): verify with ``X509VerificationOptions/allowPartialChain``.
    public let attestationRootCertificates: [X509Certificate]
    /// Alternative combinations of user verification methods, each a list of method names
    /// (`fingerprint_internal`, `passcode_external`, `presence_internal`, `none`…).
    public let userVerificationDetails: [[String]]
    /// `hardware`, `secure_element`, `tee`, `software`, `remote_handle`.
    public let keyProtection: [String]
    /// MDS algorithm names, e.g. `secp256r1_ecdsa_sha256_raw`.
    public let authenticationAlgorithms: [String]
    /// A `data:` URL of the model's icon, when given.
    public let icon: String?

    public init(
        description: String, aaid: String? = nil, aaguid: AAGUID? = nil, attestationCertificateKeyIdentifiers: [String] = [],
        authenticatorVersion: UInt32 = 1, protocolFamily: String = "fido2", attestationTypes: [String] = [],
        attestationRootCertificates: [X509Certificate] = [], userVerificationDetails: [[String]] = [],
        keyProtection: [String] = [], authenticationAlgorithms: [String] = [], icon: String? = nil
    ) {
        self.description = description
        self.aaid = aaid
        self.aaguid = aaguid
        self.attestationCertificateKeyIdentifiers = attestationCertificateKeyIdentifiers
        self.authenticatorVersion = authenticatorVersion
        self.protocolFamily = protocolFamily
        self.attestationTypes = attestationTypes
        self.attestationRootCertificates = attestationRootCertificates
        self.userVerificationDetails = userVerificationDetails
        self.keyProtection = keyProtection
        self.authenticationAlgorithms = authenticationAlgorithms
        self.icon = icon
    }

    /// ``attestationTypes`` as WebAuthn attestation types (`basic_surrogate` is self
    /// attestation; `ecdaa` has no WebAuthn counterpart and is left out).
    public var webAuthnAttestationTypes: Set<AttestationType> {
        Set(attestationTypes.compactMap { name -> AttestationType? in
            switch name {
            case "basic_full": .basic
            case "basic_surrogate": .self
            case "attca": .attCA
            case "anonca": .anonCA
            case "none": AttestationType.none
            default: nil
            }
        })
    }

    /// Parses a statement (from a BLOB entry, or a standalone statement document).
    ///
    /// - Throws: ``MetadataError/Code/payloadMalformed`` naming the first member in error.
    /// A standalone statement (one an operator adds for an authenticator the MDS does not
    /// list) is held to the strictest reading: every attestation root must parse.
    public init(json bytes: [UInt8]) throws(MetadataError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes, maximumDepth: 32, allowingByteOrderMark: true)
        } catch {
            throw MetadataError(.payloadMalformed, "metadata statement: \(error.reason) at byte \(error.offset)")
        }
        var dropped: [MetadataJSON.Failure] = []
        do {
            try self.init(json: MetadataJSON(value), droppedRoots: &dropped)
        } catch {
            throw MetadataError(.payloadMalformed, "metadata statement \(error.path): \(error.reason)")
        }
        if let first = dropped.first {
            throw MetadataError(.payloadMalformed, "metadata statement \(first.path): \(first.reason)")
        }
    }

    /// Decodes a statement from a BLOB entry.
    ///
    /// - Parameter droppedRoots: Receives the attestation roots that are not base64 DER
    ///   certificates. They are left out rather than failing the statement: an unusable root
    ///   can only make attestations fail to verify (closed), never pass, and the rest of the
    ///   statement stays useful. (The FIDO conformance BLOB carries such certificates.)
    init(json: MetadataJSON, droppedRoots: inout [MetadataJSON.Failure]) throws(MetadataJSON.Failure) {
        description = try json.required("description").string()
        aaid = try json.member("aaid")?.string()
        if let a = try json.member("aaguid") {
            guard let parsed = AAGUID(try a.string()) else { throw a.fail("not an AAGUID") }
            aaguid = parsed
        } else {
            aaguid = nil
        }
        attestationCertificateKeyIdentifiers = try json.member("attestationCertificateKeyIdentifiers")
            .map { j throws(MetadataJSON.Failure) in try AttestationKeyIdentifier.normalised(j) } ?? []
        authenticatorVersion = UInt32(try json.required("authenticatorVersion").integer(in: 0...Int(UInt32.max)))
        protocolFamily = try json.required("protocolFamily").string()
        attestationTypes = try json.required("attestationTypes").strings()

        var roots: [X509Certificate] = []
        for element in try json.required("attestationRootCertificates").elements() {
            // Standard base64 with padding (RFC 4648 §4), DER inside.
            guard let der = Data(base64Encoded: try element.string()) else {
                droppedRoots.append(element.fail("not base64"))
                continue
            }
            do {
                roots.append(try X509Certificate(derEncoded: Array(der)))
            } catch {
                droppedRoots.append(element.fail("not a well-formed certificate"))
            }
        }
        attestationRootCertificates = roots

        var details: [[String]] = []
        for combination in try json.required("userVerificationDetails").elements() {
            var methods: [String] = []
            for descriptor in try combination.elements() {
                // `userVerification` is the MDS 2 name, which the FIDO conformance tools still write.
                var method = try descriptor.member("userVerificationMethod")
                if method == nil { method = try descriptor.member("userVerification") }
                guard let method else {
                    throw MetadataJSON.Failure(path: descriptor.path + "/userVerificationMethod", reason: "required member is missing")
                }
                methods.append(try method.string())
            }
            details.append(methods)
        }
        userVerificationDetails = details
        keyProtection = try json.required("keyProtection").strings()
        authenticationAlgorithms = try json.required("authenticationAlgorithms").strings()
        icon = try json.member("icon")?.string()
    }
}

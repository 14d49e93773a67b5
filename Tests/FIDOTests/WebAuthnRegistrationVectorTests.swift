import Crypto
import FIDO
import Foundation
import Testing

/// One entry of `webauthn_registration.json`, reduced to what the verifier needs.
struct RegistrationVector: Sendable, CustomTestStringConvertible {
    let name: String
    let format: String?
    let rpIDs: [String]
    let origins: [String]
    let challenge: String
    let clientDataJSON: String
    let attestationObject: String
    let transports: [String]
    let requiresUserVerification: Bool
    let requiresUserPresence: Bool
    let clientDataTypes: [String]?
    let allowsCrossOrigin: Bool
    let topOrigins: [String]
    let allowedAlgorithms: [COSEAlgorithm]
    let verificationTime: Date?
    let valid: Bool
    let whyInvalid: String?
    let aaguid: String?
    let credentialID: String?
    let publicKeyCOSE: String?
    let signCount: UInt32?
    let attStmtKeys: [String]?
    let algorithmName: String?

    var testDescription: String { name }

    init?(_ e: [String: Any]) {
        guard let name = e["name"] as? String, let rpIDs = Lenient.strings(e["rpId"]),
            let origins = Lenient.strings(e["origin"]), let challenge = e["challenge_b64url"] as? String,
            let response = e["response"] as? [String: Any], let inner = response["response"] as? [String: Any],
            let expected = e["expected"] as? [String: Any]
        else { return nil }
        let options = e["verifier_options"] as? [String: Any] ?? [:]
        let decoded = expected["decoded"] as? [String: Any] ?? [:]
        self.name = name
        self.format = e["format"] as? String
        self.rpIDs = rpIDs
        self.origins = origins
        self.challenge = challenge
        self.clientDataJSON = inner["clientDataJSON"] as? String ?? ""
        self.attestationObject = inner["attestationObject"] as? String ?? ""
        self.transports = response["transports"] as? [String] ?? []
        self.requiresUserVerification =
            Lenient.bool(options["require_user_verification"]) ?? Lenient.bool(options["requireUserVerification"]) ?? false
        self.requiresUserPresence = Lenient.bool(options["requireUserPresence"]) ?? true
        self.clientDataTypes = Lenient.strings(options["expectedType"])
        self.allowsCrossOrigin = Lenient.bool(options["allowCrossOrigin"]) ?? false
        self.topOrigins = Lenient.strings(options["allowedTopOrigins"]) ?? []
        // pubKeyCredParams as the source test configured it; by default what the source
        // libraries accept (everything verifiable, RS1 included for TPM keys).
        let names: [String: COSEAlgorithm] = [
            "ES256": .es256, "ES384": .es384, "ES512": .es512, "RS256": .rs256, "EdDSA": .eddsa,
            "COSEAlgorithmIdentifier.ML_DSA_44": .mlDSA44, "COSEAlgorithmIdentifier.ML_DSA_65": .mlDSA65,
            "COSEAlgorithmIdentifier.ML_DSA_87": .mlDSA87,
        ]
        if let alg = options["pubKeyCredParams_alg"] as? String, let a = names[alg] {
            self.allowedAlgorithms = [a]
        } else if let algs = options["supported_pub_key_algs"] as? [String] {
            self.allowedAlgorithms = algs.compactMap { names[$0] }
        } else {
            self.allowedAlgorithms = COSEAlgorithm.verifiable
        }
        self.verificationTime = (expected["verification_time_utc"] as? String).flatMap { s in
            let f = ISO8601DateFormatter()
            f.formatOptions = s.contains(".") ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
            return f.date(from: s)
        }
        self.valid = Lenient.bool(expected["valid"]) ?? false
        self.whyInvalid = expected["why_invalid"] as? String
        self.aaguid = expected["aaguid"] as? String
        self.credentialID = expected["credentialId"] as? String
        self.publicKeyCOSE = expected["publicKeyCose_b64url"] as? String
        self.signCount = (expected["signCount"] as? Int).map(UInt32.init)
        self.attStmtKeys = decoded["attStmt_keys"] as? [String]
        self.algorithmName = (decoded["publicKey_summary"] as? [String: Any])?["alg_name"] as? String
        self.checksSafetyNetTimestamp = Lenient.bool(options["verify_timestamp_ms"]) ?? true
        self.enforcesCTSProfileMatch = Lenient.bool(options["attestationSafetyNetEnforceCTSCheck"]) ?? true
    }

    static let all: [RegistrationVector] = VectorFiles.entries("webauthn_registration.json").compactMap(RegistrationVector.init)

    /// Options from the vector itself (`verifier_options`) that Signet's formats have.
    let checksSafetyNetTimestamp: Bool
    let enforcesCTSProfileMatch: Bool

    /// Why an entry is invalid, mapped explicitly from its `why_invalid`.
    enum Reason: Equatable {
        /// A ceremony check, with its code.
        case check(WebAuthnError.Code)
        /// An attestation check, with its finer reason (and the code it is reported under).
        case attestation(AttestationFailure)
    }

    var reason: Reason? {
        guard !valid, let why = whyInvalid else { return nil }
        let table: [(prefix: String, reason: Reason)] = [
            ("attestationObject is the empty string", .check(.malformedAttestationObject)),
            ("clientDataJSON.tokenBinding.status is 'not-supported'", .check(.tokenBindingInvalid)),
            ("registration response challenge", .check(.challengeMismatch)),
            ("registration response origin", .check(.originNotAllowed)),
            ("Unexpected registration response origin", .check(.originNotAllowed)),
            ("registration response type", .check(.clientDataTypeMismatch)),
            ("Unexpected RP ID", .check(.rpIDHashMismatch)),
            ("clientDataJSON has crossOrigin=true", .check(.crossOriginNotAllowed)),
            ("attestation chain does not lead to the configured trust anchor", .attestation(.chainRejected)),
            ("attestation certificate's id-fido-gen-ce-aaguid", .attestation(.aaguidMismatch)),
            ("SafetyNet JWS has ctsProfileMatch=false", .attestation(.integrityVerdict)),
            ("KeyDescription authorization lists are empty", .attestation(.keyAuthorizations)),
        ]
        let matches = table.filter { why.hasPrefix($0.prefix) }
        return matches.count == 1 ? matches[0].reason : nil
    }

    /// Entries the source (and the `expected` block) accept but a strict verifier refuses, with
    /// the precise outcome Signet gives and why.
    ///
    /// The two FIDO-conformance "should verify SHA1/SHA256 TPM response" AIK certificates carry
    /// a certificatePolicies extension whose UserNotice has trailing data inside its DER (the
    /// py_webauthn oracle's parser reports the same ExtraData error). The strict X.509 parser refuses
    /// any extension OpenSSL knows that does not decode, and it stays strict: a certificate
    /// that is not valid DER is not one whose other fields Signet will reason about. They end
    /// as `attestation_invalid` / `attestation_certificate_malformed`, at x5c[0].
    static let strictDeviations: [String: AttestationFailure] = [
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should verify SHA1 TPM response": .certificateMalformed,
        "SimpleWebAuthn/verifyAttestationTPM.test.ts::should verify SHA256 TPM response": .certificateMalformed,
    ]

    /// The outcome Signet must reach: nil when the entry verifies, otherwise the code and, for
    /// attestation checks, the finer reason.
    var expectedFailure: (code: WebAuthnError.Code, attestation: AttestationFailure?)? {
        if algorithmName?.hasPrefix("ML-DSA") == true { return (.algorithmUnsupported, nil) }  // no ML-DSA in OpenSSL 3.0
        if let deviation = Self.strictDeviations[name] { return (deviation.code, deviation) }
        switch reason {
        case .check(let code)?: return (code, nil)
        case .attestation(let failure)?: return (failure.code, failure)
        case nil: return nil
        }
    }

    /// The attestation type a verified entry must report.
    var expectedAttestationType: AttestationType? {
        switch format {
        case "none": AttestationType.none
        case "packed": attStmtKeys?.contains("x5c") == true ? .basic : .`self`
        case "fido-u2f", "android-key", "android-safetynet": .basic
        case "tpm": .attCA
        case "apple": .anonCA
        default: nil
        }
    }

    /// The trust decision for this entry (``AttestationVectorTrust/setups``), nil for formats
    /// without a trust path.
    var trustSetup: AttestationVectorTrust.Setup? { AttestationVectorTrust.setups[name] }

    /// Whether the attestation has a trust path (x5c, or a SafetyNet response).
    var hasTrustPath: Bool { attStmtKeys?.contains("x5c") == true || format == "android-safetynet" }

    /// The pinned clock, or the suite's fixed default (never the wall clock).
    var effectiveVerificationTime: Date { verificationTime ?? AttestationVectorTrust.defaultVerificationTime }

    func verifier() throws -> RegistrationVerifier {
        var options = trustSetup?.options ?? AttestationFormatOptions()
        // Options the vector's source test set, carried in verifier_options.
        if !checksSafetyNetTimestamp { options.safetyNetChecksTimestamp = false }
        if !enforcesCTSProfileMatch { options.safetyNetRequiresCTSProfileMatch = false }
        let evaluator = try trustSetup.map { setup in
            try AttestationVectorTrust.evaluator(
                setup, format: format ?? "", attestationObject: Lenient.bytes(attestationObject) ?? [])
        }
        return RegistrationVerifier(
            relyingParty: RelyingParty(ids: rpIDs, origins: origins, allowsCrossOrigin: allowsCrossOrigin, topOrigins: topOrigins),
            requiresUserVerification: requiresUserVerification, requiresUserPresence: requiresUserPresence,
            allowedAlgorithms: allowedAlgorithms, clientDataTypes: clientDataTypes ?? ["webauthn.create"],
            attestationFormats: .standard(options), trustEvaluator: evaluator)
    }
}

@Suite(.enabled(if: VectorFiles.available || VectorFiles.isCI, VectorFiles.skipMessage))
struct WebAuthnRegistrationVectorTests {
    /// Every entry ends with its expected outcome: verified with the right fields and
    /// attestation type, or refused with the precise code (and, for attestation checks, the
    /// precise ``AttestationFailure``).
    @Test(arguments: RegistrationVector.all)
    func vector(_ v: RegistrationVector) throws {
        if !v.valid { #expect(v.reason != nil, "unmapped why_invalid: \(v.whyInvalid ?? "none")") }
        if v.hasTrustPath { #expect(v.trustSetup != nil, "no trust decision for \(v.name)") }
        let attestationObject = try #require(Lenient.bytes(v.attestationObject))
        let response = RegistrationResponse(
            clientDataJSON: try #require(Lenient.bytes(v.clientDataJSON)), attestationObject: attestationObject,
            transports: v.transports)
        let challenge = try #require(Lenient.bytes(v.challenge))

        // The attestation object, authenticator data and credential key parse to the expected
        // fields whatever the outcome (the empty attestation object has no format).
        if let format = v.format {
            let parsed = try AttestationObject(bytes: attestationObject)
            #expect(parsed.format == format)
            #expect(parsed.statement.mapValue?.compactMap(\.key.textValue).sorted() == v.attStmtKeys)
            let credential = try #require(parsed.authenticatorData.attestedCredentialData)
            #expect(credential.aaguid.description == v.aaguid)
            #expect(credential.credentialID.base64url == v.credentialID)
            #expect(credential.credentialPublicKeyBytes.base64url == v.publicKeyCOSE)
            #expect(parsed.authenticatorData.signCount == v.signCount)
        }

        let verifier = try v.verifier()
        if let expected = v.expectedFailure {
            let error = #expect(throws: WebAuthnError.self) {
                try verifier.verify(response, expectedChallenge: challenge, verificationTime: v.effectiveVerificationTime)
            }
            #expect(error?.code == expected.code, "\(error.map(String.init(reflecting:)) ?? "no error")")
            if let failure = expected.attestation {
                #expect(error?.attestationFailure == failure, "\(error.map(String.init(reflecting:)) ?? "no error")")
            }
            return
        }
        let result: VerifiedRegistration
        do {
            result = try verifier.verify(response, expectedChallenge: challenge, verificationTime: v.effectiveVerificationTime)
        } catch {
            Issue.record("expected to verify: \(String(reflecting: error))")
            return
        }
        #expect(result.attestationFormat == v.format)
        #expect(result.attestationType == v.expectedAttestationType)
        #expect(result.aaguid.description == v.aaguid)
        #expect(result.credentialID.base64url == v.credentialID)
        #expect(result.publicKeyCOSE.base64url == v.publicKeyCOSE)
        #expect(result.signCount == v.signCount)
        #expect(result.transports == v.transports)
        #expect(result.algorithm.name == v.algorithmName)
        #expect(result.attestationTrustPath.isEmpty == !v.hasTrustPath)
    }

    /// The vectors that needed a relaxed option are refused, with the precise reason, by the
    /// production defaults (``AttestationFormatRegistry/standard``).
    @Test(arguments: [
        ("w3c-webauthn-l3-sec16/FIDOU2FES256", AttestationFailure.aaguidNotZero),
        ("w3c-webauthn-l3-sec16/TPMES256", .tpmManufacturer),
        ("SimpleWebAuthn/verifyAttestationTPM.test.ts::should verify TPM response", .tpmManufacturer),
        ("SimpleWebAuthn/verifyRegistrationResponse.test.ts::should skip CTS check when enforcement option is false", .integrityVerdict),
        (
            "py_webauthn/test_verify_registration_response_android_safetynet.py::TestVerifyRegistrationResponseAndroidSafetyNet.test_verify_attestation_android_safetynet",
            .timestampOutOfWindow
        ),
    ])
    func productionDefaultsRefuse(_ name: String, _ failure: AttestationFailure) throws {
        let v = try #require(RegistrationVector.all.first { $0.name == name })
        var verifier = try v.verifier()
        verifier.attestationFormats = .standard
        let error = #expect(throws: WebAuthnError.self) {
            try verifier.verify(
                RegistrationResponse(
                    clientDataJSON: try #require(Lenient.bytes(v.clientDataJSON)),
                    attestationObject: try #require(Lenient.bytes(v.attestationObject)), transports: v.transports),
                expectedChallenge: try #require(Lenient.bytes(v.challenge)), verificationTime: v.effectiveVerificationTime)
        }
        #expect(error?.attestationFailure == failure, "\(error.map(String.init(reflecting:)) ?? "no error")")
    }

    /// The clock is a parameter: the Galaxy S9+ chain ends at Google Hardware Attestation Root 1,
    /// which expired on 2026-05-24. Trusting only that root, the trust path is refused after
    /// then. (With all four roots it still verifies: root 2 has root 1's name and key, so
    /// OpenSSL finds it as the issuer instead.)
    @Test func expiredRootIsNotTrusted() throws {
        let name = "SimpleWebAuthn/verifyAttestationAndroidKey.test.ts::should verify Android Keystore response from a Samsung Galaxy S9+ running Android 10"
        let v = try #require(RegistrationVector.all.first { $0.name == name })
        let rootOne = try #require(AttestationVectorTrust.namedAnchors["Google_Hardware_Attestation_Root_1"])
        var verifier = try v.verifier()
        verifier.trustEvaluator = TrustAnchorEvaluator(source: ConfiguredTrustAnchors(byFormat: ["android-key": [rootOne]]))
        let response = RegistrationResponse(
            clientDataJSON: try #require(Lenient.bytes(v.clientDataJSON)), attestationObject: try #require(Lenient.bytes(v.attestationObject)),
            transports: v.transports)
        let challenge = try #require(Lenient.bytes(v.challenge))
        _ = try verifier.verify(response, expectedChallenge: challenge, verificationTime: v.effectiveVerificationTime)
        let error = #expect(throws: WebAuthnError.self) {
            try verifier.verify(response, expectedChallenge: challenge, verificationTime: Date(timeIntervalSince1970: 1_780_272_000))  // 2026-06-01
        }
        #expect(error?.code == .attestationNotTrusted)
        #expect(error?.attestationFailure == .chainRejected)
        #expect(error?.detail.contains("certificate has expired") == true, "\(error?.detail ?? "")")
    }

    @Test func everyEntryIsCovered() {
        let all = RegistrationVector.all
        #expect(all.count == 78)
        #expect(all.filter(\.valid).count == 63)
        #expect(all.filter { !$0.valid }.allSatisfy { $0.reason != nil })
        // Every entry with a trust path has an explicit trust decision, and every decision
        // names an entry.
        #expect(all.filter(\.hasTrustPath).allSatisfy { $0.trustSetup != nil })
        #expect(Set(AttestationVectorTrust.setups.keys).isSubset(of: Set(all.map(\.name))))
        #expect(Set(RegistrationVector.strictDeviations.keys).isSubset(of: Set(all.map(\.name))))
        #expect(AttestationVectorTrust.namedAnchors.count == 8)
    }

    /// Outcomes per format, for the record (printed, not asserted beyond the totals above).
    @Test func outcomesPerFormat() throws {
        var counts: [String: (verified: Int, refused: Int)] = [:]
        for v in RegistrationVector.all {
            let key = v.format ?? "(undecodable)"
            var entry = counts[key] ?? (0, 0)
            if v.expectedFailure == nil { entry.verified += 1 } else { entry.refused += 1 }
            counts[key] = entry
        }
        for (format, entry) in counts.sorted(by: { $0.key < $1.key }) {
            print("registration vectors \(format): \(entry.verified) verified, \(entry.refused) refused")
        }
        #expect(counts.values.reduce(0) { $0 + $1.verified + $1.refused } == 78)
    }
}

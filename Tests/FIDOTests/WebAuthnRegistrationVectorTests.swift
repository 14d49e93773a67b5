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
    }

    static let all: [RegistrationVector] = VectorFiles.entries("webauthn_registration.json").compactMap(RegistrationVector.init)

    /// `none`, and `packed` without x5c: the formats Signet verifies end to end today.
    var isVerifiedFormat: Bool {
        format == "none" || (format == "packed" && attStmtKeys?.contains("x5c") == false)
    }

    /// Why an entry is invalid, mapped explicitly from its `why_invalid`.
    enum Reason: Equatable {
        /// A check Signet makes today, with its code.
        case check(WebAuthnError.Code)
        /// An attestation-trust or certificate check that needs the X.509 formats (not built yet).
        case needsX509(String)
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
            ("attestation chain does not lead to the configured trust anchor", .needsX509("attestation_not_trusted")),
            ("attestation certificate's id-fido-gen-ce-aaguid", .needsX509("attestation AAGUID extension mismatch")),
            ("SafetyNet JWS has ctsProfileMatch=false", .needsX509("SafetyNet ctsProfileMatch")),
            ("KeyDescription authorization lists are empty", .needsX509("android-key authorization lists")),
        ]
        let matches = table.filter { why.hasPrefix($0.prefix) }
        return matches.count == 1 ? matches[0].reason : nil
    }

    /// The code Signet gives today, or nil when the entry must verify.
    var expectedFailure: WebAuthnError.Code? {
        if algorithmName?.hasPrefix("ML-DSA") == true { return .algorithmUnsupported }  // no ML-DSA in OpenSSL 3.0
        switch reason {
        case .check(let code)?: return code
        case .needsX509?: return .unsupportedAttestationFormat
        case nil: return isVerifiedFormat ? nil : .unsupportedAttestationFormat
        }
    }

    func verifier() -> RegistrationVerifier {
        RegistrationVerifier(
            relyingParty: RelyingParty(ids: rpIDs, origins: origins, allowsCrossOrigin: allowsCrossOrigin, topOrigins: topOrigins),
            requiresUserVerification: requiresUserVerification, requiresUserPresence: requiresUserPresence,
            allowedAlgorithms: allowedAlgorithms, clientDataTypes: clientDataTypes ?? ["webauthn.create"])
    }
}

@Suite(.enabled(if: VectorFiles.available, VectorFiles.skipMessage))
struct WebAuthnRegistrationVectorTests {
    static var verifiedFormats: [RegistrationVector] { RegistrationVector.all.filter(\.isVerifiedFormat) }
    static var otherFormats: [RegistrationVector] { RegistrationVector.all.filter { !$0.isVerifiedFormat } }

    /// `none` and `packed` self attestation: verified end to end, or refused with the precise code.
    @Test(arguments: verifiedFormats)
    func verifiedFormat(_ v: RegistrationVector) throws {
        if !v.valid { #expect(v.reason != nil, "unmapped why_invalid: \(v.whyInvalid ?? "none")") }
        let response = RegistrationResponse(
            clientDataJSON: try #require(Lenient.bytes(v.clientDataJSON)),
            attestationObject: try #require(Lenient.bytes(v.attestationObject)), transports: v.transports)
        let challenge = try #require(Lenient.bytes(v.challenge))
        let verifier = v.verifier()

        if let code = v.expectedFailure {
            let error = #expect(throws: WebAuthnError.self) {
                try verifier.verify(response, expectedChallenge: challenge, verificationTime: v.verificationTime ?? Date())
            }
            #expect(error?.code == code, "\(error.map(String.init(reflecting:)) ?? "no error")")
            return
        }
        let result = try verifier.verify(response, expectedChallenge: challenge, verificationTime: v.verificationTime ?? Date())
        #expect(result.attestationFormat == v.format)
        #expect(result.attestationType == (v.format == "none" ? .none : .`self`))
        #expect(result.aaguid.description == v.aaguid)
        #expect(result.credentialID.base64url == v.credentialID)
        #expect(result.publicKeyCOSE.base64url == v.publicKeyCOSE)
        #expect(result.signCount == v.signCount)
        #expect(result.transports == v.transports)
        #expect(result.algorithm.name == v.algorithmName)
    }

    /// Formats that need X.509: the attestation object, authenticator data and credential key
    /// parse to the expected fields, and verification stops at attestation dispatch with
    /// `unsupported_attestation_format` (or earlier, with the precise code, for entries whose
    /// fault comes first).
    @Test(arguments: otherFormats)
    func otherFormat(_ v: RegistrationVector) throws {
        if !v.valid { #expect(v.reason != nil, "unmapped why_invalid: \(v.whyInvalid ?? "none")") }
        let attestationObject = try #require(Lenient.bytes(v.attestationObject))
        let response = RegistrationResponse(
            clientDataJSON: try #require(Lenient.bytes(v.clientDataJSON)), attestationObject: attestationObject,
            transports: v.transports)

        if let format = v.format {
            let parsed = try AttestationObject(bytes: attestationObject)
            #expect(parsed.format == format)
            #expect(parsed.statement.mapValue?.compactMap(\.key.textValue).sorted() == v.attStmtKeys)
            let credential = try #require(parsed.authenticatorData.attestedCredentialData)
            #expect(credential.aaguid.description == v.aaguid)
            #expect(credential.credentialID.base64url == v.credentialID)
            #expect(credential.credentialPublicKeyBytes.base64url == v.publicKeyCOSE)
            #expect(parsed.authenticatorData.signCount == v.signCount)
            let key = try COSEKey(credential.credentialPublicKey, bytes: credential.credentialPublicKeyBytes)
            #expect(key.algorithm.name == v.algorithmName)
        }

        let code = try #require(v.expectedFailure)
        let challenge = try #require(Lenient.bytes(v.challenge))
        let error = #expect(throws: WebAuthnError.self) {
            try v.verifier().verify(response, expectedChallenge: challenge, verificationTime: v.verificationTime ?? Date())
        }
        #expect(error?.code == code, "\(error.map(String.init(reflecting:)) ?? "no error")")
    }

    @Test func everyEntryIsCovered() {
        let all = RegistrationVector.all
        #expect(all.count == 78)
        #expect(all.filter(\.valid).count == 63)
        #expect(Self.verifiedFormats.count + Self.otherFormats.count == 78)
        #expect(all.filter { $0.format == "packed" && $0.isVerifiedFormat }.count == 5)
        #expect(all.filter { !$0.valid }.allSatisfy { $0.reason != nil })
    }
}

import Crypto
import FIDO
import Foundation
import Testing

/// One entry of `webauthn_authentication.json`, reduced to what the verifier needs.
struct AuthenticationVector: Sendable, CustomTestStringConvertible {
    let name: String
    let rpIDs: [String]
    let origins: [String]
    let challenge: String
    let id: String
    let rawID: String
    let clientDataJSON: String
    let authenticatorData: String
    let signature: String
    let userHandle: String?
    let credentialPublicKey: String
    let storedSignCount: UInt32
    let requiresUserVerification: Bool
    let clientDataTypes: [String]?
    let allowsCrossOrigin: Bool
    let topOrigins: [String]
    let valid: Bool
    let whyInvalid: String?
    let newSignCount: UInt32?
    let userVerified: Bool?
    let backupEligible: Bool
    let algorithmName: String

    var testDescription: String { name }

    init?(_ e: [String: Any]) {
        guard let name = e["name"] as? String, let rpIDs = Lenient.strings(e["rpId"]),
            let origins = Lenient.strings(e["origin"]), let challenge = e["challenge_b64url"] as? String,
            let response = e["response"] as? [String: Any], let inner = response["response"] as? [String: Any],
            let expected = e["expected"] as? [String: Any], let decoded = expected["decoded"] as? [String: Any],
            let flags = decoded["flags"] as? [String: Any],
            let summary = decoded["credentialPublicKey_summary"] as? [String: Any]
        else { return nil }
        let options = e["verifier_options"] as? [String: Any] ?? [:]
        self.name = name
        self.rpIDs = rpIDs
        self.origins = origins
        self.challenge = challenge
        self.id = response["id"] as? String ?? ""
        self.rawID = response["rawId"] as? String ?? ""
        self.clientDataJSON = inner["clientDataJSON"] as? String ?? ""
        self.authenticatorData = inner["authenticatorData"] as? String ?? ""
        self.signature = inner["signature"] as? String ?? ""
        self.userHandle = inner["userHandle"] as? String
        self.credentialPublicKey = e["credentialPublicKeyCose_b64url"] as? String ?? ""
        self.storedSignCount = UInt32((e["storedSignCount"] as? Int) ?? 0)
        self.requiresUserVerification =
            Lenient.bool(options["require_user_verification"]) ?? Lenient.bool(options["requireUserVerification"]) ?? false
        self.clientDataTypes = Lenient.strings(options["expectedType"])
        self.allowsCrossOrigin = Lenient.bool(options["allowCrossOrigin"]) ?? false
        self.topOrigins = Lenient.strings(options["allowedTopOrigins"]) ?? []
        self.valid = Lenient.bool(expected["valid"]) ?? false
        self.whyInvalid = expected["why_invalid"] as? String
        self.newSignCount = (expected["newSignCount"] as? Int).map(UInt32.init)
        self.userVerified = Lenient.bool(expected["userVerified"])
        self.backupEligible = Lenient.bool(flags["BE"]) ?? false
        self.algorithmName = summary["alg_name"] as? String ?? ""
    }

    static let all: [AuthenticationVector] = VectorFiles.entries("webauthn_authentication.json").compactMap(AuthenticationVector.init)

    /// The code Signet must give for this entry, or nil when it must verify.
    ///
    /// Invalid entries map their `why_invalid` explicitly. Valid ML-DSA entries are refused:
    /// OpenSSL 3.0 (this machine: 3.0.x) has no ML-DSA, so Signet cannot verify them.
    var expectedFailure: WebAuthnError.Code? {
        if algorithmName.hasPrefix("ML-DSA") { return .algorithmUnsupported }
        guard !valid else { return nil }
        let table: [(prefix: String, code: WebAuthnError.Code)] = [
            ("Could not verify authentication signature", .signatureInvalid),
            ("assertion signature does not verify", .signatureInvalid),
            ("User verification is required but user was not verified", .userVerificationRequired),
            ("authentication response challenge", .challengeMismatch),
            ("authentication response origin", .originNotAllowed),
            ("Unexpected authentication response origin", .originNotAllowed),
            ("stored sign count (144) is not less than", .signCountNotIncreased),
            ("Unexpected RP ID", .rpIDHashMismatch),
            ("Unexpected authentication response type", .clientDataTypeMismatch),
            ("clientDataJSON has crossOrigin=true", .crossOriginNotAllowed),
        ]
        let matches = table.filter { whyInvalid?.hasPrefix($0.prefix) == true }
        return matches.count == 1 ? matches[0].code : nil
    }
}

@Suite(.enabled(if: VectorFiles.available, VectorFiles.skipMessage))
struct WebAuthnAuthenticationVectorTests {
    @Test(arguments: AuthenticationVector.all)
    func vector(_ v: AuthenticationVector) throws {
        if !v.valid {
            #expect(v.expectedFailure != nil, "unmapped why_invalid: \(v.whyInvalid ?? "none")")
        }
        let verifier = AssertionVerifier(
            relyingParty: RelyingParty(ids: v.rpIDs, origins: v.origins, allowsCrossOrigin: v.allowsCrossOrigin, topOrigins: v.topOrigins),
            requiresUserVerification: v.requiresUserVerification,
            clientDataTypes: v.clientDataTypes ?? ["webauthn.get"],
            allowedAlgorithms: COSEAlgorithm.verifiable + [.mlDSA44, .mlDSA65, .mlDSA87])
        let rawID = try #require(Lenient.bytes(v.rawID))
        let userHandle = try v.userHandle.map { try #require(Lenient.bytes($0)) }
        let response = AuthenticationResponse(
            id: v.id, rawID: rawID,
            clientDataJSON: try #require(Lenient.bytes(v.clientDataJSON)),
            authenticatorData: try #require(Lenient.bytes(v.authenticatorData)),
            signature: try #require(Lenient.bytes(v.signature)),
            userHandle: userHandle)
        // The record as registration would have stored it: the vector's key and counter, BE as
        // the authenticator reports it, and the user handle the authenticator returns.
        let credential = CredentialRecord(
            id: rawID, publicKey: try #require(Lenient.bytes(v.credentialPublicKey)), signCount: v.storedSignCount,
            backupEligible: v.backupEligible, userHandle: userHandle ?? [0x01])
        let challenge = try #require(Lenient.bytes(v.challenge))

        if let code = v.expectedFailure {
            let error = #expect(throws: WebAuthnError.self) {
                try verifier.verify(response, expectedChallenge: challenge, credential: credential)
            }
            #expect(error?.code == code, "\(error.map(String.init(reflecting:)) ?? "no error")")
        } else {
            let result = try verifier.verify(response, expectedChallenge: challenge, credential: credential)
            #expect(result.newSignCount == v.newSignCount)
            #expect(result.userVerified == v.userVerified)
            #expect(result.possibleClone == false)
            #expect(result.credentialID == rawID)
        }
    }

    @Test func everyEntryIsCovered() {
        #expect(AuthenticationVector.all.count == 37)
        #expect(AuthenticationVector.all.filter(\.valid).count == 25)
        #expect(AuthenticationVector.all.filter { $0.expectedFailure != nil }.count == 12 + 3)  // 12 invalid + 3 ML-DSA
    }

    /// The entries that keep standard base64 are refused by a strict base64url decoder: the
    /// service must not normalise what clients send.
    @Test func standardBase64IsNotBase64URL() throws {
        let entries = VectorFiles.entries("webauthn_authentication.json").filter { $0["encoding_note"] != nil }
        #expect(!entries.isEmpty)
        var refused = 0
        for e in entries {
            let inner = (e["response"] as? [String: Any])?["response"] as? [String: Any] ?? [:]
            for value in inner.values.compactMap({ $0 as? String }) where value.contains(where: { "+/=".contains($0) }) {
                #expect(Base64URL.decode(value) == nil)
                refused += 1
            }
        }
        #expect(refused > 0)
    }
}

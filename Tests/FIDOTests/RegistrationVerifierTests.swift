import Crypto
import FIDO
import Foundation
import Testing

/// WebAuthn L3 §7.1, one step broken at a time on an otherwise valid registration.
@Suite struct RegistrationVerifierTests {
    let authenticator: TestAuthenticator
    let challenge: [UInt8] = Array(repeating: 0x3C, count: 32)
    let verifier = RegistrationVerifier(
        relyingParty: RelyingParty(id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin]), requiresUserVerification: false)

    init() throws { authenticator = try TestAuthenticator() }

    var clientData: [UInt8] { TestAuthenticator.clientData(type: "webauthn.create", challenge: challenge) }

    func authData(flags: UInt8 = 0x01 | 0x04, key: [UInt8]? = nil) -> [UInt8] {
        authenticator.authenticatorData(flags: flags, signCount: 0, attested: true, credentialPublicKey: key)
    }

    func response(
        fmt: String = "none", attStmt: CBORValue = .map([]), authData: [UInt8]? = nil, clientData: [UInt8]? = nil
    ) -> RegistrationResponse {
        RegistrationResponse(
            clientDataJSON: clientData ?? self.clientData,
            attestationObject: TestAuthenticator.attestationObject(fmt: fmt, attStmt: attStmt, authData: authData ?? self.authData()),
            transports: ["usb", "nfc"])
    }

    func packedResponse(authData: [UInt8]? = nil, alg: Int = -7) throws -> RegistrationResponse {
        let authData = authData ?? self.authData()
        return response(fmt: "packed", attStmt: try authenticator.packedSelf(authData: authData, clientDataJSON: clientData, alg: alg), authData: authData)
    }

    func code(_ response: RegistrationResponse, verifier: RegistrationVerifier? = nil, challenge: [UInt8]? = nil) -> WebAuthnError.Code? {
        do {
            _ = try (verifier ?? self.verifier).verify(response, expectedChallenge: challenge ?? self.challenge)
            return nil
        } catch {
            return error.code
        }
    }

    func verifier(_ change: (inout RegistrationVerifier) -> Void) -> RegistrationVerifier {
        var v = verifier
        change(&v)
        return v
    }

    // MARK: - Success

    @Test func noneAttestationVerifies() throws {
        let result = try verifier.verify(response(), expectedChallenge: challenge)
        #expect(result.credentialID == authenticator.credentialID)
        #expect(result.publicKeyCOSE == authenticator.coseKey)
        #expect(result.algorithm == .es256)
        #expect(result.aaguid.bytes == authenticator.aaguid)
        #expect(result.signCount == 0)
        #expect(result.userVerified && !result.backupEligible && !result.backupState)
        #expect(result.attestationFormat == "none")
        #expect(result.attestationType == .none)
        #expect(result.attestationTrustPath.isEmpty)
        #expect(result.transports == ["usb", "nfc"])
        #expect(result.rpID == TestAuthenticator.rpID)
    }

    @Test func packedSelfAttestationVerifies() throws {
        let result = try verifier.verify(try packedResponse(), expectedChallenge: challenge)
        #expect(result.attestationFormat == "packed")
        #expect(result.attestationType == .`self`)
    }

    /// The registered credential then signs in.
    @Test func registeredCredentialSignsIn() throws {
        let registered = try verifier.verify(try packedResponse(), expectedChallenge: challenge)
        let record = CredentialRecord(
            id: registered.credentialID, parsedPublicKey: registered.credentialPublicKey, signCount: registered.signCount,
            backupEligible: registered.backupEligible, userHandle: [1])
        let assertionChallenge: [UInt8] = Array(repeating: 0x11, count: 32)
        let assertion = try authenticator.assertion(challenge: assertionChallenge, authenticatorData: authenticator.authenticatorData(signCount: 0))
        let result = try AssertionVerifier(relyingParty: verifier.relyingParty, requiresUserVerification: true)
            .verify(assertion, expectedChallenge: assertionChallenge, credential: record)
        #expect(result.newSignCount == 0)
    }

    // MARK: - Steps 5–11: client data

    @Test func steps5to6MalformedClientData() {
        #expect(code(response(clientData: Array("{".utf8))) == .malformedClientData)
        #expect(code(response(clientData: [0xC3, 0x28])) == .malformedClientData)
    }

    @Test func step7Type() {
        let get = TestAuthenticator.clientData(type: "webauthn.get", challenge: challenge)
        #expect(code(response(clientData: get)) == .clientDataTypeMismatch)
    }

    @Test func step8Challenge() {
        #expect(code(response(), challenge: Array(repeating: 0x3D, count: 32)) == .challengeMismatch)
    }

    @Test func step9Origin() {
        let other = TestAuthenticator.clientData(type: "webauthn.create", challenge: challenge, origin: "https://example.org.evil.example")
        #expect(code(response(clientData: other)) == .originNotAllowed)
    }

    @Test func step10CrossOriginAndTopOrigin() {
        let cross = TestAuthenticator.clientData(type: "webauthn.create", challenge: challenge, crossOrigin: true)
        #expect(code(response(clientData: cross)) == .crossOriginNotAllowed)
        let top = TestAuthenticator.clientData(
            type: "webauthn.create", challenge: challenge, crossOrigin: true, extra: #","topOrigin":"https://other.example""#)
        let embeddable = verifier {
            $0.relyingParty = RelyingParty(id: TestAuthenticator.rpID, origins: [TestAuthenticator.origin], allowsCrossOrigin: true)
        }
        #expect(code(response(clientData: cross), verifier: embeddable) == nil)
        #expect(code(response(clientData: top), verifier: embeddable) == .topOriginNotAllowed)
    }

    @Test func step10TokenBinding() {
        let present = TestAuthenticator.clientData(
            type: "webauthn.create", challenge: challenge, extra: #","tokenBinding":{"status":"present","id":"AAAA"}"#)
        #expect(code(response(clientData: present)) == .tokenBindingInvalid)
    }

    // MARK: - Step 12: attestation object

    @Test func step12MalformedAttestationObject() {
        let authData = self.authData()
        let valid = TestAuthenticator.attestationObjectValue(fmt: "none", attStmt: .map([]), authData: authData)
        let entries = valid.mapValue ?? []
        let cases: [[UInt8]] = [
            [],
            [0xA0],
            valid.encoded + [0x00],  // trailing byte
            Array(valid.encoded.dropLast()),  // truncated
            CBORValue.array([.text("none")]).encoded,
            CBORValue.map(Array(entries.dropFirst())).encoded,  // no fmt
            CBORValue.map(entries + [(key: .text("epAtt"), value: .bool(true))]).encoded,  // unknown member
            CBORValue.map([(key: .text("fmt"), value: .int(1))] + entries.dropFirst()).encoded,  // fmt not text
            TestAuthenticator.attestationObject(fmt: "", authData: authData),
            TestAuthenticator.attestationObject(fmt: "pa\"cked", authData: authData),
            TestAuthenticator.attestationObject(fmt: "nöne", authData: authData),
            TestAuthenticator.attestationObject(fmt: String(repeating: "a", count: 33), authData: authData),
            TestAuthenticator.attestationObject(fmt: "none", attStmt: .array([]), authData: authData),
            CBORValue.map([entries[0], entries[1], (key: .text("authData"), value: .text("x"))]).encoded,
            CBORValue.map([entries[0], entries[1], entries[2], (key: .text("fmt"), value: .text("none"))]).encoded,  // duplicate
        ]
        for attestationObject in cases {
            let r = RegistrationResponse(clientDataJSON: clientData, attestationObject: attestationObject)
            #expect(code(r) == .malformedAttestationObject)
        }
    }

    @Test func step12MalformedAuthenticatorData() {
        let good = authData()
        #expect(code(response(authData: Array(good.dropLast()))) == .malformedAuthenticatorData)
        #expect(code(response(authData: good + [0xA0])) == .malformedAuthenticatorData)  // extensions without ED
        #expect(code(response(authData: Array(good.prefix(40)))) == .malformedAuthenticatorData)
    }

    @Test func step25CredentialIDLength() throws {
        let long = try TestAuthenticator(credentialID: Array(repeating: 7, count: 1024))
        let authData = long.authenticatorData(signCount: 0, attested: true)
        #expect(code(response(authData: authData)) == .credentialIDTooLong)
        let longest = try TestAuthenticator(credentialID: Array(repeating: 7, count: 1023))
        let r = RegistrationResponse(
            clientDataJSON: clientData, attestationObject: TestAuthenticator.attestationObject(authData: longest.authenticatorData(signCount: 0, attested: true)))
        #expect(code(r) == nil)
    }

    // MARK: - Steps 13–16: authenticator data

    @Test func step13RPIDHash() {
        let other = authenticator.authenticatorData(rpID: "example.com", signCount: 0, attested: true)
        #expect(code(response(authData: other)) == .rpIDHashMismatch)
    }

    @Test func step14UserPresent() {
        #expect(code(response(authData: authData(flags: 0x04))) == .userNotPresent)
        // Conditional create may come without UP.
        #expect(code(response(authData: authData(flags: 0x04)), verifier: verifier { $0.requiresUserPresence = false }) == nil)
    }

    @Test func step15UserVerification() {
        let strict = verifier { $0.requiresUserVerification = true }
        #expect(code(response(authData: authData(flags: 0x01)), verifier: strict) == .userVerificationRequired)
        #expect(code(response(authData: authData(flags: 0x01))) == nil)
    }

    @Test func step16BackupState() {
        #expect(code(response(authData: authData(flags: 0x01 | 0x10))) == .backupStateInconsistent)
        let synced = try? verifier.verify(response(authData: authData(flags: 0x01 | 0x08 | 0x10)), expectedChallenge: challenge)
        #expect(synced?.backupEligible == true && synced?.backupState == true)
    }

    // MARK: - Step 19: credential public key

    @Test func step19AttestedCredentialDataRequired() {
        let noAT = authenticator.authenticatorData(signCount: 0)
        #expect(code(response(authData: noAT)) == .attestedCredentialDataMissing)
    }

    @Test func step19AlgorithmMustBeOffered() {
        #expect(code(response(), verifier: verifier { $0.allowedAlgorithms = [.eddsa, .rs256] }) == .algorithmNotAllowed)
        #expect(code(response(), verifier: verifier { $0.allowedAlgorithms = [.es256] }) == nil)
    }

    @Test func step19CredentialPublicKeyMustParse() {
        let mismatched = authenticator.coseKeyValue(alg: -35).encoded  // ES384 on a P-256 point
        #expect(code(response(authData: authData(key: mismatched))) == .malformedCredentialPublicKey)
        let noY = CBORValue.map((authenticator.coseKeyValue().mapValue ?? []).filter { $0.key != .int(-3) }).encoded
        #expect(code(response(authData: authData(key: noY))) == .malformedCredentialPublicKey)
        let notAMap = CBORValue.array([.int(1)]).encoded
        #expect(code(response(authData: authData(key: notAMap))) == .malformedCredentialPublicKey)
        var offCurve = authenticator.y
        offCurve[31] ^= 1
        let invalidPoint = CBORValue.map([
            (key: .int(1), value: .int(2)), (key: .int(3), value: .int(-7)), (key: .int(-1), value: .int(1)),
            (key: .int(-2), value: .bytes(authenticator.x)), (key: .int(-3), value: .bytes(offCurve)),
        ]).encoded
        #expect(code(response(authData: authData(key: invalidPoint))) == .malformedCredentialPublicKey)
    }

    @Test func step19MLDSAIsUnsupported() {
        let mldsa = CBORValue.map([(key: .int(1), value: .int(7)), (key: .int(3), value: .int(-49)), (key: .int(-1), value: .bytes([1]))]).encoded
        #expect(code(response(authData: authData(key: mldsa)), verifier: verifier { $0.allowedAlgorithms = [.mlDSA65] }) == .algorithmUnsupported)
        #expect(code(response(authData: authData(key: mldsa))) == .algorithmNotAllowed)  // not offered at all
    }

    // MARK: - Steps 21–24: attestation

    @Test func step21UnknownFormats() {
        for fmt in ["Packed", "NONE", "TPM", "packed2", "android-key-v2"] {
            #expect(code(response(fmt: fmt)) == .unsupportedAttestationFormat)
        }
    }

    @Test func step22NoneMustHaveAnEmptyStatement() {
        #expect(code(response(attStmt: .map([(key: .text("sig"), value: .bytes([1]))]))) == .attestationInvalid)
    }

    @Test func step22PackedSyntax() throws {
        let sig = CBORValue.bytes([0x30, 0x00])
        let cases: [CBORValue] = [
            .map([]),
            .map([(key: .text("alg"), value: .int(-7))]),
            .map([(key: .text("sig"), value: sig)]),
            .map([(key: .text("alg"), value: .text("ES256")), (key: .text("sig"), value: sig)]),
            .map([(key: .text("alg"), value: .int(-7)), (key: .text("sig"), value: .text("x"))]),
            .map([(key: .text("alg"), value: .int(-7)), (key: .text("sig"), value: sig), (key: .text("ecdaaKeyId"), value: .bytes([1]))]),
            .map([(key: .text("alg"), value: .int(-7)), (key: .text("sig"), value: sig), (key: .text("x5c"), value: .array([]))]),
            .map([(key: .text("alg"), value: .int(-7)), (key: .text("sig"), value: sig), (key: .text("x5c"), value: .array([.text("x")]))]),
        ]
        for attStmt in cases {
            #expect(code(response(fmt: "packed", attStmt: attStmt)) == .attestationInvalid)
        }
    }

    @Test func step22PackedSelfAlgorithmMustMatchTheCredentialKey() throws {
        #expect(code(try packedResponse(alg: -257)) == .attestationAlgorithmMismatch)
        #expect(code(try packedResponse(alg: -8)) == .attestationAlgorithmMismatch)
    }

    @Test func step22PackedSelfSignature() throws {
        let authData = self.authData()
        // Signed over different authenticator data.
        let otherAuthData = authenticator.authenticatorData(flags: 0x01, signCount: 0, attested: true)
        let stale = try authenticator.packedSelf(authData: otherAuthData, clientDataJSON: clientData)
        #expect(code(response(fmt: "packed", attStmt: stale, authData: authData)) == .attestationSignatureInvalid)
        // Signed by a key that is not the credential key.
        let impostor = try TestAuthenticator()
        let foreign = try impostor.packedSelf(authData: authData, clientDataJSON: clientData)
        #expect(code(response(fmt: "packed", attStmt: foreign, authData: authData)) == .attestationSignatureInvalid)
    }

    @Test func step22PackedWithX5CNeedsACertificate() throws {
        let authData = self.authData()
        let signed = try authenticator.packedSelf(authData: authData, clientDataJSON: clientData)
        let withChain = CBORValue.map((signed.mapValue ?? []) + [(key: .text("x5c"), value: .array([.bytes([0x30, 0x03, 0x02, 0x01, 0x01])]))])
        #expect(code(response(fmt: "packed", attStmt: withChain, authData: authData)) == .attestationInvalid)
    }

    @Test func step24AttestationTypePolicy() throws {
        let attestationRequired = verifier { $0.allowedAttestationTypes = [.basic, .attCA] }
        #expect(code(response(), verifier: attestationRequired) == .attestationTypeNotAllowed)
        #expect(code(try packedResponse(), verifier: attestationRequired) == .attestationTypeNotAllowed)
    }

    /// A format that returns a trust path is refused unless a trust evaluator accepts it.
    @Test func steps23to24TrustPathNeedsAnEvaluator() throws {
        struct FakeBasic: AttestationFormatVerifier {
            let format = "org.example.fake"
            func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
                AttestationResult(type: .basic, trustPath: [[0x30, 0x00]])
            }
        }
        struct Evaluator: AttestationTrustEvaluator {
            let accept: Bool
            func evaluate(_ result: AttestationResult, context: AttestationContext) throws(WebAuthnError) {
                if !accept { throw WebAuthnError(.attestationNotTrusted, step: "test", "no anchor") }
            }
        }
        var formats = AttestationFormatRegistry.standard
        formats.register(FakeBasic())
        #expect(formats.formats == ["android-key", "android-safetynet", "apple", "fido-u2f", "none", "org.example.fake", "packed", "tpm"])
        let fake = response(fmt: "org.example.fake", attStmt: .map([(key: .text("x"), value: .int(1))]))
        #expect(code(fake, verifier: verifier { $0.attestationFormats = formats }) == .attestationNotTrusted)
        let rejecting = verifier {
            $0.attestationFormats = formats
            $0.trustEvaluator = Evaluator(accept: false)
        }
        #expect(code(fake, verifier: rejecting) == .attestationNotTrusted)
        let accepting = verifier {
            $0.attestationFormats = formats
            $0.trustEvaluator = Evaluator(accept: true)
        }
        let result = try accepting.verify(fake, expectedChallenge: challenge)
        #expect(result.attestationType == .basic)
        #expect(result.attestationTrustPath == [[0x30, 0x00]])
    }

    /// Under ``RegistrationVerifier/UntrustedAttestation/treatAsNone`` an untrusted trust path
    /// counts as `none` (§7.1 steps 23–24 and the step after storing): no trust path, the
    /// evaluator's reason kept; refused when `none` is not an allowed type either. A trusted
    /// path stays as the format said.
    @Test func anUntrustedTrustPathCountsAsNoneWhenThePolicySaysSo() throws {
        struct FakeBasic: AttestationFormatVerifier {
            let format = "org.example.fake"
            func verify(_ context: AttestationContext) throws(WebAuthnError) -> AttestationResult {
                AttestationResult(type: .basic, trustPath: [[0x30, 0x00]])
            }
        }
        struct Evaluator: AttestationTrustEvaluator {
            let accept: Bool
            func evaluate(_ result: AttestationResult, context: AttestationContext) throws(WebAuthnError) {
                if !accept { throw WebAuthnError(.attestationNotTrusted, step: "test", "not issued by the anchor") }
            }
        }
        var formats = AttestationFormatRegistry.standard
        formats.register(FakeBasic())
        let fake = response(fmt: "org.example.fake", attStmt: .map([(key: .text("x"), value: .int(1))]))
        let lenient = verifier {
            $0.attestationFormats = formats
            $0.trustEvaluator = Evaluator(accept: false)
            $0.untrustedAttestation = .treatAsNone
        }
        let result = try lenient.verify(fake, expectedChallenge: challenge)
        #expect(result.attestationType == .none && result.attestationTrustPath.isEmpty && result.attestationFormat == "org.example.fake")
        #expect(result.untrustedAttestation?.code == .attestationNotTrusted && result.untrustedAttestation?.detail.contains("not issued") == true)
        // Without an evaluator nothing is trusted: the same.
        let noEvaluator = verifier {
            $0.attestationFormats = formats
            $0.untrustedAttestation = .treatAsNone
        }
        #expect(try noEvaluator.verify(fake, expectedChallenge: challenge).attestationType == .none)
        // `none` not allowed: the untrusted chain is refused as such.
        var noneRefused = lenient
        noneRefused.allowedAttestationTypes = [.basic, .self]
        #expect(code(fake, verifier: noneRefused) == .attestationNotTrusted)
        // A trusted path is unchanged.
        var trusting = lenient
        trusting.trustEvaluator = Evaluator(accept: true)
        let trusted = try trusting.verify(fake, expectedChallenge: challenge)
        #expect(trusted.attestationType == .basic && trusted.attestationTrustPath == [[0x30, 0x00]] && trusted.untrustedAttestation == nil)
    }

    /// Every code has a distinct, stable, snake_case string.
    @Test func codesAreStable() {
        let raw = WebAuthnError.Code.allCases.map(\.rawValue)
        #expect(Set(raw).count == raw.count)
        #expect(raw.allSatisfy { $0.allSatisfy { $0 == "_" || ($0.isLowercase && $0.isASCII) } })
        for expected in [
            "client_data_type_mismatch", "challenge_mismatch", "origin_not_allowed", "cross_origin_not_allowed", "rp_id_hash_mismatch",
            "user_not_present", "user_verification_required", "backup_state_inconsistent", "algorithm_not_allowed", "signature_invalid",
            "sign_count_not_increased", "credential_not_allowed", "user_handle_mismatch", "malformed_authenticator_data",
            "malformed_attestation_object", "unsupported_attestation_format", "attestation_invalid",
        ] {
            #expect(raw.contains(expected))
        }
    }
}

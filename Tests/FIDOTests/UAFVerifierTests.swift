import Crypto
import FIDO
import Foundation
import JSON
import Schema
import Testing
import TestSupport

/// The UAF verifiers driven by a software authenticator: every rule's refusal with its code.
@Suite struct UAFVerifierTests {
    static let appID = "https://example.test/uaf/facets"
    static let facet = "https://example.test"
    let context = UAFResponseContext(appID: appID, trustedFacetIDs: [facet, "android:apk-key-hash:abc"])

    func registrationRequest(challenge: String = "chal-1") -> UAFRegistrationRequest {
        UAFRegistrationRequest(
            header: UAFOperationHeader(upv: .v1_2, op: "Reg", appID: Self.appID, serverData: "sd-1"),
            challenge: challenge, username: "alice", policy: .acceptAll)
    }

    func authenticationRequest(challenge: String = "chal-2", transaction: UAFTransaction? = nil) -> UAFAuthenticationRequest {
        UAFAuthenticationRequest(
            header: UAFOperationHeader(upv: .v1_2, op: "Auth", appID: Self.appID, serverData: "sd-2"),
            challenge: challenge, transaction: transaction.map { [$0] }, policy: .acceptAll)
    }

    func record(_ registration: UAFVerifiedRegistration) -> UAFRegistrationRecord {
        UAFRegistrationRecord(
            aaid: registration.aaid, keyID: registration.keyID, publicKey: registration.publicKey.bytes,
            keyEncoding: registration.publicKey.encoding, signatureAlgorithm: registration.publicKey.algorithm,
            signCounter: registration.signCounter, attestationType: registration.attestation.tag,
            userVerificationDetails: registration.userVerificationDetails, keyProtection: registration.keyProtection)
    }

    func register(_ authenticator: SoftUAFAuthenticator, verifier: UAFRegistrationVerifier? = nil) throws -> UAFVerifiedRegistration {
        let text = try authenticator.register(registrationRequest())
        let results = try (verifier ?? UAFRegistrationVerifier(context: context)).verify(
            UAFMessageDecoding.response(text), expectedChallenge: "chal-1", serverData: "sd-1", at: MetadataTestPKI.verificationTime)
        return try #require(results.first)
    }

    func authenticate(
        _ authenticator: SoftUAFAuthenticator, record: UAFRegistrationRecord, policy: UAFPolicy = .acceptAll, transaction: UAFTransaction? = nil,
        mode: UInt8? = nil, shownContent: [UInt8]? = nil, mutate: ((inout UAFResponse) -> Void)? = nil
    ) throws(UAFError) -> UAFVerifiedAuthentication {
        let text: String
        do {
            text = try authenticator.authenticate(
                authenticationRequest(transaction: transaction), mode: mode, transactionContent: shownContent, mutate: mutate)
        } catch { throw UAFError(.malformedMessage, rule: "test", "authenticator failed") }
        let verifier = UAFAuthenticationVerifier(context: context, policy: policy)
        let results = try verifier.verify(
            UAFMessageDecoding.response(text), expectedChallenge: "chal-2", serverData: "sd-2", transaction: transaction
        ) { aaid, keyID in aaid == record.aaid && keyID == record.keyID ? record : nil }
        return results[0]
    }

    // MARK: - Registration and authentication that work

    /// Every signature algorithm the software authenticator signs with, with the key encodings
    /// it is registered in.
    static let signingAlgorithms: [(UAFSignatureAlgorithm, UAFKeyEncoding)] = [
        (UAFSignatureAlgorithm.secp256r1ECDSASHA256Raw, UAFKeyEncoding.eccX962Raw),
        (.secp256r1ECDSASHA256DER, .eccX962DER),
        (.rsassaPSSSHA256Raw, .rsa2048Raw),
        (.rsassaPSSSHA256DER, .rsa2048DER),
        (.rsaEMSAPKCS1SHA256Raw, .rsa2048DER),
        (.rsaEMSAPKCS1SHA256DER, .rsa2048Raw),
        (.ed25519EdDSASHA512Raw, .cose),
        (.secp384r1ECDSASHA384Raw, .eccX962Raw),
        (.secp384r1ECDSASHA384Raw, .eccX962DER),
        (.secp521r1ECDSASHA512Raw, .eccX962Raw),
        (.secp521r1ECDSASHA512Raw, .eccX962DER),
        (.secp256k1ECDSASHA256Raw, .eccX962Raw),
        (.secp256k1ECDSASHA256Raw, .eccX962DER),
        (.secp256k1ECDSASHA256DER, .eccX962Raw),
        (.secp256k1ECDSASHA256DER, .eccX962DER),
    ]

    /// A software authenticator of `algorithm` whose key is registered as `encoding`.
    static func authenticator(_ algorithm: UAFSignatureAlgorithm, _ encoding: UAFKeyEncoding) -> SoftUAFAuthenticator {
        let isEC = [
            UAFSignatureAlgorithm.secp256r1ECDSASHA256Raw, .secp256r1ECDSASHA256DER, .secp384r1ECDSASHA384Raw, .secp521r1ECDSASHA512Raw,
            .secp256k1ECDSASHA256Raw, .secp256k1ECDSASHA256DER,
        ].contains(algorithm)
        let pem: String? = algorithm == .ed25519EdDSASHA512Raw ? UAFTestKeys.ed25519PEM : isEC ? nil : UAFTestKeys.rsa2048PEM
        return SoftUAFAuthenticator(aaid: "ffff#0001", algorithm: algorithm, keyEncoding: encoding, facetID: Self.facet, rsaKeyPEM: pem)
    }

    @Test(arguments: signingAlgorithms)
    func surrogateRegistrationThenSignIn(algorithm: UAFSignatureAlgorithm, encoding: UAFKeyEncoding) throws {
        let authenticator = Self.authenticator(algorithm, encoding)
        let registration = try register(authenticator)
        #expect(registration.aaid == "FFFF#0001")
        #expect(registration.attestation.typeName == "basic_surrogate")
        #expect(registration.regCounter == 1)
        let first = try authenticate(authenticator, record: record(registration))
        #expect(first.newSignCounter == 1)
        #expect(!first.confirmedTransaction)
    }

    /// secp256k1 (UAF Registry ALG_SIGN_SECP256K1_ECDSA_SHA256_RAW 0x05 and _DER 0x06), verified
    /// by OpenSSL: a signature of the registered key verifies; another key's, a tampered one,
    /// r or s out of range, or the other encoding than the declared one do not.
    @Test(arguments: [UAFSignatureAlgorithm.secp256k1ECDSASHA256Raw, .secp256k1ECDSASHA256DER])
    func secp256k1SignaturesVerifyAndForgeriesDoNot(algorithm: UAFSignatureAlgorithm) throws {
        let authenticator = SoftUAFAuthenticator(algorithm: algorithm, keyEncoding: .eccX962Raw, facetID: Self.facet)
        let registration = try register(authenticator)
        #expect(registration.publicKey.algorithm == algorithm)
        let r = record(registration)
        #expect(try authenticate(authenticator, record: r).newSignCounter == 1)

        let fc = try authenticator.fcParams(appID: Self.appID, challenge: "chal-2")
        let assertion = try UAFAuthenticationAssertion(bytes: authenticator.authenticationAssertion(fcParams: fc))
        let key = try UAFPublicKey(bytes: r.publicKey, encoding: r.keyEncoding, algorithm: algorithm)
        #expect(key.verify(signature: assertion.signature, message: assertion.signedData))
        var tampered = assertion.signature
        tampered[tampered.count - 1] ^= 0x01
        #expect(!key.verify(signature: tampered, message: assertion.signedData))
        #expect(!key.verify(signature: assertion.signature, message: assertion.signedData + [0]))
        // The secp256k1 order n: r = n or s = n is out of range, raw or DER.
        let n = try #require(Hex.decode("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"))
        let raw = algorithm == .secp256k1ECDSASHA256Raw ? assertion.signature : try #require(ECDSASignature.raw(fromDER: assertion.signature, size: 32))
        for bad in [n + Array(raw[32...]), Array(raw[..<32]) + n, [UInt8](repeating: 0, count: 32) + Array(raw[32...])] {
            let encoded = algorithm == .secp256k1ECDSASHA256Raw ? bad : try #require(ECDSASignature.der(fromRaw: bad))
            #expect(!key.verify(signature: encoded, message: assertion.signedData))
        }
        // The other encoding than the one declared.
        let other = algorithm == .secp256k1ECDSASHA256Raw ? try #require(ECDSASignature.der(fromRaw: raw)) : raw
        #expect(!key.verify(signature: other, message: assertion.signedData))
        // Signed by another secp256k1 key than the registered one.
        let impostor = SoftUAFAuthenticator(algorithm: algorithm, keyEncoding: .eccX962Raw, facetID: Self.facet)
        _ = try register(impostor)
        let forged = UAFRegistrationRecord(
            aaid: r.aaid, keyID: impostor.registrations[0].keyID, publicKey: r.publicKey, keyEncoding: r.keyEncoding,
            signatureAlgorithm: algorithm, signCounter: 0, attestationType: r.attestationType)
        let forgery = #expect(throws: UAFError.self) { _ = try authenticate(impostor, record: forged) }
        #expect(forgery?.code == .signatureInvalid)
        // A P-256 authenticator's assertion against a secp256k1 registration: the algorithm differs.
        let p256 = SoftUAFAuthenticator(facetID: Self.facet)
        _ = try register(p256)
        let mismatched = UAFRegistrationRecord(
            aaid: r.aaid, keyID: p256.registrations[0].keyID, publicKey: r.publicKey, keyEncoding: r.keyEncoding,
            signatureAlgorithm: algorithm, signCounter: 0, attestationType: r.attestationType)
        let error = #expect(throws: UAFError.self) { _ = try authenticate(p256, record: mismatched) }
        #expect(error?.code == .unsupportedAlgorithm)
    }

    @Test func basicFullChainsToTheTestAttestationCA() throws {
        let ca = try MetadataTestPKI.root("UAF Test Attestation CA")
        let leaf = try MetadataTestPKI.issue("UAF Test Authenticator", by: ca)
        let authenticator = SoftUAFAuthenticator(aaid: "FFFF#0002", attestation: .full(key: leaf.key, certificates: [leaf.der]), facetID: Self.facet)
        let statement = MetadataStatement(
            description: "Test UAF authenticator", aaid: "FFFF#0002", protocolFamily: "uaf", attestationTypes: ["basic_full"],
            attestationRootCertificates: [try ca.certificate], authenticationAlgorithms: ["secp256r1_ecdsa_sha256_raw"])
        let entry = MetadataEntry(aaid: "FFFF#0002", metadataStatement: statement, statusReports: [], timeOfLastStatusChange: Date())
        let verifier = UAFRegistrationVerifier(context: context, metadata: { $0 == "FFFF#0002" ? entry : nil })
        let registration = try register(authenticator, verifier: verifier)
        #expect(registration.attestation.typeName == "basic_full")
        #expect(registration.description == "Test UAF authenticator")

        // Without metadata, or chaining to another CA, basic full is not trusted.
        let error = #expect(throws: UAFError.self) { _ = try register(authenticator) }
        #expect(error?.code == .attestationNotTrusted)
        let other = try MetadataTestPKI.root("Another CA")
        let otherStatement = MetadataStatement(
            description: "x", aaid: "FFFF#0002", protocolFamily: "uaf", attestationTypes: ["basic_full"], attestationRootCertificates: [try other.certificate])
        let otherEntry = MetadataEntry(aaid: "FFFF#0002", metadataStatement: otherStatement, statusReports: [], timeOfLastStatusChange: Date())
        let untrusted = #expect(throws: UAFError.self) {
            _ = try register(authenticator, verifier: UAFRegistrationVerifier(context: context, metadata: { _ in otherEntry }))
        }
        #expect(untrusted?.code == .attestationNotTrusted)

        // A surrogate from an AAID whose metadata lists only basic full is refused.
        let surrogate = SoftUAFAuthenticator(aaid: "FFFF#0002", facetID: Self.facet)
        let refused = #expect(throws: UAFError.self) { _ = try register(surrogate, verifier: verifier) }
        #expect(refused?.code == .surrogateNotAllowed)
        // A revoked model is refused.
        let revoked = MetadataEntry(
            aaid: "FFFF#0002", metadataStatement: statement,
            statusReports: [StatusReport(status: .revoked, effectiveDate: nil)], timeOfLastStatusChange: Date())
        let revokedError = #expect(throws: UAFError.self) {
            _ = try register(authenticator, verifier: UAFRegistrationVerifier(context: context, metadata: { _ in revoked }))
        }
        #expect(revokedError?.code == .authenticatorRevoked)
    }

    /// The metadata service writes AAIDs in lower case (`"4e4e#4005"`), the UAF parser returns
    /// them in upper case: the model is found either way, so its revocation and its attestation
    /// types apply. Before, an AAID with a letter in it found no entry: a revoked model
    /// registered, and a software key claiming a basic-full-only model registered with a
    /// surrogate attestation.
    @Test func metadataIsFoundWhateverTheCaseOfTheAAID() throws {
        let chain = try MetadataTestPKI.Chain()
        func service(status: String) throws -> MetadataService {
            var entry = MetadataTestPKI.entry(statuses: [(status, "2024-01-01")], description: "Lower-case UAF model")
            var statement = try #require(entry["metadataStatement"] as? [String: Any])
            statement["protocolFamily"] = "uaf"
            statement["aaid"] = "4e4e#4005"
            statement["publicKeyAlgAndEncodings"] = ["ecc_x962_raw"]
            entry["metadataStatement"] = statement
            entry["aaid"] = "4e4e#4005"
            let metadata = MetadataService(configuration: try chain.configuration)
            let update = try metadata.load(
                jwt: try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: 1, entries: [entry]), chain: chain), at: MetadataTestPKI.verificationTime)
            #expect(update.issues.isEmpty, "\(update.issues)")
            return metadata
        }
        let certified = try service(status: "FIDO_CERTIFIED_L1")
        #expect(certified.blob?.entry(forAAID: "4E4E#4005")?.metadataStatement?.description == "Lower-case UAF model")
        #expect(certified.blob?.entry(forAAID: "4e4e#4005") != nil && certified.blob?.entry(forAAID: "4E4E#4006") == nil)
        // A surrogate claiming the model, whose metadata lists only basic full: refused.
        let surrogate = SoftUAFAuthenticator(aaid: "4e4e#4005", facetID: Self.facet)
        let refused = #expect(throws: UAFError.self) {
            _ = try register(surrogate, verifier: UAFRegistrationVerifier(context: context, metadata: { certified.blob?.entry(forAAID: $0) }))
        }
        #expect(refused?.code == .surrogateNotAllowed)
        // The model revoked: refused as revoked.
        let revoked = try service(status: "REVOKED")
        let revokedError = #expect(throws: UAFError.self) {
            _ = try register(surrogate, verifier: UAFRegistrationVerifier(context: context, metadata: { revoked.blob?.entry(forAAID: $0) }))
        }
        #expect(revokedError?.code == .authenticatorRevoked)
    }

    @Test func surrogateWithoutMetadataFollowsThePolicy() throws {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        let strict = UAFRegistrationVerifier(context: context, allowsSurrogateWithoutMetadata: false)
        let error = #expect(throws: UAFError.self) { _ = try register(authenticator, verifier: strict) }
        #expect(error?.code == .surrogateNotAllowed)
    }

    @Test func keysMustFitTheirDeclaredEncodingAndAlgorithm() throws {
        let point = Array(try PrivateKey.generateP256().publicKey().subjectPublicKeyInfo.suffix(65))
        func code(_ bytes: [UInt8], _ encoding: UAFKeyEncoding, _ algorithm: UAFSignatureAlgorithm) -> UAFError.Code? {
            do {
                _ = try UAFPublicKey(bytes: bytes, encoding: encoding, algorithm: algorithm)
                return nil
            } catch { return error.code }
        }
        #expect(code(point, .eccX962Raw, .secp256r1ECDSASHA256Raw) == nil)
        #expect(code(Array(point.dropLast()), .eccX962Raw, .secp256r1ECDSASHA256Raw) == .malformedPublicKey)
        #expect(code([0x02] + point.dropFirst(), .eccX962Raw, .secp256r1ECDSASHA256Raw) == .malformedPublicKey)  // not uncompressed
        #expect(code(point, .eccX962Raw, .rsassaPSSSHA256Raw) == .unsupportedAlgorithm)
        #expect(code(point, .eccX962Raw, .sm2SM3Raw) == .unsupportedAlgorithm)
        // A P-256 point declared secp256k1, and a secp256k1 point declared P-256: not on the curve.
        #expect(code(point, .eccX962Raw, .secp256k1ECDSASHA256Raw) == .malformedPublicKey)
        let k1 = Array(try PrivateKey.generateEC(.secp256k1).publicKey().subjectPublicKeyInfo.suffix(65))
        #expect(code(k1, .eccX962Raw, .secp256k1ECDSASHA256Raw) == nil && code(k1, .eccX962Raw, .secp256k1ECDSASHA256DER) == nil)
        #expect(code(k1, .eccX962Raw, .secp256r1ECDSASHA256Raw) == .malformedPublicKey)
        #expect(code(k1, .cose, .secp256k1ECDSASHA256Raw) == .malformedPublicKey)
        #expect(code(point, .eccX962Raw, .rsassaPKCSv15SHA1Raw) == .unsupportedAlgorithm)
        #expect(code(point, .eccX962Raw, .secp384r1ECDSASHA384Raw) == .malformedPublicKey)  // a P-256 point is not a P-384 key
        #expect(code(point, UAFKeyEncoding(rawValue: 0x0199), .secp256r1ECDSASHA256Raw) == .unsupportedAlgorithm)
        #expect(code([UInt8](repeating: 1, count: 259), .rsa2048Raw, .rsassaPSSSHA256Raw) == .malformedPublicKey)
        // An Ed25519 COSE key declared for ECDSA.
        let ed = SoftUAFAuthenticator(algorithm: .ed25519EdDSASHA512Raw, keyEncoding: .cose, rsaKeyPEM: UAFTestKeys.ed25519PEM)
        let assertion = try UAFRegistrationAssertion(bytes: ed.registrationAssertion(fcParams: "x"))
        #expect(code(assertion.publicKey, .cose, .ed25519EdDSASHA512Raw) == nil)
        #expect(code(assertion.publicKey, .cose, .secp256r1ECDSASHA256Raw) == .unsupportedAlgorithm)
    }

    // MARK: - Header and FinalChallengeParams

    private func registrationError(_ authenticator: SoftUAFAuthenticator, appID: String? = nil, mutate: ((inout UAFResponse) -> Void)? = nil) throws -> UAFError.Code? {
        let text = try authenticator.register(registrationRequest(), appID: appID, mutate: mutate)
        do {
            _ = try UAFRegistrationVerifier(context: context).verify(UAFMessageDecoding.response(text), expectedChallenge: "chal-1", serverData: "sd-1")
            return nil
        } catch { return error.code }
    }

    @Test func refusesWhatTheHeaderGetsWrong() throws {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        #expect(try registrationError(authenticator) == nil)
        #expect(try registrationError(authenticator) { $0.header.upv = .v1_0 } == .unsupportedVersion)
        #expect(try registrationError(authenticator) { $0.header.op = "Auth" } == .operationMismatch)
        #expect(try registrationError(authenticator) { $0.header.appID = "https://evil.test/facets" } == .appIDMismatch)
        #expect(try registrationError(authenticator) { $0.header.serverData = "sd-other" } == .challengeMismatch)
        #expect(try registrationError(authenticator) { $0.header.exts = [UAFMessageExtension(id: "x", data: "", failIfUnknown: true)] } == .unknownCriticalExtension)
        #expect(try registrationError(authenticator) { $0.assertions[0].assertionScheme = "UAFV1TLV2" } == .unsupportedAssertionScheme)
        #expect(try registrationError(authenticator) { $0.fcParams = "!!" } == .malformedFinalChallengeParams)
    }

    @Test func refusesWhatFinalChallengeParamsGetWrong() throws {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        // The client signed for another AppID.
        #expect(try registrationError(authenticator, appID: "https://evil.test/facets") == .appIDMismatch)
        // A facet outside the TrustedFacets.
        authenticator.facetID = "https://evil.test"
        #expect(try registrationError(authenticator) == .facetNotTrusted)
        // A challenge other than the one issued.
        authenticator.facetID = Self.facet
        let text = try authenticator.register(registrationRequest(challenge: "chal-other"))
        let error = #expect(throws: UAFError.self) {
            _ = try UAFRegistrationVerifier(context: context).verify(UAFMessageDecoding.response(text), expectedChallenge: "chal-1")
        }
        #expect(error?.code == .challengeMismatch)
        // fcParams changed after the authenticator hashed it.
        let replaced = try authenticator.fcParams(appID: Self.appID, challenge: "chal-1") + "A"
        #expect(try registrationError(authenticator) { $0.fcParams = replaced } != nil)
    }

    @Test func refusesATamperedKRD() throws {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        let fc = try authenticator.fcParams(appID: Self.appID, challenge: "chal-1")
        var bytes = try authenticator.registrationAssertion(fcParams: fc)
        // Flip a bit inside the public key? That breaks the key; flip the regCounter instead.
        let krd = try UAFRegistrationAssertion(bytes: bytes)
        let countersAt = try #require(findSubsequence(bytes, [0x0D, 0x2E, 0x08, 0x00]))
        bytes[countersAt + 4 + 4] ^= 0x40
        #expect(krd.regCounter == 1)
        let response = UAFResponse(
            header: UAFOperationHeader(upv: .v1_2, op: "Reg", appID: Self.appID, serverData: nil), fcParams: fc,
            assertions: [UAFAssertionMessage(assertion: Base64URL.encode(bytes))])
        let error = #expect(throws: UAFError.self) { _ = try UAFRegistrationVerifier(context: context).verify(response, expectedChallenge: "chal-1") }
        #expect(error?.code == .attestationSignatureInvalid)
    }

    @Test func refusesACriticalExtensionInTheKRD() throws {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        let fc = try authenticator.fcParams(appID: Self.appID, challenge: "chal-1")
        let bytes = try authenticator.registrationAssertion(fcParams: fc, extensions: [UAFExtension(id: "x-unknown", data: [1], critical: true)])
        let response = UAFResponse(
            header: UAFOperationHeader(upv: .v1_2, op: "Reg", appID: Self.appID, serverData: nil), fcParams: fc,
            assertions: [UAFAssertionMessage(assertion: Base64URL.encode(bytes))])
        let error = #expect(throws: UAFError.self) { _ = try UAFRegistrationVerifier(context: context).verify(response, expectedChallenge: "chal-1") }
        #expect(error?.code == .unknownCriticalExtension)
        // The same extension, non-critical, is accepted.
        let optional = try authenticator.registrationAssertion(fcParams: fc, extensions: [UAFExtension(id: "x-unknown", data: [1], critical: false)])
        let accepted = UAFResponse(header: response.header, fcParams: fc, assertions: [UAFAssertionMessage(assertion: Base64URL.encode(optional))])
        #expect(try UAFRegistrationVerifier(context: context).verify(accepted, expectedChallenge: "chal-1").count == 1)
    }

    // MARK: - Authentication rules

    @Test func countersMustIncrease() throws {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        var stored = record(try register(authenticator))
        let first = try authenticate(authenticator, record: stored)
        stored = UAFRegistrationRecord(
            aaid: stored.aaid, keyID: stored.keyID, publicKey: stored.publicKey, keyEncoding: stored.keyEncoding,
            signatureAlgorithm: stored.signatureAlgorithm, signCounter: first.newSignCounter, attestationType: stored.attestationType)
        #expect(try authenticate(authenticator, record: stored).newSignCounter == 2)
        authenticator.rewindCounter(to: 0)  // the next assertion carries 1 again: a clone
        let error = #expect(throws: UAFError.self) { _ = try authenticate(authenticator, record: stored) }
        #expect(error?.code == .signCounterNotIncreased)
    }

    /// For every algorithm (P-384, P-521 and secp256k1 included): the authenticator's own
    /// signature verifies, and the same signature with one bit changed, in its last byte or a
    /// quarter of the way in (inside r, R or the RSA value, past any DER header), is refused
    /// with `signatureInvalid`; a registration whose KRD signature (surrogate: the new key's)
    /// has one bit changed, with `attestationSignatureInvalid`.
    @Test(arguments: signingAlgorithms)
    func aTamperedSignatureIsRefused(algorithm: UAFSignatureAlgorithm, encoding: UAFKeyEncoding) throws {
        let authenticator = Self.authenticator(algorithm, encoding)
        let stored = record(try register(authenticator))
        #expect(stored.signatureAlgorithm == algorithm)
        #expect(try authenticate(authenticator, record: stored).newSignCounter == 1)
        for last in [true, false] {
            let refused = #expect(throws: UAFError.self) {
                _ = try authenticate(authenticator, record: stored) { response in
                    response.assertions[0].assertion = Self.flippingASignatureBit(response.assertions[0].assertion, last: last)
                }
            }
            #expect(refused?.code == .signatureInvalid, "\(algorithm) \(last ? "last byte" : "a quarter in"): \(String(describing: refused))")
        }
        let krd = #expect(throws: UAFError.self) {
            let text = try Self.authenticator(algorithm, encoding).register(registrationRequest()) { response in
                response.assertions[0].assertion = Self.flippingASignatureBit(response.assertions[0].assertion, last: true)
            }
            _ = try UAFRegistrationVerifier(context: context).verify(
                UAFMessageDecoding.response(text), expectedChallenge: "chal-1", serverData: "sd-1", at: MetadataTestPKI.verificationTime)
        }
        #expect(krd?.code == .attestationSignatureInvalid, "\(algorithm) registration: \(String(describing: krd))")
    }

    /// `assertion` (base64url of a UAF assertion, whose last TLV is TAG_SIGNATURE) with one bit
    /// of its signature changed: in the last byte, or a quarter of the way into the signature.
    static func flippingASignatureBit(_ assertion: String, last: Bool) -> String {
        var bytes = Base64URL.decode(assertion)!
        let n = bytes.count
        // TAG_SIGNATURE (0x2E06, little-endian) and its 2-byte length, then the signature to the end.
        let tag = (0..<(n - 4)).last { i in
            bytes[i] == 0x06 && bytes[i + 1] == 0x2E && Int(bytes[i + 2]) | Int(bytes[i + 3]) << 8 == n - i - 4
        }!
        let length = n - tag - 4
        bytes[last ? n - 1 : tag + 4 + length / 4] ^= 0x01
        return Base64URL.encode(bytes)
    }

    @Test func anAuthenticatorWithoutCountersKeepsZero() throws {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        authenticator.keepsCounters = false
        let stored = record(try register(authenticator))
        #expect(try authenticate(authenticator, record: stored).newSignCounter == 0)
        #expect(try authenticate(authenticator, record: stored).newSignCounter == 0)
    }

    @Test func refusesAnotherKeyOrATamperedSignature() throws {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        let stored = record(try register(authenticator))
        let unknown = #expect(throws: UAFError.self) {
            let other = SoftUAFAuthenticator(facetID: Self.facet)
            _ = try register(other)
            _ = try authenticate(other, record: stored)
        }
        #expect(unknown?.code == .unknownKeyID)
        let tampered = #expect(throws: UAFError.self) {
            _ = try authenticate(authenticator, record: stored) { response in
                var bytes = Base64URL.decode(response.assertions[0].assertion)!
                bytes[bytes.count - 1] ^= 1
                response.assertions[0].assertion = Base64URL.encode(bytes)
            }
        }
        #expect(tampered?.code == .signatureInvalid)
    }

    @Test func transactionConfirmation() throws {
        let authenticator = SoftUAFAuthenticator(facetID: Self.facet)
        let stored = record(try register(authenticator))
        let text = Array("Pay 10.00 EUR to ACME".utf8)
        let transaction = UAFTransaction(contentType: "text/plain", content: Base64URL.encode(text))
        let confirmed = try authenticate(authenticator, record: stored, transaction: transaction)
        #expect(confirmed.confirmedTransaction)
        // The user saw something else.
        let other = #expect(throws: UAFError.self) {
            _ = try authenticate(authenticator, record: stored, transaction: transaction, shownContent: Array("Pay 99".utf8))
        }
        #expect(other?.code == .transactionContentHashMismatch)
        // Mode 0x01 (no transaction shown) for a transaction.
        let mode = #expect(throws: UAFError.self) { _ = try authenticate(authenticator, record: stored, transaction: transaction, mode: 0x01) }
        #expect(mode?.code == .authenticationModeMismatch)
        // Mode 0x02 without a transaction.
        let noTransaction = #expect(throws: UAFError.self) { _ = try authenticate(authenticator, record: stored, mode: 0x02) }
        #expect(noTransaction?.code == .authenticationModeMismatch)
    }

    // MARK: - Policy

    @Test func policyRefusalsNameTheRule() throws {
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: Self.facet)
        let onlyOthers = UAFPolicy(accepted: [[UAFMatchCriteria(aaid: ["ABCD#0002"])]])
        let notAccepted = #expect(throws: UAFError.self) {
            _ = try register(authenticator, verifier: UAFRegistrationVerifier(context: context, policy: onlyOthers))
        }
        #expect(notAccepted?.code == .policyNotAccepted)
        let disallowVendor = UAFPolicy(accepted: UAFPolicy.acceptAll.accepted, disallowed: [UAFMatchCriteria(vendorID: ["abcd"])])
        let disallowed = #expect(throws: UAFError.self) {
            _ = try register(authenticator, verifier: UAFRegistrationVerifier(context: context, policy: disallowVendor))
        }
        #expect(disallowed?.code == .policyDisallowed)
        // Algorithms and attestation types are matched by their registry numbers.
        let surrogateOnly = UAFPolicy(accepted: [[UAFMatchCriteria(authenticationAlgorithms: [1], attestationTypes: [0x3E08])]])
        let stored = record(try register(authenticator, verifier: UAFRegistrationVerifier(context: context, policy: surrogateOnly)))
        let fullOnly = UAFPolicy(accepted: [[UAFMatchCriteria(attestationTypes: [0x3E07])]])
        let error = #expect(throws: UAFError.self) { _ = try authenticate(authenticator, record: stored, policy: fullOnly) }
        #expect(error?.code == .policyNotAccepted)
        // Criteria needing metadata do not match without it.
        #expect(!UAFMatchCriteria(userVerification: 2).matches(
            UAFAuthenticatorDescription(aaid: "ABCD#0001", keyID: nil, signatureAlgorithm: .secp256r1ECDSASHA256Raw,
                attestationType: .attestationBasicSurrogate, authenticatorVersion: 1, statement: nil)))
    }

    // MARK: - Policy on metadata at sign-in

    /// A UAF model's metadata: basic surrogate attestation, the given user verification and
    /// key protection.
    static func metadata(aaid: String, userVerification: [[String]], keyProtection: [String]) -> MetadataEntry {
        MetadataEntry(
            aaid: aaid,
            metadataStatement: MetadataStatement(
                description: "UAF model \(aaid)", aaid: aaid, protocolFamily: "uaf", attestationTypes: ["basic_surrogate"],
                userVerificationDetails: userVerification, keyProtection: keyProtection, authenticationAlgorithms: ["secp256r1_ecdsa_sha256_raw"]),
            statusReports: [], timeOfLastStatusChange: MetadataTestPKI.verificationTime)
    }

    /// Three models: a fingerprint sensor with a hardware key, a passcode with a software key,
    /// and one the metadata does not know.
    static let models: [String: MetadataEntry] = [
        "ABCD#0F01": metadata(aaid: "ABCD#0F01", userVerification: [["fingerprint_internal"]], keyProtection: ["hardware", "tee"]),
        "ABCD#0F02": metadata(aaid: "ABCD#0F02", userVerification: [["passcode_internal"], ["presence_internal"]], keyProtection: ["software"]),
    ]

    /// `authenticator` registered (under `acceptAll`) with the metadata of ``models``.
    func registeredWithMetadata(_ authenticator: SoftUAFAuthenticator) throws -> UAFRegistrationRecord {
        record(try register(authenticator, verifier: UAFRegistrationVerifier(context: context, metadata: { Self.models[$0] })))
    }

    /// UAF Protocol §3.5.7.5 step 4.a at sign-in, on `userVerification`: the policy is matched on
    /// the metadata the key registered with. Before, sign-in matched without metadata, so a
    /// tenant accepting only fingerprint authenticators refused every UAF sign-in.
    @Test func signInMatchesUserVerificationOnTheRegisteredMetadata() throws {
        let fingerprintOnly = UAFPolicy(accepted: [[UAFMatchCriteria(userVerification: 0x02)]])
        let fingerprint = SoftUAFAuthenticator(aaid: "ABCD#0F01", facetID: Self.facet)
        let fingerprintRecord = try registeredWithMetadata(fingerprint)
        #expect(fingerprintRecord.userVerificationDetails == [["fingerprint_internal"]] && fingerprintRecord.keyProtection == ["hardware", "tee"])
        let signedIn = try authenticate(fingerprint, record: fingerprintRecord, policy: fingerprintOnly)
        #expect(signedIn.newSignCounter == 1)

        let passcode = SoftUAFAuthenticator(aaid: "ABCD#0F02", facetID: Self.facet)
        let passcodeRecord = try registeredWithMetadata(passcode)
        let refused = #expect(throws: UAFError.self) { _ = try authenticate(passcode, record: passcodeRecord, policy: fingerprintOnly) }
        #expect(refused?.code == .policyNotAccepted && refused?.rule == "Protocol §3.5.7.5 step 4.a", "\(String(describing: refused))")
        // USER_VERIFY_ALL: passcode and presence are alternatives, not one combination.
        let passcodeAndPresence = UAFPolicy(accepted: [[UAFMatchCriteria(userVerification: 0x400 | 0x04 | 0x01)]])
        let notAll = #expect(throws: UAFError.self) { _ = try authenticate(passcode, record: passcodeRecord, policy: passcodeAndPresence) }
        #expect(notAll?.code == .policyNotAccepted)
        _ = try authenticate(passcode, record: passcodeRecord, policy: UAFPolicy(accepted: [[UAFMatchCriteria(userVerification: 0x400 | 0x04)]]))
    }

    /// UAF Protocol §3.5.7.5 step 4.a at sign-in, on `keyProtection`: a tenant that disallows
    /// software keys after some were registered refuses them at sign-in. Before, sign-in matched
    /// without metadata, so a `disallowed` criterion on key protection never refused anything.
    @Test func aDisallowedKeyProtectionRefusesARegisteredKeyAtSignIn() throws {
        let noSoftware = UAFPolicy(accepted: UAFPolicy.acceptAll.accepted, disallowed: [UAFMatchCriteria(keyProtection: 0x01)])
        let software = SoftUAFAuthenticator(aaid: "ABCD#0F02", facetID: Self.facet)
        let softwareRecord = try registeredWithMetadata(software)
        _ = try authenticate(software, record: softwareRecord, policy: .acceptAll)
        let refused = #expect(throws: UAFError.self) { _ = try authenticate(software, record: softwareRecord, policy: noSoftware) }
        #expect(refused?.code == .policyDisallowed && refused?.rule == "Protocol §3.5.7.5 step 4.a", "\(String(describing: refused))")
        // A hardware key signs in under the same policy.
        let hardware = SoftUAFAuthenticator(aaid: "ABCD#0F01", facetID: Self.facet)
        _ = try authenticate(hardware, record: try registeredWithMetadata(hardware), policy: noSoftware)
    }

    /// A key registered without metadata (or stored before Signet kept it): criteria on
    /// metadata do not match it, as before: an `accepted` one does not accept it, a
    /// `disallowed` one does not refuse it.
    @Test func aKeyWithoutMetadataIsMatchedAsBefore() throws {
        let unknown = SoftUAFAuthenticator(aaid: "ABCD#0F03", facetID: Self.facet)
        let unknownRecord = try registeredWithMetadata(unknown)
        #expect(unknownRecord.userVerificationDetails == nil && unknownRecord.keyProtection == nil)
        let fingerprintOnly = UAFPolicy(accepted: [[UAFMatchCriteria(userVerification: 0x02)]])
        let refused = #expect(throws: UAFError.self) { _ = try authenticate(unknown, record: unknownRecord, policy: fingerprintOnly) }
        #expect(refused?.code == .policyNotAccepted)
        let noSoftware = UAFPolicy(accepted: UAFPolicy.acceptAll.accepted, disallowed: [UAFMatchCriteria(keyProtection: 0x01)])
        _ = try authenticate(unknown, record: unknownRecord, policy: noSoftware)
    }

    /// Every metadata name an event keeps (``UAFValidation``) is one the policy matches on, and
    /// what an event drops (unknown names, repeats) changes no match.
    @Test func theNamesEventsKeepAreTheNamesPoliciesMatch() {
        func described(_ details: [[String]]?, _ keyProtection: [String]?) -> UAFAuthenticatorDescription {
            UAFAuthenticatorDescription(
                aaid: "ABCD#0F01", keyID: nil, signatureAlgorithm: .secp256r1ECDSASHA256Raw, attestationType: .attestationBasicSurrogate,
                authenticatorVersion: 1, userVerificationDetails: details, keyProtection: keyProtection)
        }
        let bits = (0..<13).map { UInt32(1) << $0 }
        for name in UAFValidation.userVerificationMethods {
            #expect(bits.contains { UAFMatchCriteria(userVerification: $0).matches(described([[name]], nil)) }, "\(name)")
        }
        #expect(!bits.filter { $0 != 0x400 }.contains { UAFMatchCriteria(userVerification: $0).matches(described([["iris_internal"]], nil)) })
        for name in UAFValidation.keyProtectionTypes {
            #expect((0..<5).contains { UAFMatchCriteria(keyProtection: UInt16(1) << $0).matches(described(nil, [name])) }, "\(name)")
        }
        let raw = [["fingerprint_internal", "iris_internal", "fingerprint_internal"], ["passcode_internal"], ["passcode_internal"], ["iris_internal"]]
        let kept = UAFValidation.eventUserVerificationDetails(raw)
        // The empty alternative (iris only) is held by every other: dropped.
        #expect(kept == [["fingerprint_internal"], ["passcode_internal"]])
        let held = [["passcode_internal"], ["fingerprint_internal", "passcode_internal"], ["faceprint_internal"], []]
        #expect(UAFValidation.eventUserVerificationDetails(held) == [["fingerprint_internal", "passcode_internal"], ["faceprint_internal"]])
        #expect(UAFValidation.eventUserVerificationDetails([[]]) == [[]] && UAFValidation.eventUserVerificationDetails([]) == [])
        let names = UAFValidation.userVerificationMethods.sorted()
        // Every set of names up to four (1,093 alternatives, nested in one another): what is
        // kept matches as the whole does, for every USER_VERIFY bit alone and with ALL.
        var all: [[String]] = [[]]
        for name in names { all += all.filter { $0.count < 4 }.map { $0 + [name] } }
        let compact = UAFValidation.eventUserVerificationDetails(all)
        #expect(compact.count == 715 && compact.allSatisfy { $0.count == 4 })
        for wanted in bits + bits.map({ $0 | 0x400 }) + [0x400 | 0x06, 0x400 | 0x0E, 0x400 | 0x1E, 0x400 | 0x3E] {
            #expect(UAFMatchCriteria(userVerification: wanted).matches(described(all, nil)) == UAFMatchCriteria(userVerification: wanted).matches(described(compact, nil)), "\(wanted)")
        }
        // Repeated alternatives count once; the largest set of alternatives none of which holds
        // another (every six names of the 13: C(13, 6) = 1,716) is carried whole, and passes
        // the event's own check.
        #expect(UAFValidation.eventUserVerificationDetails(Array(repeating: ["none"], count: 100)) == [["none"]])
        let sixes = Self.subsets(of: names, size: 6)
        #expect(sixes.count == UAFValidation.maximumUserVerificationAlternatives)
        #expect(UAFValidation.eventUserVerificationDetails(sixes) == sixes && UAFValidation.isUserVerificationDetails(sixes))
        #expect(UAFValidation.eventKeyProtection(["software", "magnetic", "software", "tee"]) == ["software", "tee"])
    }

    static func subsets(of names: [String], size: Int) -> [[String]] {
        guard size > 0 else { return [[]] }
        guard names.count >= size else { return [] }
        let rest = Array(names.dropFirst())
        return subsets(of: rest, size: size - 1).map { [names[0]] + $0 } + subsets(of: rest, size: size)
    }

    // MARK: - Messages

    @Test func responseMessagesAreBoundedAndStrict() {
        #expect((try? UAFMessageDecoding.response("[]")) == nil)
        #expect((try? UAFMessageDecoding.response("{}")) == nil)
        let big = "[" + String(repeating: " ", count: UAFMessageDecoding.maximumResponseBytes) + "]"
        let error = #expect(throws: UAFError.self) { _ = try UAFMessageDecoding.response(big) }
        #expect(error?.code == .malformedMessage)
        // Duplicate member names are refused by the strict parser.
        let duplicate = #"[{"header":{"upv":{"major":1,"minor":2},"op":"Reg","op":"Auth"},"fcParams":"e30","assertions":[]}]"#
        #expect((try? UAFMessageDecoding.response(duplicate)) == nil)
    }

    @Test func fcParamsToleratesPaddingOnly() throws {
        let params = UAFFinalChallengeParams(appID: "a", challenge: "c", facetID: "f")
        let encoded = Base64URL.encode(try JSONValueEncoder().encodeToBytes(params))
        #expect(try UAFMessageDecoding.finalChallengeParams(encoded) == params)
        #expect(try UAFMessageDecoding.finalChallengeParams(encoded + String(repeating: "=", count: (4 - encoded.count % 4) % 4)) == params)
        #expect((try? UAFMessageDecoding.finalChallengeParams(encoded + "===")) == nil)
    }
}

private func findSubsequence(_ bytes: [UInt8], _ pattern: [UInt8]) -> Int? {
    guard bytes.count >= pattern.count else { return nil }
    return (0...(bytes.count - pattern.count)).first { Array(bytes[$0..<($0 + pattern.count)]) == pattern }
}

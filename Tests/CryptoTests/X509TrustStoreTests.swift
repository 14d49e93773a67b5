import Foundation
import Testing
@testable import Crypto

// MARK: - Real chains from ../shared/vectors

@Suite(X509TestVectors.trait)
struct X509TrustStoreVectorTests {
    typealias V = X509TestVectors

    private func x5c(_ vector: V.Registration) throws -> [X509Certificate] {
        try vector.x5c.map { try X509Certificate(derEncoded: $0) }
    }

    // Apple anonymous attestation from an iPhone: leaf (valid 2021-08-31 … 2021-09-03) →
    // Apple WebAuthn CA 1 → Apple WebAuthn Root CA.
    @Test func appleChainVerifiesAtItsPinnedTime() throws {
        let vector = try V.registration(named: "test_verify_attestation_apple_passkey")
        let time = try #require(vector.verificationTime)
        #expect(time == V.utc(2021, 9, 1))
        let chain = try x5c(vector)
        let root = try V.anchor("Apple_WebAuthn_Root_CA")
        let store = try X509TrustStore(anchors: [root])

        let validated = try store.verify(x5c: chain, at: time)
        #expect(validated.certificates == chain + [root])
        #expect(validated.leaf == chain[0])
        #expect(validated.anchor == root)

        #expect(throws: CryptoError.x509Verification(.certificateHasExpired, depth: 0)) {
            try store.verify(x5c: chain, at: V.utc(2021, 9, 10))
        }
        #expect(throws: CryptoError.x509Verification(.certificateNotYetValid, depth: 0)) {
            try store.verify(x5c: chain, at: V.utc(2021, 8, 1))
        }
        // Without the intermediate the leaf's issuer cannot be found.
        #expect(throws: CryptoError.x509Verification(.unableToGetLocalIssuerCertificate, depth: 0)) {
            try store.verify(chain[0], at: time)
        }
    }

    @Test func wrongRootIsRefused() throws {
        let vector = try V.registration(named: "test_verify_attestation_apple_passkey")
        let wrong = try X509TrustStore(anchors: [V.anchor("GlobalSign_Root_CA"), V.anchor("Google_Hardware_Attestation_Root_2")])
        #expect(throws: CryptoError.x509Verification(.unableToGetLocalIssuerCertificate, depth: 1)) {
            try wrong.verify(x5c: try x5c(vector), at: V.utc(2021, 9, 1))
        }
        // The py_webauthn case "root cert invalid for response": a Yubico chain against GlobalSign.
        let yubico = try V.registration(named: "test_raises_when_root_cert_invalid_for_response")
        #expect(!yubico.valid)
        let globalSign = try X509TrustStore(anchors: [V.anchor("GlobalSign_Root_CA_R3")])
        #expect(throws: CryptoError.x509Verification(.unableToGetLocalIssuerCertificate, depth: 0)) {
            try globalSign.verify(x5c: try x5c(yubico), at: V.utc(2024, 1, 1))
        }
        #expect(
            CryptoError.x509Verification(.unableToGetLocalIssuerCertificate, depth: 0).description
                == "X.509: chain rejected at depth 0: unable to get local issuer certificate")
    }

    @Test func tamperedSignatureByteIsRefused() throws {
        let vector = try V.registration(named: "test_verify_attestation_apple_passkey")
        var chain = try x5c(vector)
        // The last byte of a certificate is the last byte of its signature value.
        var der = chain[0].derEncoded
        der[der.count - 1] ^= 0x01
        chain[0] = try X509Certificate(derEncoded: der)
        let store = try X509TrustStore(anchors: [V.anchor("Apple_WebAuthn_Root_CA")])
        #expect(throws: CryptoError.x509Verification(.certificateSignatureFailure, depth: 0)) {
            try store.verify(x5c: chain, at: V.utc(2021, 9, 1))
        }
        #expect(!X509Certificate.verifySignature(of: chain[0], by: chain[1]))
        #expect(X509Certificate.verifySignature(of: try x5c(vector)[0], by: chain[1]))
    }

    // Android Key Attestation: Pixel 8a chain to Google root 2 (the root also rides in x5c),
    // Galaxy S9+ chain to Google root 1, which expired on 2026-05-24.
    @Test func androidKeyChainsVerifyToGoogleRoots() throws {
        let google = try X509TrustStore(anchors: (1...4).map { try V.anchor("Google_Hardware_Attestation_Root_\($0)") })

        let pixel = try V.registration(named: "should verify Android Keystore response from a Pixel 8a in January 2025")
        let pixelChain = try google.verify(x5c: try x5c(pixel), at: try #require(pixel.verificationTime))
        #expect(pixelChain.certificates.count == 5)
        #expect(google.anchors.contains(pixelChain.anchor))
        #expect(pixelChain.anchor.subject.values(forOID: X509OID.serialNumber) == ["f92009e853b6b045"])

        let samsung = try V.registration(named: "should verify Android Keystore response from a Samsung Galaxy S9+ running Android 10")
        let samsungChain = try google.verify(x5c: try x5c(samsung), at: try #require(samsung.verificationTime))
        #expect(samsungChain.certificates.count == 4)
        // Google's roots share one key and subject, so after root 1 expired (2026-05-24) OpenSSL
        // completes the same chain with a sibling root that is still valid.
        let later = try google.verify(x5c: try x5c(samsung), at: V.utc(2026, 6, 1))
        #expect(later.anchor != (try V.anchor("Google_Hardware_Attestation_Root_1")))
        // With root 1 alone, the expiry is reported at the anchor's depth.
        let rootOne = try X509TrustStore(anchors: [V.anchor("Google_Hardware_Attestation_Root_1")])
        _ = try rootOne.verify(x5c: try x5c(samsung), at: try #require(samsung.verificationTime))
        #expect(throws: CryptoError.x509Verification(.certificateHasExpired, depth: 3)) {
            try rootOne.verify(x5c: try x5c(samsung), at: V.utc(2026, 6, 1))
        }
    }

    // Microsoft TPM chains: the vectors have no Microsoft root, so the intermediate is the anchor,
    // which only a partial chain accepts.
    @Test func intermediateAsAnchorNeedsPartialChain() throws {
        let vector = try V.registration(named: "test_verify_attestation_surface_pro_4")
        let chain = try x5c(vector)
        let store = try X509TrustStore(anchors: [chain[1]])
        let time = V.utc(2024, 1, 1)
        #expect(throws: CryptoError.x509Verification(.unableToGetIssuerCertificate, depth: 1)) {
            try store.verify(x5c: chain, at: time)
        }
        let validated = try store.verify(chain[0], at: time, options: .init(allowPartialChain: true))
        #expect(validated.certificates == chain)
        // TPM attestation requires tcg-kp-AIKCertificate (WebAuthn §8.3.1); packed leaves lack it.
        _ = try store.verify(chain[0], at: time, options: .init(allowPartialChain: true, requiredLeafExtendedKeyUsage: X509OID.tcgKpAIKCertificate))
        #expect(throws: CryptoError.x509Verification(.invalidPurpose, depth: 0)) {
            try store.verify(chain[0], at: time, options: .init(allowPartialChain: true, requiredLeafExtendedKeyUsage: "1.3.6.1.5.5.7.3.1"))
        }
    }

    /// Every W3C §16 vector with an x5c chains to the W3C test CA.
    @Test(arguments: V.registrationsWithX5C.filter { $0.name.hasPrefix("w3c-webauthn-l3-sec16/") })
    func w3cVectorsChainToTheTestCA(_ vector: V.Registration) throws {
        let store = try X509TrustStore(anchors: [V.anchor("W3C WebAuthn L3 test vectors")])
        let chain = try store.verify(x5c: try x5c(vector), at: V.utc(2025, 1, 1))
        #expect(chain.certificates.count == 2)
        // The CA and the leaf share notBefore; OpenSSL checks from the anchor down.
        #expect(throws: CryptoError.x509Verification(.certificateNotYetValid, depth: 1)) {
            try store.verify(x5c: try x5c(vector), at: V.utc(2023, 12, 31))
        }
    }

    @Test(arguments: V.registrationsWithX5C.filter { $0.format == "android-safetynet" })
    func safetyNetChainsToGlobalSign(_ vector: V.Registration) throws {
        let store = try X509TrustStore(anchors: [V.anchor("GlobalSign_Root_CA"), V.anchor("GlobalSign_Root_CA_R3")])
        let chain = try x5c(vector)
        let time = try #require(vector.verificationTime)
        let validated = try store.verify(x5c: chain, at: time)
        #expect(validated.leaf.subject.commonName == "attest.android.com")
    }

    /// mds.json: attestation chains against the statement's attestationRootCertificates, with
    /// partial chains allowed as MDS allows. The revoked-certificate case still chains:
    /// revocation is the metadata status's job, not path validation's.
    @Test(arguments: V.mdsStatements)
    func metadataStatementChains(_ statement: V.MDSStatement) throws {
        let chain = try statement.x5c.map { try X509Certificate(derEncoded: $0) }
        let roots = try statement.roots.map { try X509Certificate(derEncoded: $0) }
        let store = try X509TrustStore(anchors: roots)
        let all = chain + roots
        // The pinned time, or one inside every certificate's validity.
        let time = try statement.verificationTime ?? #require(all.map(\.notBefore).max()).addingTimeInterval(86_400)
        #expect(all.allSatisfy { $0.isValid(at: time) })
        let validated = try store.verify(x5c: chain, at: time, options: .init(allowPartialChain: true))
        #expect(roots.contains(validated.anchor))
    }

    @Test func intermediateAnchorFromMetadata() throws {
        let statement = try #require(V.mdsStatements.first { $0.name.hasSuffix("should verify when trust anchor is an intermediate certificate") })
        let leaf = try X509Certificate(derEncoded: statement.x5c[0])
        let store = try X509TrustStore(anchors: statement.roots.map { try X509Certificate(derEncoded: $0) })
        let time = leaf.notBefore.addingTimeInterval(86_400)
        #expect(throws: CryptoError.x509Verification(.unableToGetIssuerCertificate, depth: 1)) { try store.verify(leaf, at: time) }
        #expect(try store.verify(leaf, at: time, options: .init(allowPartialChain: true)).certificates.count == 2)
    }

    /// The MDS3 BLOBs' x5c chains: FIDO conformance (FAKE root) and the spec example.
    @Test func metadataBLOBChains() throws {
        let time = V.utc(2024, 1, 1)
        let conformance = try V.blobX5C("mds3_blob_simplewebauthn_conformance.jwt")
        let fakeRoot = try V.mdsRoot("FIDO conformance MDS3 root")
        let validated = try X509TrustStore(anchors: [fakeRoot]).verify(x5c: conformance, at: time)
        #expect(validated.certificates == conformance + [fakeRoot])

        let example = try V.blobX5C("mds3_blob_go_webauthn_example.jwt")
        let exampleRoot = try V.mdsRoot("FIDO MDS3 spec example root")
        #expect(try X509TrustStore(anchors: [exampleRoot]).verify(x5c: example, at: time).anchor == exampleRoot)

        // Each BLOB chain against the other's root, and against the production root.
        let production = try X509TrustStore(anchors: [V.mdsRoot("GlobalSign Root CA - R3"), exampleRoot])
        #expect(throws: CryptoError.x509Verification(.unableToGetLocalIssuerCertificate, depth: 1)) {
            try production.verify(x5c: conformance, at: time)
        }
    }
}

// MARK: - Synthetic chains: every rejection path

@Suite struct X509TrustStoreTests {
    typealias Build = X509TestCertificates
    let time = X509TestVectors.utc(2025, 6, 1)

    @Test func rootIntermediateLeaf() throws {
        let root = try Build.root()
        let intermediate = try Build.issue("Intermediate", by: root, ca: true)
        let leaf = try Build.issue("Leaf", by: intermediate, ca: false)
        let store = try X509TrustStore(anchors: [try root.certificate, try root.certificate])
        #expect(store.anchors.count == 1)
        let chain = try store.verify(try leaf.certificate, intermediates: [try intermediate.certificate], at: time)
        #expect(chain.certificates.map(\.subject.commonName) == ["Leaf", "Intermediate", "Test Root"])
        // Extra or duplicated intermediates, and the root itself among them, do no harm.
        let other = try Build.root("Other")
        _ = try store.verify(
            try leaf.certificate, intermediates: [try other.certificate, try root.certificate, try intermediate.certificate, try intermediate.certificate], at: time)
        // Validity bounds. All three share their validity, and OpenSSL checks times from the
        // anchor (depth 2) down. It treats the notAfter second itself as expired.
        _ = try store.verify(try leaf.certificate, intermediates: [try intermediate.certificate], at: X509TestVectors.utc(2024, 1, 1))
        _ = try store.verify(try leaf.certificate, intermediates: [try intermediate.certificate], at: X509TestVectors.utc(2033, 12, 31, 23))
        #expect(throws: CryptoError.x509Verification(.certificateHasExpired, depth: 2)) {
            try store.verify(try leaf.certificate, intermediates: [try intermediate.certificate], at: X509TestVectors.utc(2034, 1, 1))
        }
        #expect(try leaf.certificate.isValid(at: X509TestVectors.utc(2034, 1, 1)))
        #expect(throws: CryptoError.x509Verification(.certificateNotYetValid, depth: 2)) {
            try store.verify(try leaf.certificate, intermediates: [try intermediate.certificate], at: X509TestVectors.utc(2023, 12, 31, 23))
        }
        #expect(throws: CryptoError.x509Verification(.certificateHasExpired, depth: 2)) {
            try store.verify(try leaf.certificate, intermediates: [try intermediate.certificate], at: X509TestVectors.utc(2034, 1, 1, 1))
        }
    }

    @Test func aLeafCannotActAsCA() throws {
        let root = try Build.root()
        let notCA = try Build.issue("Attestation leaf", by: root, ca: false, keyUsageBits: [0, 5])
        let forged = try Build.issue("Forged", by: notCA, ca: false)
        let store = try X509TrustStore(anchors: [try root.certificate])
        #expect(throws: CryptoError.x509Verification(.invalidCA, depth: 1)) {
            try store.verify(try forged.certificate, intermediates: [try notCA.certificate], at: time)
        }
    }

    @Test func pathLengthConstraintIsEnforced() throws {
        let root = try Build.root(pathLength: 0)
        let intermediate = try Build.issue("Intermediate", by: root, ca: true)
        let leaf = try Build.issue("Leaf", by: intermediate, ca: false)
        let store = try X509TrustStore(anchors: [try root.certificate])
        #expect(throws: CryptoError.x509Verification(.pathLengthExceeded, depth: 2)) {
            try store.verify(try leaf.certificate, intermediates: [try intermediate.certificate], at: time)
        }
        let open = try Build.root()
        let middle = try Build.issue("I", by: open, ca: true)
        let end = try Build.issue("Leaf", by: middle, ca: false)
        let openStore = try X509TrustStore(anchors: [try open.certificate])
        _ = try openStore.verify(try end.certificate, intermediates: [try middle.certificate], at: time, options: .init(maximumDepth: 1))
        #expect(throws: CryptoError.x509Verification(.certificateChainTooLong, depth: 1)) {
            try openStore.verify(try end.certificate, intermediates: [try middle.certificate], at: time, options: .init(maximumDepth: 0))
        }
    }

    /// OpenSSL 3.0 treats a CA whose keyUsage lacks keyCertSign as not a CA at all.
    @Test func issuerWithoutKeyCertSignIsRefused() throws {
        let root = try Build.root()
        let intermediate = try Build.issue("No certSign", by: root, ca: true, keyUsageBits: [0])
        let leaf = try Build.issue("Leaf", by: intermediate, ca: false)
        let store = try X509TrustStore(anchors: [try root.certificate])
        #expect(throws: CryptoError.x509Verification(.invalidCA, depth: 1)) {
            try store.verify(try leaf.certificate, intermediates: [try intermediate.certificate], at: time)
        }
    }

    @Test func unknownCriticalExtensionIsRefused() throws {
        let root = try Build.root()
        let leaf = try Build.issue("Leaf", by: root, ca: false, extra: [.init(oid: "1.2.3.4.5", critical: true, value: [0x05, 0x00])])
        let store = try X509TrustStore(anchors: [try root.certificate])
        #expect(try leaf.certificate.criticalExtensionOIDs == [X509OID.basicConstraints, X509OID.keyUsage, "1.2.3.4.5"])
        #expect(throws: CryptoError.x509Verification(.unhandledCriticalExtension, depth: 0)) {
            try store.verify(try leaf.certificate, at: time)
        }
        // The same extension, not critical, is fine.
        let relaxed = try Build.issue("Leaf", by: root, ca: false, extra: [.init(oid: "1.2.3.4.5", critical: false, value: [0x05, 0x00])])
        _ = try store.verify(try relaxed.certificate, at: time)
    }

    @Test func selfSignedLeaves() throws {
        let selfSigned = try Build.root("Self")
        let other = try X509TrustStore(anchors: [try Build.root().certificate])
        #expect(throws: CryptoError.x509Verification(.depthZeroSelfSignedCertificate, depth: 0)) {
            try other.verify(try selfSigned.certificate, at: time)
        }
        // A leaf that is itself an anchor validates as a one-certificate chain.
        let trusted = try X509TrustStore(anchors: [try selfSigned.certificate])
        #expect(try trusted.verify(try selfSigned.certificate, at: time).certificates == [try selfSigned.certificate])
    }

    @Test func tamperedSignature() throws {
        let root = try Build.root()
        let leaf = try Build.issue("Leaf", by: root, ca: false)
        var der = leaf.der
        der[der.count - 1] ^= 0x80
        let store = try X509TrustStore(anchors: [try root.certificate])
        #expect(throws: CryptoError.x509Verification(.certificateSignatureFailure, depth: 0)) {
            try store.verify(try X509Certificate(derEncoded: der), at: time)
        }
    }

    @Test func partialChainOnlyWhenAsked() throws {
        let root = try Build.root()
        let intermediate = try Build.issue("Intermediate", by: root, ca: true)
        let leaf = try Build.issue("Leaf", by: intermediate, ca: false)
        let store = try X509TrustStore(anchors: [try intermediate.certificate])
        #expect(throws: CryptoError.x509Verification(.unableToGetIssuerCertificate, depth: 1)) {
            try store.verify(try leaf.certificate, at: time)
        }
        let chain = try store.verify(try leaf.certificate, at: time, options: .init(allowPartialChain: true))
        #expect(chain.certificates == [try leaf.certificate, try intermediate.certificate])
    }

    @Test func extendedKeyUsageOnlyWhenAsked() throws {
        let root = try Build.root()
        let aik = try Build.issue(
            "AIK", by: root, ca: false,
            extra: [.init(oid: X509OID.extendedKeyUsage, critical: false, value: Build.extendedKeyUsage([X509OID.tcgKpAIKCertificate]))])
        let plain = try Build.issue("Plain", by: root, ca: false)
        let store = try X509TrustStore(anchors: [try root.certificate])
        let required = X509VerificationOptions(requiredLeafExtendedKeyUsage: X509OID.tcgKpAIKCertificate)
        _ = try store.verify(try aik.certificate, at: time, options: required)
        _ = try store.verify(try plain.certificate, at: time)
        #expect(throws: CryptoError.x509Verification(.invalidPurpose, depth: 0)) {
            try store.verify(try plain.certificate, at: time, options: required)
        }
    }

    @Test func boundsAndEmptyInputs() throws {
        #expect(throws: CryptoError("X.509: a trust store needs at least one anchor")) { try X509TrustStore(anchors: []) }
        let root = try Build.root()
        let store = try X509TrustStore(anchors: [try root.certificate])
        #expect(throws: CryptoError("X.509: empty certificate chain")) { try store.verify(x5c: [], at: time) }
        let many = try (0..<17).map { _ in try root.certificate }
        #expect(throws: CryptoError("X.509: more than 16 intermediate certificates")) {
            try store.verify(try root.certificate, intermediates: many, at: time)
        }
        #expect(throws: CryptoError("X.509: verification time out of range")) {
            try store.verify(try root.certificate, at: Date(timeIntervalSince1970: 1e300))
        }
        #expect(throws: CryptoError("X.509: maximumDepth out of range")) {
            try store.verify(try root.certificate, at: time, options: .init(maximumDepth: -1))
        }
    }

    @Test func reasonsReadLikeOpenSSL() {
        #expect(X509VerifyReason.certificateHasExpired.description == "certificate has expired")
        #expect(X509VerifyReason.invalidCA.description == "invalid CA certificate")
        #expect(
            CryptoError.x509Verification(.certificateSignatureFailure, depth: 2).description
                == "X.509: chain rejected at depth 2: certificate signature failure")
    }

    /// One store shared by many concurrent verifications.
    @Test func concurrentVerificationsShareOneStore() async throws {
        let root = try Build.root()
        let intermediate = try Build.issue("Intermediate", by: root, ca: true)
        let leaves = try (0..<8).map { try Build.issue("Leaf \($0)", by: intermediate, ca: false).certificate }
        let store = try X509TrustStore(anchors: [try root.certificate])
        let middle = try intermediate.certificate
        let time = self.time
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for round in 0..<64 {
                let leaf = leaves[round % leaves.count]
                group.addTask { try store.verify(leaf, intermediates: [middle], at: time).certificates.count }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results == [Int](repeating: 3, count: 64))
    }
}

import Crypto
@testable import FIDO
import Foundation
import Testing

/// The FIDO UAF messages and assertions of `../shared/vectors/uaf_messages.json` (the UAF 1.0
/// spec examples and eBay UAF's real-authenticator captures).
@Suite struct UAFVectorTests {
    static var available: Bool { VectorFiles.exists("uaf_messages.json") }
    static func entries(_ kind: String) -> [[String: Any]] {
        VectorFiles.entries("uaf_messages.json").filter { $0["kind"] as? String == kind }
    }
    static func name(_ entry: [String: Any]) -> String { entry["name"] as? String ?? "?" }
    static func decoded(_ entry: [String: Any]) -> [String: Any] { entry["decoded"] as? [String: Any] ?? [:] }

    @Test(.enabled(if: available || VectorFiles.isCI, VectorFiles.skipMessage))
    func vectorFileIsPresent() {
        #expect(Self.available, "uaf_messages.json missing at \(VectorFiles.directory.path)")
        #expect(VectorFiles.entries("uaf_messages.json").count == 19)
        #expect(Self.entries("uaf_reg_assertion").count == 7)
    }

    /// Every registration assertion parses strictly into the fields the file decoded, and its
    /// KRD signature verifies with the attestation certificate's key.
    @Test(.enabled(if: available, VectorFiles.skipMessage), arguments: entries("uaf_reg_assertion").map(name))
    func registrationAssertion(_ name: String) throws {
        let entry = try #require(Self.entries("uaf_reg_assertion").first { Self.name($0) == name })
        // Lenient: one entry keeps base64 padding, as its source does.
        let bytes = try #require(Lenient.bytes(entry["assertion_b64url"] as? String ?? ""))
        if name == "eBay-UAF/TestAssertions.getExampleRegAssertionsFromClient" {
            // eBay's client puts a TAG_AUTHENTICATOR_NONCE into the KRD, which Authenticator
            // Commands §6.2.3 does not define there: a strict server refuses the assertion.
            let error = #expect(throws: UAFError.self) { _ = try UAFRegistrationAssertion(bytes: bytes) }
            #expect(error?.code == .unknownTag)
            return
        }
        let assertion = try UAFRegistrationAssertion(bytes: bytes)
        let d = Self.decoded(entry)
        #expect(assertion.aaid == (d["aaid"] as? String)?.uppercased())
        #expect(Base64URL.encode(assertion.keyID) == d["keyID_b64url"] as? String)
        #expect(Base64URL.encode(assertion.finalChallengeHash) == d["finalChallengeHash_b64url"] as? String)
        #expect(Int(assertion.info.signatureAlgorithm.rawValue) == d["signatureAlgAndEncoding"] as? Int)
        #expect(assertion.info.publicKeyEncoding.map { Int($0.rawValue) } == d["publicKeyAlgAndEncoding"] as? Int)
        #expect(Int(assertion.signCounter) == d["signCounter"] as? Int)
        #expect(Int(assertion.regCounter) == d["regCounter"] as? Int)
        #expect(Base64URL.encode(assertion.publicKey) == d["publicKey_b64url"] as? String)
        // Samsung's two are secp256k1 (UAF_ALG_SIGN_SECP256K1_ECDSA_SHA256_DER): verified as the
        // others, through OpenSSL's secp256k1 (their attestation certificates' keys are secp256k1 too).
        // The new key parses in its declared encoding for its declared algorithm.
        _ = try UAFPublicKey(bytes: assertion.publicKey, encoding: #require(assertion.info.publicKeyEncoding), algorithm: assertion.info.signatureAlgorithm)
        let expected = entry["expected"] as? [String: Any] ?? [:]
        guard case .basicFull(let signature, let certificates) = assertion.attestation else {
            Issue.record("the vectors are all basic full")
            return
        }
        let certificate = try X509Certificate(derEncoded: certificates[0])
        let encoding: UAFKeyEncoding = assertion.info.signatureAlgorithm.curve != nil ? .eccX962DER : .rsa2048DER
        let attestationKey = try UAFPublicKey(bytes: certificate.subjectPublicKeyInfo, encoding: encoding, algorithm: assertion.info.signatureAlgorithm)
        #expect(attestationKey.verify(signature: signature, message: assertion.krd) == (expected["krd_signature_valid"] as? Bool))
        var tampered = assertion.krd
        tampered[tampered.count - 1] ^= 1
        #expect(!attestationKey.verify(signature: signature, message: tampered))
    }

    /// Authentication assertions parse; their signatures verify against the registration with
    /// the same KeyID exactly as the file says.
    @Test(.enabled(if: available, VectorFiles.skipMessage), arguments: entries("uaf_auth_assertion").map(name))
    func authenticationAssertion(_ name: String) throws {
        let entry = try #require(Self.entries("uaf_auth_assertion").first { Self.name($0) == name })
        let bytes = try #require(Lenient.bytes(entry["assertion_b64url"] as? String ?? ""))
        if name == "eBay-UAF/TestAssertions.getExampleAuthAssertionsFromClient" {
            // eBay's client puts 8 bytes (sign and registration counters) in the SignedData's
            // TAG_COUNTERS, where Authenticator Commands §6.3.3 has the 4-byte signCounter
            // alone; eBay's parser accepts it, a strict one does not (its signature does not
            // verify either).
            let error = #expect(throws: UAFError.self) { _ = try UAFAuthenticationAssertion(bytes: bytes) }
            #expect(error?.code == .malformedTLV)
            return
        }
        let assertion = try UAFAuthenticationAssertion(bytes: bytes)
        let d = Self.decoded(entry)
        #expect(assertion.aaid == (d["aaid"] as? String)?.uppercased())
        #expect(Base64URL.encode(assertion.keyID) == d["keyID_b64url"] as? String)
        #expect(Int(assertion.signCounter) == d["signCounter"] as? Int)
        #expect(assertion.transactionContentHash.count == d["transactionContentHash_len"] as? Int)
        guard let registered = entry["registered_public_key"] as? [String: Any],
            let checks = (entry["expected"] as? [String: Any])?["signature_checks_derived"] as? [[String: Any]],
            let valid = checks.first?["valid"] as? Bool
        else { return }  // Raon: no registration with this KeyID in the file.
        let keyBytes = try #require(Base64URL.decode(registered["publicKey_b64url"] as? String ?? ""))
        let encoding = UAFKeyEncoding(rawValue: UInt16(registered["publicKeyAlgAndEncoding"] as? Int ?? 0x101))
        let key = try UAFPublicKey(bytes: keyBytes, encoding: encoding, algorithm: assertion.info.signatureAlgorithm)
        #expect(key.verify(signature: assertion.signature, message: assertion.signedData) == valid)
    }

    private static func message(_ name: String) throws -> UAFResponse {
        let entry = try #require(VectorFiles.entries("uaf_messages.json").first { Self.name($0) == name })
        let data = try JSONSerialization.data(withJSONObject: [entry["message"]!])
        return try UAFMessageDecoding.response(String(decoding: data, as: UTF8.self))
    }

    /// eBay's AuthenticationResponseProcessingTest message passes every rule of §3.5.7.5 for
    /// the registered key, with the header's AppID and the facet it names (UAF 1.0).
    @Test(.enabled(if: available, VectorFiles.skipMessage))
    func authenticationResponseMessageVerifies() throws {
        let response = try Self.message("eBay-UAF/AuthenticationResponseProcessingTest.basic")
        let fc = try UAFMessageDecoding.finalChallengeParams(response.fcParams)
        let entry = try #require(VectorFiles.entries("uaf_messages.json").first { Self.name($0) == "eBay-UAF/AuthenticationResponseProcessingTest.basic" })
        let key = try #require(Base64URL.decode((entry["registered_public_key"] as? [String: Any])?["publicKey_b64url"] as? String ?? ""))
        let assertion = try UAFAuthenticationAssertion(bytes: #require(Base64URL.decode(response.assertions[0].assertion)))
        let record = UAFRegistrationRecord(
            aaid: assertion.aaid, keyID: assertion.keyID, publicKey: key, keyEncoding: .eccX962DER,
            signatureAlgorithm: assertion.info.signatureAlgorithm, signCounter: 0, attestationType: .attestationBasicFull)
        let verifier = UAFAuthenticationVerifier(
            context: UAFResponseContext(appID: try #require(response.header.appID), trustedFacetIDs: [fc.facetID], acceptedVersions: [.v1_0]))
        let results = try verifier.verify(response, expectedChallenge: fc.challenge) { aaid, keyID in
            aaid == record.aaid && keyID == record.keyID ? record : nil
        }
        #expect(results.count == 1)
        // The same message for another challenge, facet list or version is refused.
        #expect(throws: UAFError.self) { _ = try verifier.verify(response, expectedChallenge: "other") { _, _ in record } }
        let facets = UAFAuthenticationVerifier(context: UAFResponseContext(appID: response.header.appID!, trustedFacetIDs: ["x"], acceptedVersions: [.v1_0]))
        let facetError = #expect(throws: UAFError.self) { _ = try facets.verify(response, expectedChallenge: fc.challenge) { _, _ in record } }
        #expect(facetError?.code == .facetNotTrusted)
        let versions = UAFAuthenticationVerifier(context: UAFResponseContext(appID: response.header.appID!, trustedFacetIDs: [fc.facetID]))
        let versionError = #expect(throws: UAFError.self) { _ = try versions.verify(response, expectedChallenge: fc.challenge) { _, _ in record } }
        #expect(versionError?.code == .unsupportedVersion)
    }

    /// getTestRegResponse2's FinalChallengeHash is not SHA-256(fcParams): eBay accepts it, a
    /// strict server does not.
    @Test(.enabled(if: available, VectorFiles.skipMessage))
    func registrationResponseWithAForeignFinalChallengeHashIsRefused() throws {
        let response = try Self.message("eBay-UAF/RegistrationResponseProcessingTest.getTestRegResponse2")
        let fc = try UAFMessageDecoding.finalChallengeParams(response.fcParams)
        let verifier = UAFRegistrationVerifier(
            context: UAFResponseContext(appID: fc.appID, trustedFacetIDs: [fc.facetID], acceptedVersions: [.v1_0]))
        let error = #expect(throws: UAFError.self) { _ = try verifier.verify(response, expectedChallenge: fc.challenge) }
        #expect(error?.code == .finalChallengeHashMismatch)
    }

    /// The spec example registration (basic full, NNL test CA): trusted when the metadata names
    /// its CA and the clock is inside the certificate's validity; not trusted otherwise.
    @Test(.enabled(if: available, VectorFiles.skipMessage))
    func specExampleRegistrationChainsToItsMetadataRoot() throws {
        let response = try Self.message("eBay-UAF/RegistrationResponseProcessingTest.getTestRegResponse")
        let fc = try UAFMessageDecoding.finalChallengeParams(response.fcParams)
        let assertion = try UAFRegistrationAssertion(bytes: #require(Base64URL.decode(response.assertions[0].assertion)))
        guard case .basicFull(_, let certificates) = assertion.attestation else { throw CryptoError("not basic full") }
        let root = try X509Certificate(derEncoded: certificates[0])
        let statement = MetadataStatement(
            description: "NNL example", aaid: assertion.aaid, protocolFamily: "uaf", attestationTypes: ["basic_full"],
            attestationRootCertificates: [root])
        let entry = MetadataEntry(aaid: assertion.aaid, metadataStatement: statement, statusReports: [], timeOfLastStatusChange: Date())
        let context = UAFResponseContext(appID: fc.appID, trustedFacetIDs: [fc.facetID], acceptedVersions: [.v1_0])
        let verifier = UAFRegistrationVerifier(context: context, metadata: { $0 == assertion.aaid ? entry : nil })
        let when = Date(timeIntervalSince1970: 1_420_070_400)  // 2015-01-01, inside 2014-08-28 … 2017-05-24
        let results = try verifier.verify(response, expectedChallenge: fc.challenge, at: when)
        #expect(results.map(\.aaid) == ["ABCD#ABCD"])
        #expect(results[0].attestation.typeName == "basic_full")
        #expect(results[0].description == "NNL example")
        let expired = #expect(throws: UAFError.self) { _ = try verifier.verify(response, expectedChallenge: fc.challenge, at: Date()) }
        #expect(expired?.code == .attestationNotTrusted)
        let noMetadata = UAFRegistrationVerifier(context: context)
        let untrusted = #expect(throws: UAFError.self) { _ = try noMetadata.verify(response, expectedChallenge: fc.challenge, at: when) }
        #expect(untrusted?.code == .attestationNotTrusted)
    }
}

import Crypto
import FIDO
import Foundation
import Testing

@Suite struct MetadataStatementTests {
    static var statementsWithAttestation: [[String: Any]] {
        (MetadataVectors.mds["statements_with_attestation"] as? [[String: Any]]) ?? []
    }

    static func json(_ object: Any) throws -> [UInt8] { Array(try JSONSerialization.data(withJSONObject: object)) }

    static func leaf(_ vector: [String: Any]) throws -> X509Certificate {
        let x5c = try #require(vector["x5c_b64"] as? [String])
        return try X509Certificate(derEncoded: try #require(Lenient.bytes(x5c[0])))
    }

    /// Every statement of mds.json decodes with the members Signet uses.
    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func vectorStatementsDecode() throws {
        let vectors = Self.statementsWithAttestation
        // A missing or changed vector file fails here, with the reason, before anything is
        // indexed (an index past the end would trap and end the whole test process).
        try #require(vectors.count == 5, "mds.json statements_with_attestation: \(vectors.count) entries at \(VectorFiles.directory.path)")
        for vector in vectors {
            let raw = try #require(vector["metadata_statement"] as? [String: Any])
            let statement = try MetadataStatement(json: try Self.json(raw))
            #expect(statement.aaguid == AAGUID(try #require(raw["aaguid"] as? String)))
            #expect(statement.description == raw["description"] as? String)
            #expect(statement.attestationTypes == raw["attestationTypes"] as? [String])
            #expect(statement.keyProtection == raw["keyProtection"] as? [String])
            #expect(statement.authenticationAlgorithms == raw["authenticationAlgorithms"] as? [String])
            #expect(statement.attestationRootCertificates.count == (raw["attestationRootCertificates"] as? [String])?.count)
            #expect(statement.userVerificationDetails.count == (raw["userVerificationDetails"] as? [Any])?.count)
            #expect(statement.icon == raw["icon"] as? String)
        }
        let windowsHello = try MetadataStatement(json: try Self.json(try #require(vectors[1]["metadata_statement"])))
        #expect(windowsHello.webAuthnAttestationTypes == [.attCA])
        #expect(windowsHello.userVerificationDetails.first == ["eyeprint_internal"])
    }

    /// RFC 5280 method-1 key identifiers of the vectors' attestation certificates (checked
    /// with OpenSSL and Python's hashlib).
    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func keyIdentifiersOfVectorCertificates() throws {
        let expected = [
            "a9533650c65500ae42c9063a146aed488ef5b36a", "f7d6c4674f8e8bb186d9ffa2ebca7b5dfd7e7624",
            "564df7c0f8c655b6a11f6c4d19f3bf41e2fd0179", "64a9562c8d88f02628193a07cf3597120133ce7c",
            "7d87f94259e4e23148514b5b63df58415da3aeaf",
        ]
        for (vector, id) in zip(Self.statementsWithAttestation, expected) {
            #expect(AttestationKeyIdentifier.of(try Self.leaf(vector)) == id)
        }
    }

    /// SHA-1 known answers (FIPS 180 examples) through a SubjectPublicKeyInfo whose key bits
    /// are the message.
    @Test(arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        (String(repeating: "a", count: 1_000_000), "34aa973cd4c4daa4f61eeb2bdbad27316534016f"),
    ])
    func keyIdentifierIsSHA1OfTheKeyBits(message: String, digest: String) {
        let spki = DER.sequence(DER.sequence(DER.oid("1.2.840.10045.2.1")), DER.bitString(Array(message.utf8)))
        #expect(AttestationKeyIdentifier.of(subjectPublicKeyInfo: spki) == digest)
    }

    @Test func keyIdentifierRefusesWhatIsNotASubjectPublicKeyInfo() {
        #expect(AttestationKeyIdentifier.of(subjectPublicKeyInfo: []) == nil)
        #expect(AttestationKeyIdentifier.of(subjectPublicKeyInfo: DER.sequence(DER.null)) == nil)
        // Unused bits in the key's BIT STRING.
        #expect(AttestationKeyIdentifier.of(subjectPublicKeyInfo: DER.sequence(DER.sequence(DER.null), DER.tlv(0x03, [0x01, 0xFE]))) == nil)
        #expect(AttestationKeyIdentifier.isWellFormed("7d87f94259e4e23148514b5b63df58415da3aeaf"))
        #expect(!AttestationKeyIdentifier.isWellFormed("7D87F94259E4E23148514B5B63DF58415DA3AEAF"))
        #expect(!AttestationKeyIdentifier.isWellFormed("7d87f942"))
    }

    @Test func usedMembersAreStrict() throws {
        let base: [String: Any] = [
            "description": "x", "authenticatorVersion": 1, "protocolFamily": "fido2", "attestationTypes": ["basic_full"],
            "attestationRootCertificates": [], "userVerificationDetails": [[["userVerificationMethod": "none"]]],
            "keyProtection": ["hardware"], "authenticationAlgorithms": ["secp256r1_ecdsa_sha256_raw"],
        ]
        _ = try MetadataStatement(json: try Self.json(base))
        func failure(_ change: (inout [String: Any]) -> Void) throws -> String? {
            var copy = base
            change(&copy)
            do {
                _ = try MetadataStatement(json: try Self.json(copy))
                return nil
            } catch let error as MetadataError {
                #expect(error.code == .payloadMalformed)
                return error.debugDescription
            }
        }
        #expect(try failure { $0["description"] = nil }?.contains("/description: required member is missing") == true)
        #expect(try failure { $0["authenticatorVersion"] = "1" }?.contains("/authenticatorVersion: expected a number") == true)
        #expect(try failure { $0["authenticatorVersion"] = -1 }?.contains("/authenticatorVersion") == true)
        #expect(try failure { $0["aaguid"] = "not-an-aaguid" }?.contains("/aaguid: not an AAGUID") == true)
        #expect(try failure { $0["attestationRootCertificates"] = ["%%%"] }?.contains("/attestationRootCertificates/0: not base64") == true)
        #expect(try failure { $0["userVerificationDetails"] = [[["method": "none"]]] }?.contains("/userVerificationDetails/0/0/userVerificationMethod") == true)
        #expect(try failure { $0["attestationCertificateKeyIdentifiers"] = ["abc"] }?.contains("/attestationCertificateKeyIdentifiers/0") == true)
        // Unknown members, and members Signet does not read, are ignored whatever their type.
        #expect(try failure { $0["tcDisplay"] = 42; $0["somethingNew"] = ["x": 1] } == nil)
        // Upper-case key identifiers are normalised.
        var upper = base
        upper["attestationCertificateKeyIdentifiers"] = ["7D87F94259E4E23148514B5B63DF58415DA3AEAF"]
        #expect(try MetadataStatement(json: try Self.json(upper)).attestationCertificateKeyIdentifiers == ["7d87f94259e4e23148514b5b63df58415da3aeaf"])
    }
}

import Crypto
import FIDO
import Foundation
import Testing
import TestSupport
import Tokens

/// The MDS3 vectors in ../shared/vectors: `mds.json` and the two BLOBs it describes.
enum MetadataVectors {
    static let conformanceFile = "mds3_blob_simplewebauthn_conformance.jwt"
    static let exampleFile = "mds3_blob_go_webauthn_example.jwt"

    static var available: Bool { ["mds.json", conformanceFile, exampleFile].allSatisfy(VectorFiles.exists) }
    static let enabled = available || VectorFiles.isCI

    static var mds: [String: Any] { (VectorFiles.json("mds.json") as? [String: Any]) ?? [:] }

    static func text(_ file: String) throws -> String {
        try String(contentsOf: VectorFiles.url(file), encoding: .utf8)
    }

    /// A root certificate of mds.json by (part of) its name.
    static func root(_ nameContains: String) throws -> X509Certificate {
        let roots = (mds["root_certificates"] as? [[String: Any]]) ?? []
        let entry = try #require(roots.first { ($0["name"] as? String)?.contains(nameContains) == true })
        return try X509Certificate(pem: try #require(entry["pem"] as? String))
    }

    /// The leaf certificate SimpleWebAuthn verifies the conformance BLOB with.
    static func conformanceLeaf() throws -> X509Certificate {
        let blobs = (mds["blobs"] as? [[String: Any]]) ?? []
        let conformance = try #require(blobs.first { ($0["file"] as? String) == conformanceFile })
        return try X509Certificate(pem: try #require(conformance["leaf_certificate_pem"] as? String))
    }

    /// Inside every certificate's validity in both BLOBs' chains (conformance signer
    /// 2017-02-01…2030-01-31; example signer 2021-04-19…2031-04-17).
    static let pinnedTime = date("2023-11-01")

    static func date(_ text: String) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.date(from: text)!
    }
}

@Suite struct MetadataBLOBTests {
    // MARK: - Vectors

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func vectorsArePresent() {
        #expect(MetadataVectors.available, "MDS vectors missing at \(VectorFiles.directory.path)")
    }

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func conformanceBLOBVerifiesToTheFIDOConformanceRoot() throws {
        let root = try MetadataVectors.root("FAKE Root")
        let blob = try MetadataBLOB(
            jwt: try MetadataVectors.text(MetadataVectors.conformanceFile),
            configuration: MetadataBLOB.Configuration(roots: [root]), at: MetadataVectors.pinnedTime)
        #expect(blob.number == 42)
        #expect(blob.entries.count == 200)
        // This is FIDO conformance test data: its statements use the MDS 2 member name
        // `userVerification` (accepted), and half its attestation roots have a malformed
        // notBefore (left out, each reported).
        #expect(blob.issues.count == 100)
        #expect(blob.issues.allSatisfy { $0.effect == .rootCertificateDropped && $0.reason == "not a well-formed certificate" })
        #expect(blob.issues.first?.path == "/entries/100/metadataStatement/attestationRootCertificates/0")
        #expect(blob.entries.allSatisfy { $0.metadataStatement != nil })
        #expect(blob.nextUpdate == MetadataVectors.date("2023-11-08"))
        #expect(blob.legalHeader?.hasPrefix("By using this test metadata service") == true)
        #expect(blob.signingChain.count == 3)
        #expect(blob.signingChain.first == (try MetadataVectors.conformanceLeaf()))
        #expect(blob.signingChain.last == root)
        #expect(!blob.isStale(at: MetadataVectors.pinnedTime))
        #expect(blob.isStale(at: MetadataVectors.date("2023-11-08")))
        for aaguid in ["a14eb40d-3b89-4f3b-8d46-13cdf3de625c", "26b9cbdd-44e8-46ef-a6d1-7d2b083ff58b", "89ecee70-bf51-4566-9834-311b0711a61b"] {
            #expect(blob.entry(for: try MetadataTestPKI.aaguid(aaguid))?.metadataStatement != nil, "\(aaguid)")
        }
        let first = try #require(blob.entry(for: try MetadataTestPKI.aaguid("a14eb40d-3b89-4f3b-8d46-13cdf3de625c")))
        #expect(first.latestStatusReport?.status == .fidoCertifiedL1)
        #expect(first.certificationLevel == .l1)
        #expect(first.timeOfLastStatusChange == MetadataVectors.date("2019-07-05"))
    }

    /// SimpleWebAuthn's own check: the BLOB verifies with the given signing certificate pinned.
    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func conformanceBLOBVerifiesWithItsLeafPinned() throws {
        let leaf = try MetadataVectors.conformanceLeaf()
        let blob = try MetadataBLOB(
            jwt: try MetadataVectors.text(MetadataVectors.conformanceFile),
            configuration: MetadataBLOB.Configuration(roots: [leaf], allowPartialChain: true), at: MetadataVectors.pinnedTime)
        #expect(blob.signingChain.first == leaf)
        // Without partial chains, a pinned non-root is not an anchor.
        #expect(
            metadataErrorCode {
                try MetadataBLOB(
                    jwt: try MetadataVectors.text(MetadataVectors.conformanceFile),
                    configuration: MetadataBLOB.Configuration(roots: [leaf]), at: MetadataVectors.pinnedTime)
            } == .chainUntrusted)
    }

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func exampleBLOBChainsToTheExampleRoot() throws {
        let root = try MetadataVectors.root("EXAMPLE MDS3 TEST ROOT")
        let blob = try MetadataBLOB(
            jwt: try MetadataVectors.text(MetadataVectors.exampleFile), configuration: MetadataBLOB.Configuration(roots: [root]),
            at: MetadataVectors.pinnedTime)
        #expect(blob.number == 15)
        #expect(blob.entries.count == 2)
        #expect(blob.nextUpdate == MetadataVectors.date("2020-03-30"))
        #expect(blob.signingChain.last == root)
        // A BLOB whose nextUpdate has passed still verifies: staleness is reported, not refused.
        #expect(blob.isStale(at: MetadataVectors.pinnedTime))

        let fido2 = try #require(blob.entry(for: try MetadataTestPKI.aaguid("0132d110-bf4e-4208-a403-ab4f5f12efe5")))
        #expect(fido2.metadataStatement?.description == "FIDO Alliance Sample FIDO2 Authenticator")
        #expect(fido2.latestStatusReport?.status == .fidoCertifiedL1)
        #expect(fido2.latestStatusReport?.certificateNumber == "FIDO2100020151221001")
        #expect(fido2.certificationLevel == .l1)
        #expect(fido2.metadataStatement?.attestationRootCertificates.count == 1)
        #expect(fido2.metadataStatement?.authenticatorVersion == 5)
        #expect(fido2.metadataStatement?.userVerificationDetails.count == 4)
        #expect(fido2.metadataStatement?.webAuthnAttestationTypes == [.basic])

        let uaf = try #require(blob.entry(forAAID: "1234#5678"))
        #expect(uaf.metadataStatement?.protocolFamily == "uaf")
        #expect(uaf.latestStatusReport?.status == .fidoCertified)
        #expect(uaf.certificationLevel == .l1)
    }

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func productionRootIsGlobalSignR3() throws {
        let embedded = try #require(try MetadataBLOB.Configuration.production().roots.first)
        #expect(embedded == (try MetadataVectors.root("GlobalSign Root CA - R3")))
        #expect(Hex.encode(embedded.sha256Fingerprint) == "cbb522d7b7f127ad6a0113865bdf1cd4102e7d0759af635a7cf4720dc963c53b")
    }

    // MARK: - Vector rejections

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func alteredSignaturesAreRefused() throws {
        let text = try MetadataVectors.text(MetadataVectors.exampleFile)
        let configuration = MetadataBLOB.Configuration(roots: [try MetadataVectors.root("EXAMPLE MDS3 TEST ROOT")])
        let verify = { (jwt: String) in metadataErrorCode { try MetadataBLOB(jwt: jwt, configuration: configuration, at: MetadataVectors.pinnedTime) } }

        // Last character dropped: 85 base64url characters cannot be a whole number of bytes.
        #expect(verify(String(text.dropLast())) == .malformed)
        // Three bytes dropped: a 61-byte ES256 signature.
        let parts = text.split(separator: ".").map(String.init)
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(verify(parts[0] + "." + parts[1] + "." + Base64URL.encode(signature.dropLast(3))) == .signatureInvalid)
        // One character of the signature changed.
        var bytes = Array(text.utf8)
        let i = bytes.count - 20
        bytes[i] = bytes[i] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(verify(String(decoding: bytes, as: UTF8.self)) == .signatureInvalid)
        // The payload changed under the same signature.
        var payload = try #require(Base64URL.decode(parts[1]))
        let digit = try #require(payload.firstIndex(of: UInt8(ascii: "5")))  // "no":15 → "no":16
        payload[digit] = UInt8(ascii: "6")
        #expect(verify([parts[0], Base64URL.encode(payload), parts[2]].joined(separator: ".")) == .signatureInvalid)
    }

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func theWrongRootIsRefused() throws {
        for (file, wrongRoot) in [(MetadataVectors.conformanceFile, "GlobalSign"), (MetadataVectors.exampleFile, "FAKE Root")] {
            let configuration = MetadataBLOB.Configuration(roots: [try MetadataVectors.root(wrongRoot)])
            #expect(
                metadataErrorCode { try MetadataBLOB(jwt: try MetadataVectors.text(file), configuration: configuration, at: MetadataVectors.pinnedTime) }
                    == .chainUntrusted)
        }
    }

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func certificateValidityIsCheckedAtTheVerificationTime() throws {
        let text = try MetadataVectors.text(MetadataVectors.exampleFile)
        let configuration = MetadataBLOB.Configuration(roots: [try MetadataVectors.root("EXAMPLE MDS3 TEST ROOT")])
        // The signer expires 2031-04-17 and starts 2021-04-19.
        #expect(metadataErrorCode { try MetadataBLOB(jwt: text, configuration: configuration, at: MetadataVectors.date("2031-06-01")) } == .certificateExpired)
        #expect(metadataErrorCode { try MetadataBLOB(jwt: text, configuration: configuration, at: MetadataVectors.date("2020-01-01")) } == .certificateNotYetValid)

        let conformance = try MetadataVectors.text(MetadataVectors.conformanceFile)
        let fake = MetadataBLOB.Configuration(roots: [try MetadataVectors.root("FAKE Root")])
        #expect(metadataErrorCode { try MetadataBLOB(jwt: conformance, configuration: fake, at: MetadataVectors.date("2030-06-01")) } == .certificateExpired)
    }

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func oversizedBLOBsAreRefusedBeforeDecoding() throws {
        let text = try MetadataVectors.text(MetadataVectors.conformanceFile)
        let small = MetadataBLOB.Configuration(roots: [try MetadataVectors.root("FAKE Root")], maximumSize: 2 * 1024 * 1024)
        #expect(metadataErrorCode { try MetadataBLOB(jwt: text, configuration: small, at: MetadataVectors.pinnedTime) } == .tooLarge)
        // The default limit (8 MiB) takes the 2.3 MB BLOB but not 9 MiB of anything.
        let defaults = MetadataBLOB.Configuration(roots: [try MetadataVectors.root("FAKE Root")])
        #expect(defaults.maximumSize == 8 * 1024 * 1024)
        let huge = String(repeating: "A", count: 9 * 1024 * 1024)
        #expect(metadataErrorCode { try MetadataBLOB(jwt: huge, configuration: defaults, at: MetadataVectors.pinnedTime) } == .tooLarge)
    }

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func algorithmsOutsideTheAllowedListAreRefused() throws {
        let configuration = MetadataBLOB.Configuration(
            roots: [try MetadataVectors.root("FAKE Root")], allowedAlgorithms: [.rs256, .ps256])
        #expect(
            metadataErrorCode {
                try MetadataBLOB(
                    jwt: try MetadataVectors.text(MetadataVectors.conformanceFile), configuration: configuration,
                    at: MetadataVectors.pinnedTime)
            } == .algorithmNotAllowed)
    }

    // MARK: - Crafted BLOBs

    @Test func aBLOBBuiltHereVerifies() throws {
        let chain = try MetadataTestPKI.Chain()
        let jwt = try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(no: 7, entries: [MetadataTestPKI.entry(aaguid: Self.aaguid, statuses: [("FIDO_CERTIFIED_L2", "2024-02-01")])]),
            chain: chain)
        let blob = try MetadataBLOB(jwt: "\n" + jwt + "\n", configuration: try chain.configuration, at: MetadataTestPKI.verificationTime)
        #expect(blob.number == 7)
        #expect(blob.signingChain.map(\.derEncoded) == [chain.signer.der, chain.intermediate.der, chain.root.der])
        #expect(blob.entry(for: try MetadataTestPKI.aaguid(Self.aaguid))?.certificationLevel == .l2)
    }

    @Test func x5uIsRefused() throws {
        let chain = try MetadataTestPKI.Chain()
        let jwt = try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(no: 1, entries: []), chain: chain, extraHeader: ["x5u": "https://mds.example/chain.pem"])
        #expect(metadataErrorCode { try MetadataBLOB(jwt: jwt, configuration: try chain.configuration, at: MetadataTestPKI.verificationTime) } == .x5uNotSupported)
        // Also without x5c beside it.
        let only = try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(no: 1, entries: []), chain: chain, includeX5C: false,
            extraHeader: ["x5u": "https://mds.example/chain.pem"])
        #expect(metadataErrorCode { try MetadataBLOB(jwt: only, configuration: try chain.configuration, at: MetadataTestPKI.verificationTime) } == .x5uNotSupported)
    }

    @Test func withoutX5CTheRootIsTheSigner() throws {
        let chain = try MetadataTestPKI.Chain()
        let payload = MetadataTestPKI.payload(no: 3, entries: [])
        let byRoot = try MetadataTestPKI.blob(payload: payload, chain: chain, includeX5C: false, signer: chain.root.key)
        let blob = try MetadataBLOB(jwt: byRoot, configuration: try chain.configuration, at: MetadataTestPKI.verificationTime)
        #expect(blob.signingChain.map(\.derEncoded) == [chain.root.der])
        // Signed by the (untrusted) leaf with no chain to show: nothing vouches for it.
        let byLeaf = try MetadataTestPKI.blob(payload: payload, chain: chain, includeX5C: false)
        #expect(metadataErrorCode { try MetadataBLOB(jwt: byLeaf, configuration: try chain.configuration, at: MetadataTestPKI.verificationTime) } == .signatureInvalid)
    }

    @Test func theSignerMustBeTheX5CLeaf() throws {
        let chain = try MetadataTestPKI.Chain()
        // A valid chain in the header, but the JWS signed by another key.
        let jwt = try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: 1, entries: []), chain: chain, signer: chain.intermediate.key)
        #expect(metadataErrorCode { try MetadataBLOB(jwt: jwt, configuration: try chain.configuration, at: MetadataTestPKI.verificationTime) } == .signatureInvalid)
    }

    @Test func malformedHeadersAreRefused() throws {
        let chain = try MetadataTestPKI.Chain()
        let configuration = try chain.configuration
        let time = MetadataTestPKI.verificationTime
        let payload = MetadataTestPKI.payload(no: 1, entries: [])
        // x5c not base64 / not a certificate / not an array.
        let notBase64 = try MetadataTestPKI.blob(payload: payload, chain: chain, x5c: ["***"])
        #expect(metadataErrorCode { try MetadataBLOB(jwt: notBase64, configuration: configuration, at: time) } == .malformed)
        let notACertificate = try MetadataTestPKI.blob(payload: payload, chain: chain, x5c: [Data([0x30, 0x03, 0x02, 0x01, 0x01]).base64EncodedString()])
        #expect(metadataErrorCode { try MetadataBLOB(jwt: notACertificate, configuration: configuration, at: time) } == .certificateInvalid)
        let notAnArray = try MetadataTestPKI.blob(payload: payload, chain: chain, includeX5C: false, extraHeader: ["x5c": .string(chain.signer.base64)])
        #expect(metadataErrorCode { try MetadataBLOB(jwt: notAnArray, configuration: configuration, at: time) } == .malformed)
        // Intermediate missing from x5c: no path to the root.
        let leafOnly = try MetadataTestPKI.blob(payload: payload, chain: chain, x5c: [chain.signer.base64])
        #expect(metadataErrorCode { try MetadataBLOB(jwt: leafOnly, configuration: configuration, at: time) } == .chainUntrusted)
        // Not a JWS at all, and alg none.
        #expect(metadataErrorCode { try MetadataBLOB(jwt: "not a jws", configuration: configuration, at: time) } == .malformed)
        let none = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array("{}".utf8)) + "."
        #expect(metadataErrorCode { try MetadataBLOB(jwt: none, configuration: configuration, at: time) } == .algorithmNotAllowed)
        // An RS256 header over an EC signer: the key decides, not the header.
        let header = Base64URL.encode(Array(#"{"alg":"RS256","x5c":["\#(chain.signer.base64)","\#(chain.intermediate.base64)"]}"#.utf8))
        let rs = header + "." + Base64URL.encode(Array("{}".utf8)) + "." + Base64URL.encode([UInt8](repeating: 1, count: 256))
        #expect(metadataErrorCode { try MetadataBLOB(jwt: rs, configuration: configuration, at: time) } == .algorithmNotAllowed)
        // No roots configured.
        #expect(metadataErrorCode { try MetadataBLOB(jwt: notBase64, configuration: MetadataBLOB.Configuration(roots: []), at: time) } == .configurationInvalid)
    }

    @Test func expiredSignerIsReportedAsExpired() throws {
        let chain = try MetadataTestPKI.Chain(signerNotAfter: Date(timeIntervalSince1970: 1_735_689_600))  // 2025-01-01
        let jwt = try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: 1, entries: []), chain: chain)
        #expect(metadataErrorCode { try MetadataBLOB(jwt: jwt, configuration: try chain.configuration, at: MetadataTestPKI.verificationTime) } == .certificateExpired)
    }

    @Test func payloadMembersAreStrict() throws {
        let chain = try MetadataTestPKI.Chain()
        let time = MetadataTestPKI.verificationTime
        func payloadError(_ payload: [String: Any]) throws -> MetadataError? {
            let jwt = try MetadataTestPKI.blob(payload: payload, chain: chain)
            do {
                _ = try MetadataBLOB(jwt: jwt, configuration: try chain.configuration, at: time)
                return nil
            } catch let error as MetadataError {
                return error
            }
        }
        var missingNo = MetadataTestPKI.payload(no: 1, entries: [])
        missingNo["no"] = nil
        let e1 = try #require(try payloadError(missingNo))
        #expect(e1.code == .payloadMalformed)
        #expect(e1.debugDescription.contains("/no"))
        var textNo = MetadataTestPKI.payload(no: 1, entries: [])
        textNo["no"] = "42"
        #expect(try payloadError(textNo)?.code == .payloadMalformed)
        let badDate = MetadataTestPKI.payload(no: 1, entries: [], nextUpdate: "2025-02-30")
        let e2 = try #require(try payloadError(badDate))
        #expect(e2.code == .payloadMalformed)
        #expect(e2.debugDescription.contains("/nextUpdate"))
        var notArray = MetadataTestPKI.payload(no: 1, entries: [])
        notArray["entries"] = ["aaguid": Self.aaguid]
        #expect(try payloadError(notArray)?.code == .payloadMalformed)
        // Unknown members are ignored.
        var extra = MetadataTestPKI.payload(no: 1, entries: [])
        extra["futureMember"] = ["anything": [1, 2, 3]]
        #expect(try payloadError(extra) == nil)
    }

    @Test func entriesThatDoNotDecodeAreReportedNotFatal() throws {
        let chain = try MetadataTestPKI.Chain()
        func withStatement(_ entry: [String: Any], _ change: (inout [String: Any]) -> Void) -> [String: Any] {
            var copy = entry
            var statement = (copy["metadataStatement"] as? [String: Any]) ?? [:]
            change(&statement)
            copy["metadataStatement"] = statement
            return copy
        }
        let badRoot = withStatement(MetadataTestPKI.entry(aaguid: "11111111-1111-1111-1111-111111111111", statuses: [("FIDO_CERTIFIED_L2", "2024-03-01")])) {
            $0["attestationRootCertificates"] = ["bm90IGEgY2VydGlmaWNhdGU=", try! MetadataTestPKI.root().base64]  // base64 of "not a certificate"
        }
        let badStatement = withStatement(MetadataTestPKI.entry(aaguid: "33333333-3333-3333-3333-333333333333", statuses: [("REVOKED", "2024-03-01")])) {
            $0["description"] = 5
        }
        var badStatus = MetadataTestPKI.entry(aaguid: "22222222-2222-2222-2222-222222222222", statuses: [("FIDO_CERTIFIED", "2024-03-01")])
        badStatus["statusReports"] = [["status": 3]]
        let noIdentity = MetadataTestPKI.entry(statuses: [("FIDO_CERTIFIED", "2024-03-01")])
        let good = MetadataTestPKI.entry(aaguid: Self.aaguid, statuses: [("FIDO_CERTIFIED", "2024-03-01")])
        let jwt = try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(no: 1, entries: [badRoot, badStatement, badStatus, noIdentity, good]), chain: chain)
        let blob = try MetadataBLOB(jwt: jwt, configuration: try chain.configuration, at: MetadataTestPKI.verificationTime)

        #expect(blob.entries.count == 3)
        #expect(
            blob.issues == [
                MetadataBLOB.Issue(path: "/entries/0/metadataStatement/attestationRootCertificates/0", reason: "not a well-formed certificate", effect: .rootCertificateDropped),
                MetadataBLOB.Issue(path: "/entries/1/metadataStatement/description", reason: "expected a string", effect: .statementDropped),
                MetadataBLOB.Issue(path: "/entries/2/statusReports/0/status", reason: "expected a string", effect: .entryDropped),
                MetadataBLOB.Issue(path: "/entries/3", reason: "entry has no aaid, aaguid or attestationCertificateKeyIdentifiers", effect: .entryDropped),
            ])
        // The good root of the first entry stays.
        let first = try #require(blob.entry(for: try MetadataTestPKI.aaguid("11111111-1111-1111-1111-111111111111")))
        #expect(first.metadataStatement?.attestationRootCertificates.count == 1)
        // The revocation survives the unusable statement.
        let revoked = try #require(blob.entry(for: try MetadataTestPKI.aaguid("33333333-3333-3333-3333-333333333333")))
        #expect(revoked.metadataStatement == nil)
        #expect(revoked.isRevokedOrCompromised)
    }

    @Test func aDuplicateNeverHidesARevocation() throws {
        let chain = try MetadataTestPKI.Chain()
        let entries = [
            MetadataTestPKI.entry(aaguid: Self.aaguid, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")], description: "first"),
            MetadataTestPKI.entry(aaguid: Self.aaguid, statuses: [("ATTESTATION_KEY_COMPROMISE", "2024-05-01")], description: "second"),
            MetadataTestPKI.entry(aaguid: Self.aaguid, statuses: [("FIDO_CERTIFIED_L3", "2024-06-01")], description: "third"),
        ]
        let blob = try MetadataBLOB(
            jwt: try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: 1, entries: entries), chain: chain),
            configuration: try chain.configuration, at: MetadataTestPKI.verificationTime)
        let entry = try #require(blob.entry(for: try MetadataTestPKI.aaguid(Self.aaguid)))
        #expect(entry.authenticatorDescription == "second")
        #expect(blob.issues.count == 2)
    }

    static let aaguid = "cb69481e-8ff7-4039-93ec-0a2729a154a8"
}

/// The code of the MetadataError `body` throws; nil when it does not throw.
func metadataErrorCode(_ body: () throws -> Any) -> MetadataError.Code? {
    do {
        _ = try body()
        return nil
    } catch let error as MetadataError {
        return error.code
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

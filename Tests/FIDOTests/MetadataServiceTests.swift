import Crypto
import FIDO
import Foundation
import Testing
import TestSupport

@Suite struct MetadataServiceTests {
    static let time = MetadataTestPKI.verificationTime
    static let yubi = "cb69481e-8ff7-4039-93ec-0a2729a154a8"
    static let other = "ee882879-721c-4913-9775-3dfcce97072a"
    static let u2fKeyID = "7d87f94259e4e23148514b5b63df58415da3aeaf"

    let chain: MetadataTestPKI.Chain
    let attestationRoot: MetadataTestPKI.Issued

    init() throws {
        chain = try MetadataTestPKI.Chain()
        attestationRoot = try MetadataTestPKI.root("Attestation Root")
    }

    func service() throws -> MetadataService { MetadataService(configuration: try chain.configuration) }

    func blob(no: Int, _ entries: [[String: Any]]) throws -> String {
        try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: no, entries: entries), chain: chain)
    }

    // MARK: - Lookups

    @Test func lookupsByAAGUIDAndKeyIdentifier() throws {
        let metadata = try service()
        #expect(metadata.entry(for: try MetadataTestPKI.aaguid(Self.yubi)) == nil)
        try metadata.load(
            jwt: try blob(
                no: 1,
                [
                    MetadataTestPKI.entry(
                        aaguid: Self.yubi, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")], roots: [attestationRoot.base64],
                        description: "YubiKey 5"),
                    MetadataTestPKI.entry(keyIdentifiers: [Self.u2fKeyID], statuses: [("FIDO_CERTIFIED", "2024-01-01")], description: "U2F key"),
                ]), at: Self.time)
        let aaguid = try MetadataTestPKI.aaguid(Self.yubi)
        #expect(metadata.currentNumber == 1)
        #expect(metadata.statement(for: aaguid)?.description == "YubiKey 5")
        #expect(metadata.attestationRoots(for: aaguid).map(\.derEncoded) == [attestationRoot.der])
        #expect(metadata.entry(forKeyIdentifier: Self.u2fKeyID)?.authenticatorDescription == "U2F key")
        #expect(metadata.entry(forKeyIdentifier: Self.u2fKeyID.uppercased())?.authenticatorDescription == "U2F key")
        #expect(metadata.entry(for: try MetadataTestPKI.aaguid(Self.other)) == nil)
        #expect(metadata.entry(forKeyIdentifier: "0000000000000000000000000000000000000000") == nil)
    }

    /// mds.json's statements, served from a BLOB: looked up by AAGUID they come back as
    /// written; looked up through their attestation certificate's key identifier too.
    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func vectorStatementsAreFoundByAAGUIDAndKeyIdentifier() throws {
        let vectors = MetadataStatementTests.statementsWithAttestation
        let local = try #require((MetadataVectors.mds["statements"] as? [[String: Any]])?.first)
        var entries: [[String: Any]] = []
        var keyIDs: [String] = []
        for vector in vectors {
            let statement = try #require(vector["metadata_statement"] as? [String: Any])
            let keyID = try #require(AttestationKeyIdentifier.of(try MetadataStatementTests.leaf(vector)))
            keyIDs.append(keyID)
            var entry = MetadataTestPKI.entry(
                aaguid: statement["aaguid"] as? String, statuses: [("FIDO_CERTIFIED_L1", "2022-01-01")], statement: statement)
            entry["attestationCertificateKeyIdentifiers"] = [keyID]
            entries.append(entry)
        }
        let localStatement = try #require(local["metadata_statement"] as? [String: Any])
        entries.append(MetadataTestPKI.entry(aaguid: local["aaguid"] as? String, statuses: [("FIDO_CERTIFIED", "2022-01-01")], statement: localStatement))

        let metadata = try service()
        let update = try metadata.load(jwt: try blob(no: 1, entries), at: Self.time)
        #expect(update.issues.isEmpty, "\(update.issues)")

        for (vector, keyID) in zip(vectors, keyIDs) {
            let raw = try #require(vector["metadata_statement"] as? [String: Any])
            let aaguid = try MetadataTestPKI.aaguid(raw["aaguid"] as? String ?? "")
            let statement = try #require(metadata.statement(for: aaguid))
            #expect(statement.description == raw["description"] as? String)
            #expect(statement.attestationRootCertificates.map { Data($0.derEncoded).base64EncodedString() } == raw["attestationRootCertificates"] as? [String])
            #expect(metadata.entry(forAttestationCertificate: try MetadataStatementTests.leaf(vector))?.aaguid == aaguid)
            #expect(metadata.entry(forKeyIdentifier: keyID)?.aaguid == aaguid)
            #expect(metadata.anchors(for: aaguid, format: "packed") == statement.attestationRootCertificates)
            #expect(metadata.anchors(forAttestationCertificate: try MetadataStatementTests.leaf(vector)) == statement.attestationRootCertificates)
        }
        // SimpleWebAuthn's localStatement: getStatement(aaguid) returns it unchanged.
        let localAAGUID = try MetadataTestPKI.aaguid(local["aaguid"] as? String ?? "")
        let found = try #require(metadata.statement(for: localAAGUID))
        #expect(found.description == localStatement["description"] as? String)
        #expect(found.aaguid == localAAGUID)
        #expect(found.attestationTypes == ["basic_full", "basic_surrogate"])
        #expect(found.webAuthnAttestationTypes == [.basic, .self])
        #expect(found.authenticationAlgorithms == ["ed25519_eddsa_sha512_raw"])
        #expect(found.attestationRootCertificates.isEmpty)
        #expect(found.userVerificationDetails == [["none"]])
        #expect(found.authenticatorVersion == 2)
    }

    @Test func anchorsForAttestationFormats() throws {
        let metadata = try service()
        try metadata.load(
            jwt: try blob(no: 1, [MetadataTestPKI.entry(aaguid: Self.yubi, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")], roots: [attestationRoot.base64])]),
            at: Self.time)
        let aaguid = try MetadataTestPKI.aaguid(Self.yubi)
        #expect(metadata.anchors(for: aaguid, format: "packed").map(\.derEncoded) == [attestationRoot.der])
        #expect(metadata.anchors(for: aaguid, format: "none").isEmpty)
        #expect(metadata.anchors(for: nil, format: "fido-u2f").isEmpty)
        #expect(metadata.anchors(for: .zero, format: "packed").isEmpty)
        #expect(metadata.anchors(for: try MetadataTestPKI.aaguid(Self.other), format: "packed").isEmpty)
        let provider = metadata.anchorProvider
        #expect(provider(aaguid, "tpm").map(\.derEncoded) == [attestationRoot.der])
    }

    // MARK: - Status

    @Test func statusIsTheLatestReportByEffectiveDate() throws {
        let metadata = try service()
        // Out of order in the BLOB: the latest by date wins, not the last written.
        try metadata.load(
            jwt: try blob(
                no: 1,
                [
                    MetadataTestPKI.entry(
                        aaguid: Self.yubi,
                        statuses: [("FIDO_CERTIFIED_L2", "2024-03-01"), ("UPDATE_AVAILABLE", "2024-05-01"), ("FIDO_CERTIFIED_L1", "2023-01-01")])
                ]), at: Self.time)
        let aaguid = try MetadataTestPKI.aaguid(Self.yubi)
        let status = try #require(metadata.status(for: aaguid))
        #expect(status.status == .updateAvailable)
        #expect(status.effectiveDate == MetadataVectors.date("2024-05-01"))
        #expect(metadata.entry(for: aaguid)?.certificationLevel == .l2)
        #expect(!metadata.isRevokedOrCompromised(aaguid))
    }

    @Test(arguments: [
        ("REVOKED", true), ("USER_VERIFICATION_BYPASS", true), ("ATTESTATION_KEY_COMPROMISE", true),
        ("USER_KEY_REMOTE_COMPROMISE", true), ("USER_KEY_PHYSICAL_COMPROMISE", true), ("UPDATE_AVAILABLE", false),
        ("FIDO_CERTIFIED_L3plus", false), ("NOT_FIDO_CERTIFIED", false), ("SELF_ASSERTION_SUBMITTED", false),
        ("SOME_FUTURE_STATUS", false),
    ])
    func revokedAndCompromisedStatuses(status: String, revoked: Bool) throws {
        let metadata = try service()
        try metadata.load(
            jwt: try blob(
                no: 1,
                [
                    MetadataTestPKI.entry(aaguid: Self.yubi, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01"), (status, "2024-04-01")]),
                    MetadataTestPKI.entry(keyIdentifiers: [Self.u2fKeyID], statuses: [(status, "2024-04-01")]),
                ]), at: Self.time)
        let aaguid = try MetadataTestPKI.aaguid(Self.yubi)
        #expect(metadata.isRevokedOrCompromised(aaguid) == revoked)
        #expect(metadata.isRevokedOrCompromised(keyIdentifier: Self.u2fKeyID) == revoked)
        #expect(metadata.status(for: aaguid)?.status == AuthenticatorStatus(status))
        #expect(metadata.status(forKeyIdentifier: Self.u2fKeyID)?.status == AuthenticatorStatus(status))
    }

    @Test func aCompromiseStaysAfterALaterCertification() throws {
        let metadata = try service()
        try metadata.load(
            jwt: try blob(
                no: 1,
                [MetadataTestPKI.entry(aaguid: Self.yubi, statuses: [("USER_VERIFICATION_BYPASS", "2024-01-01"), ("FIDO_CERTIFIED_L2", "2024-06-01")])]),
            at: Self.time)
        let aaguid = try MetadataTestPKI.aaguid(Self.yubi)
        #expect(metadata.status(for: aaguid)?.status == .fidoCertifiedL2)
        #expect(metadata.isRevokedOrCompromised(aaguid))
        #expect(metadata.entry(for: aaguid)?.compromises == [.userVerificationBypass])
    }

    @Test func revocationEndsTheCertificationLevel() throws {
        let entry = MetadataEntry(
            aaguid: AAGUID(Self.yubi),
            statusReports: [
                StatusReport(status: .fidoCertifiedL3, effectiveDate: MetadataVectors.date("2024-01-01")),
                StatusReport(status: .revoked, effectiveDate: MetadataVectors.date("2024-02-01")),
            ], timeOfLastStatusChange: MetadataVectors.date("2024-02-01"))
        #expect(entry.certificationLevel == nil)
        #expect(entry.isRevokedOrCompromised)
    }

    // MARK: - Updates

    @Test func aNewerBLOBReportsTheNewlyRevoked() throws {
        let metadata = try service()
        let first = try metadata.load(
            jwt: try blob(
                no: 10,
                [
                    MetadataTestPKI.entry(aaguid: Self.yubi, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")]),
                    MetadataTestPKI.entry(aaguid: Self.other, statuses: [("REVOKED", "2024-01-01")]),
                    MetadataTestPKI.entry(keyIdentifiers: [Self.u2fKeyID], statuses: [("FIDO_CERTIFIED", "2024-01-01")]),
                ]), at: Self.time)
        // First load: everything revoked so far, so existing credentials can be flagged.
        #expect(first.previousNumber == nil)
        #expect(first.number == 10)
        #expect(first.newlyRevokedAAGUIDs == [try MetadataTestPKI.aaguid(Self.other)])
        #expect(first.newlyRevokedKeyIdentifiers.isEmpty)

        let third = "00000000-0000-0000-0000-000000000003"
        let second = try metadata.load(
            jwt: try blob(
                no: 11,
                [
                    MetadataTestPKI.entry(aaguid: Self.yubi, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01"), ("ATTESTATION_KEY_COMPROMISE", "2025-05-01")]),
                    MetadataTestPKI.entry(aaguid: Self.other, statuses: [("REVOKED", "2024-01-01")]),
                    MetadataTestPKI.entry(keyIdentifiers: [Self.u2fKeyID], statuses: [("FIDO_CERTIFIED", "2024-01-01"), ("USER_KEY_REMOTE_COMPROMISE", "2025-05-01")]),
                    MetadataTestPKI.entry(aaguid: third, statuses: [("USER_KEY_PHYSICAL_COMPROMISE", "2025-05-01")]),
                ]), at: Self.time)
        #expect(second.previousNumber == 10)
        #expect(second.number == 11)
        // Already revoked before: not reported again.
        #expect(second.newlyRevokedAAGUIDs == [try MetadataTestPKI.aaguid(third), try MetadataTestPKI.aaguid(Self.yubi)])
        #expect(second.newlyRevokedKeyIdentifiers == [Self.u2fKeyID])
        #expect(second.hasNewRevocations)
        #expect(metadata.isRevokedOrCompromised(try MetadataTestPKI.aaguid(Self.yubi)))
    }

    @Test func aBLOBThatIsNotNewerIsRefused() throws {
        let metadata = try service()
        try metadata.load(jwt: try blob(no: 5, [MetadataTestPKI.entry(aaguid: Self.yubi, statuses: [("REVOKED", "2024-01-01")])]), at: Self.time)
        for no in [5, 4, 0] {
            // A replayed older BLOB would un-revoke the model: refused, state unchanged.
            #expect(
                metadataErrorCode {
                    try metadata.load(jwt: try blob(no: no, [MetadataTestPKI.entry(aaguid: Self.yubi, statuses: [("FIDO_CERTIFIED", "2024-01-01")])]), at: Self.time)
                } == .notNewer)
        }
        #expect(metadata.currentNumber == 5)
        #expect(metadata.isRevokedOrCompromised(try MetadataTestPKI.aaguid(Self.yubi)))
        // A BLOB that fails verification leaves the loaded one in force too.
        #expect(metadataErrorCode { try metadata.load(jwt: "garbage", at: Self.time) } == .malformed)
        #expect(metadata.currentNumber == 5)
    }

    // MARK: - Sources

    /// The floor (the highest `no` the deployment accepted before): a BLOB in force below it is
    /// withdrawn, an older one refused, one at it or above loads; the floor never goes down.
    @Test func aFloorWithdrawsAndRefusesOlderBLOBs() throws {
        let metadata = try service()
        try metadata.load(jwt: blob(no: 5, []))
        #expect(!metadata.raiseFloor(to: 5) && metadata.currentNumber == 5)
        #expect(metadata.raiseFloor(to: 7) && metadata.blob == nil)
        #expect(throws: MetadataError.self) { try metadata.load(jwt: blob(no: 6, [])) }
        #expect(!metadata.raiseFloor(to: 3))
        #expect(throws: MetadataError.self) { try metadata.load(jwt: blob(no: 6, [])) }
        try metadata.load(jwt: blob(no: 7, []))
        #expect(metadata.currentNumber == 7)
    }

    @Test func loadsFromAFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signet-mds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("blob.jwt")
        try Data(try blob(no: 3, [MetadataTestPKI.entry(aaguid: Self.yubi, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")])]).utf8).write(to: file)

        let metadata = try service()
        let update = try await metadata.load(fromFile: file.path, at: Self.time)
        #expect(update.number == 3)
        #expect(metadata.statement(for: try MetadataTestPKI.aaguid(Self.yubi)) != nil)

        await #expect(throws: MetadataError.self) { try await metadata.load(fromFile: directory.appendingPathComponent("missing").path, at: Self.time) }
        do {
            _ = try await metadata.load(fromFile: directory.appendingPathComponent("missing").path, at: Self.time)
        } catch {
            #expect(error.code == .sourceUnavailable)
        }
        let small = MetadataService(configuration: MetadataBLOB.Configuration(roots: [try chain.root.certificate], maximumSize: 100))
        do {
            _ = try await small.load(fromFile: file.path, at: Self.time)
            Issue.record("an oversized file was loaded")
        } catch {
            #expect(error.code == .tooLarge)
        }
        do {
            _ = try await small.load(from: MetadataFileSource(path: file.path), at: Self.time)
            Issue.record("an oversized file was loaded")
        } catch {
            #expect(error.code == .tooLarge)
        }
    }

    @Test(.enabled(if: MetadataVectors.enabled, VectorFiles.skipMessage))
    func theConformanceBLOBLoadsFromItsFile() async throws {
        let metadata = MetadataService(configuration: MetadataBLOB.Configuration(roots: [try MetadataVectors.root("FAKE Root")]))
        let update = try await metadata.load(fromFile: VectorFiles.url(MetadataVectors.conformanceFile).path, at: MetadataVectors.pinnedTime)
        #expect(update.number == 42)
        // 16 of its 200 entries carry a compromise status: 8 FIDO2 models, 8 UAF models.
        #expect(update.newlyRevokedAAGUIDs.count == 8)
        #expect(update.newlyRevokedAAIDs.count == 8)
        #expect(update.newlyRevokedAAGUIDs.first == AAGUID("6216c584-c843-4795-bca7-e618739ede99"))
        for aaguid in update.newlyRevokedAAGUIDs { #expect(metadata.isRevokedOrCompromised(aaguid)) }
    }
}

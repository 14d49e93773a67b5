import Crypto
import FIDO
import Foundation
import Platform
import Postgres
import Schema
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport
@testable import RegistrationService

/// The metadata refresher over a scratch database: a newer BLOB that revokes a model suspends
/// the model's credentials, and when the database step fails, the next refresh still does —
/// though the source still holds the same BLOB, which is in force already.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct MetadataRefresherTests {
    typealias Harness = ServiceHarness<RegistrationService>
    static let model = "5e6f7a8b-1c2d-4e3f-9a0b-1c2d3e4f5a6b"

    /// A BLOB source whose text a test replaces; empty, it is down.
    final class Source: MetadataSource {
        let text: Mutex<String>
        init(_ text: String) { self.text = Mutex(text) }
        func fetchBLOB(maximumSize: Int) async throws(MetadataError) -> String {
            let text = text.withLock { $0 }
            guard !text.isEmpty else { throw MetadataError(.sourceUnavailable, "the source is down") }
            return text
        }
    }

    static func blob(no: Int, status: String, chain: MetadataTestPKI.Chain) throws -> String {
        try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(
                no: no, entries: [MetadataTestPKI.entry(aaguid: model, statuses: [(status, "2026-01-0\(no)")])], nextUpdate: "2027-01-01"),
            chain: chain)
    }

    static func status(_ h: Harness) async throws -> String? {
        try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT status FROM credentials WHERE tenant_id = 'acme' AND credential_id = '\\x0102'::bytea").first?.string("status")
        }
    }

    @Test func suspensionsThatFailedAreDoneByTheNextRefresh() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await h.context.pool.withConnection { conn in
            try await conn.query(
                "INSERT INTO users (tenant_id, username, user_handle, display_name) VALUES ('acme', 'alice', '\\x01'::bytea, 'alice')")
            try await conn.query(
                """
                INSERT INTO credentials (tenant_id, credential_id, username, user_handle, public_key_cose, algorithm, sign_count, aaguid,
                    backup_eligible, backup_state, user_verified, transports, attestation_format, attestation_type)
                VALUES ('acme', '\\x0102'::bytea, 'alice', '\\x01'::bytea, '\\x00'::bytea, -7, 0, \(Self.model)::uuid,
                    false, false, true, '{}', 'packed', 'basic')
                """)
        }
        let chain = try MetadataTestPKI.Chain()
        let metadata = MetadataService(configuration: try chain.configuration)
        try metadata.load(jwt: Self.blob(no: 1, status: "FIDO_CERTIFIED_L1", chain: chain))
        let source = Source(try Self.blob(no: 2, status: "REVOKED", chain: chain))
        let refresher = MetadataRefresher(metadata: metadata, source: source, context: h.context, interval: .seconds(3600), initialUpdate: nil)

        // The suspension fails once (a trigger refuses updates of credentials): BLOB 2 is in
        // force, the credential still active.
        try await h.context.pool.withConnection { conn in
            try await conn.execute(
                "CREATE FUNCTION refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$")
            try await conn.execute("CREATE TRIGGER refuse_update BEFORE UPDATE ON credentials FOR EACH ROW EXECUTE FUNCTION refuse_update()")
        }
        await #expect(throws: (any Error).self) { try await refresher.refresh() }
        let revoked = try metadata.isRevokedOrCompromised(MetadataTestPKI.aaguid(Self.model))
        #expect(metadata.currentNumber == 2 && revoked)
        #expect(try await Self.status(h) == "active")
        #expect(await refresher.pending.aaguids == [Self.model])

        // The database is back; the source still holds BLOB 2: the next refresh suspends.
        try await h.context.pool.withConnection { conn in try await conn.execute("DROP TRIGGER refuse_update ON credentials") }
        let outcome = try await refresher.refresh()
        #expect(
            outcome == MetadataRefreshOutcome(changed: false, number: 2, previousNumber: 2, newlyRevokedAAGUIDs: [Self.model], credentialsSuspended: 1))
        #expect(try await Self.status(h) == "suspended")
        let event = try #require(try await h.published().last { $0.type == CredentialStatusChanged.eventType })
        #expect(try EventCoding.decode(CredentialStatusChanged.self, from: Array(event.data.utf8)).status == "suspended")
        #expect(await refresher.pending.isEmpty)

        // Nothing is left to do: the same BLOB again changes nothing.
        let again = try await refresher.refresh()
        #expect(again == MetadataRefreshOutcome(changed: false, number: 2, previousNumber: 2, newlyRevokedAAGUIDs: [], credentialsSuspended: 0))
    }

    static func accepted(_ h: Harness) async throws -> Int64? {
        try await h.context.pool.withConnection { conn in try await conn.query("SELECT number FROM mds_state").first?.int64("number") }
    }

    /// MDS 3.0 §3.2 across restarts and replicas: the highest BLOB number accepted is kept in
    /// the database; a replica (or a restart) served an older BLOB withdraws it, refuses older
    /// ones, and takes the next newer one. Before, the number lived in memory only: a restarted
    /// replica installed whatever BLOB verified first, giving back statuses a newer one revoked.
    @Test func anOlderBLOBThanOneAcceptedBeforeIsNotInForce() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let chain = try MetadataTestPKI.Chain()
        // Replica A accepted BLOB 5, in which the model is revoked.
        let a = MetadataService(configuration: try chain.configuration)
        try a.load(jwt: Self.blob(no: 5, status: "REVOKED", chain: chain))
        let refresherA = MetadataRefresher(
            metadata: a, source: Source(try Self.blob(no: 5, status: "REVOKED", chain: chain)), context: h.context, interval: .seconds(3600),
            initialUpdate: nil)
        await refresherA.holdFloor()
        #expect(try await Self.accepted(h) == 5)

        // Replica B (or A restarted) is served BLOB 3, where the model was still certified.
        let b = MetadataService(configuration: try chain.configuration)
        try b.load(jwt: Self.blob(no: 3, status: "FIDO_CERTIFIED_L1", chain: chain))
        let source = Source(try Self.blob(no: 4, status: "FIDO_CERTIFIED_L1", chain: chain))
        let refresherB = MetadataRefresher(metadata: b, source: source, context: h.context, interval: .seconds(3600), initialUpdate: nil)
        await refresherB.holdFloor()
        #expect(b.blob == nil, "a BLOB older than one accepted before is withdrawn")
        // An older one than 5 still does not load; 6 does, and is kept as the new floor.
        let older = try await refresherB.refresh()
        #expect(!older.changed && b.blob == nil)
        source.text.withLock { $0 = (try? Self.blob(no: 6, status: "REVOKED", chain: chain)) ?? "" }
        let newer = try await refresherB.refresh()
        #expect(newer.changed && newer.number == 6 && b.currentNumber == 6)
        #expect(try b.isRevokedOrCompromised(MetadataTestPKI.aaguid(Self.model)))
        #expect(try await Self.accepted(h) == 6)
        // The number never goes down: A recording its 5 again leaves 6.
        await refresherA.holdFloor()
        #expect(try await Self.accepted(h) == 6 && a.blob == nil)
    }

    static func kept(_ h: Harness) async throws -> (number: Int64?, revocation: String?) {
        try await h.context.pool.withConnection { conn in
            let row = try await conn.query("SELECT number, revocation FROM mds_kept_blob").first
            return (row?.int64("number"), row?.string("revocation"))
        }
    }

    /// The FIDO metadata's source (a third party's server and its CRLs) may be down when a
    /// replica starts. Each BLOB a replica accepts is kept in the database; a replica whose
    /// source fails installs the kept one, verified again, with what it revokes to apply.
    /// Before, the registration service did not start at all while the source was down.
    @Test func aReplicaWhoseSourceIsDownInstallsTheBLOBAnotherKept() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let chain = try MetadataTestPKI.Chain()
        // Replica A accepts BLOB 3 (the model revoked) from its source, and keeps it; an older
        // BLOB does not replace it.
        let a = MetadataService(configuration: try chain.configuration)
        let refresherA = MetadataRefresher(
            metadata: a, source: Source(try Self.blob(no: 3, status: "REVOKED", chain: chain)), context: h.context, interval: .seconds(3600),
            initialUpdate: nil)
        #expect(try await refresherA.refresh().changed && a.currentNumber == 3)
        // With how its signing chain's revocation was checked when it was accepted.
        let checked = try await MetadataService(configuration: try chain.configuration).load(
            from: Source(try Self.blob(no: 3, status: "REVOKED", chain: chain))
        ).revocation
        let keptByA = try await Self.kept(h)
        #expect(keptByA.number == 3 && keptByA.revocation == checked.rawValue && checked != .kept)

        // Replica B starts with its source down: nothing in force, until the kept BLOB is.
        let b = MetadataService(configuration: try chain.configuration)
        let refresherB = MetadataRefresher(metadata: b, source: Source(""), context: h.context, interval: .seconds(3600), initialUpdate: nil)
        #expect(b.blob == nil)
        #expect(await refresherB.installKept())
        let revoked = try b.isRevokedOrCompromised(MetadataTestPKI.aaguid(Self.model))
        #expect(b.currentNumber == 3 && revoked)
        #expect(await refresherB.pending.aaguids == [Self.model], "as a first load: every model it revokes, to suspend")
        // Something in force: nothing more is installed; a failing refresh keeps BLOB 3.
        #expect(await !refresherB.installKept())
        await #expect(throws: MetadataError.self) { try await refresherB.refresh() }
        let pendingAfter = await refresherB.pending
        #expect(b.currentNumber == 3 && pendingAfter.isEmpty)
        // Its source failing, the kept BLOB (perhaps older than the source's) is not left for
        // the whole interval: the next try comes sooner.
        #expect(await refresherB.nextWait() == .seconds(60))
        #expect(await refresherA.nextWait() == .seconds(3600))

        // Replica C, served an older BLOB than the one accepted: refused, and the kept one
        // installed in the same refresh; the kept copy stays number 3.
        let c = MetadataService(configuration: try chain.configuration)
        let refresherC = MetadataRefresher(
            metadata: c, source: Source(try Self.blob(no: 2, status: "FIDO_CERTIFIED_L1", chain: chain)), context: h.context,
            interval: .seconds(3600), initialUpdate: nil)
        let outcome = try await refresherC.refresh()
        #expect(outcome.changed && outcome.number == 3 && c.currentNumber == 3)
        let keptAfterC = try await Self.kept(h)
        #expect(keptAfterC.number == 3)

        // The kept copy is verified again: one signed by a chain the replica does not trust (a
        // database written by someone else) is not installed.
        let other = try MetadataTestPKI.Chain()
        let forged = try Self.blob(no: 9, status: "FIDO_CERTIFIED_L1", chain: other)
        try await h.context.pool.withConnection { conn in try await conn.query("UPDATE mds_kept_blob SET jwt = \(forged), number = 9") }
        let d = MetadataService(configuration: try chain.configuration)
        let refresherD = MetadataRefresher(metadata: d, source: Source(""), context: h.context, interval: .seconds(3600), initialUpdate: nil)
        #expect(await !refresherD.installKept())
        #expect(d.blob == nil)
    }

    /// While no BLOB is in force, the refresher tries the source again sooner than its
    /// interval (doubling each time), and goes back to the interval once one is.
    @Test func withoutABLOBTheSourceIsTriedAgainSoon() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let chain = try MetadataTestPKI.Chain()
        let metadata = MetadataService(configuration: try chain.configuration)
        let source = Source("")
        let refresher = MetadataRefresher(
            metadata: metadata, source: source, context: h.context, interval: .seconds(3600), initialUpdate: nil,
            retryWithoutBLOB: .milliseconds(100))
        #expect(await refresher.nextWait() == .milliseconds(100))
        #expect(await refresher.nextWait() == .milliseconds(200))
        #expect(await refresher.nextWait() == .milliseconds(400))

        // Running: the source comes back, and the next try installs its BLOB well before the
        // hour's interval.
        let metrics = MetricsRegistry()
        let fresh = MetadataRefresher(
            metadata: metadata, source: source, context: h.context, interval: .seconds(3600), initialUpdate: nil,
            initialFailure: "metadata_source_unavailable", retryWithoutBLOB: .milliseconds(100), metrics: metrics)
        let running = Task { try await fresh.run() }
        try await Task.sleep(for: .milliseconds(250))
        #expect(metadata.blob == nil)
        // What an operator's alert reads: nothing in force, and the source failing.
        let down = metrics.render()
        #expect(down.contains("signet_mds_blob_number 0\n"), "\(down)")
        #expect(down.contains("signet_mds_source_ok_timestamp_seconds 0\n"), "never answered")
        let failures = down.split(separator: "\n").first { $0.hasPrefix(#"signet_mds_refresh_failures_total{code="metadata_source_unavailable"} "#) }
        #expect((failures?.split(separator: " ").last).flatMap { Double($0) } ?? 0 >= 2, "the start-up's failure and a retry's: \(down)")
        source.text.withLock { $0 = (try? Self.blob(no: 4, status: "FIDO_CERTIFIED_L1", chain: chain)) ?? "" }
        let deadline = ContinuousClock.now + .seconds(20)
        while metadata.blob == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(metadata.currentNumber == 4)
        #expect(await fresh.nextWait() == .seconds(3600))
        let up = metrics.render()
        let answered = up.split(separator: "\n").first { $0.hasPrefix("signet_mds_source_ok_timestamp_seconds ") }
        #expect(up.contains("signet_mds_blob_number 4\n") && (answered?.split(separator: " ").last).flatMap { Double($0) } ?? 0 > 1_700_000_000, "\(up)")
        await fresh.shutdown()
        try await running.value
        // Once a BLOB is in force, the waits are the interval again.
        #expect(await refresher.nextWait() == .seconds(3600))
    }

    /// ../shared/vectors, from this file (Tests/RegistrationServiceTests/…).
    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../shared/vectors").standardizedFileURL
    static let conformanceBLOB = "mds3_blob_simplewebauthn_conformance.jwt"
    static var vectorsPresent: Bool {
        ["mds.json", conformanceBLOB].allSatisfy { FileManager.default.fileExists(atPath: vectors.appendingPathComponent($0).path) }
    }

    /// A real BLOB's size through the database: the FIDO conformance BLOB (2.2 MB, from
    /// ../shared/vectors) accepted and kept by one replica, installed whole by another.
    @Test(
        .enabled(if: Self.vectorsPresent || ProcessInfo.processInfo.environment["CI"] != nil,
            "skipped: shared vectors not found at ../shared/vectors (set CI to make this a failure)"))
    func aMultiMegabyteBLOBIsKeptAndInstalledWhole() async throws {
        try #require(Self.vectorsPresent, "MDS vectors missing at \(Self.vectors.path)")
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let mds = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.vectors.appendingPathComponent("mds.json"))) as? [String: Any])
        let roots = (mds["root_certificates"] as? [[String: Any]]) ?? []
        let rootPEM = try #require(roots.first { ($0["name"] as? String)?.contains("FAKE Root") == true }?["pem"] as? String)
        let configuration = MetadataBLOB.Configuration(roots: [try X509Certificate(pem: rootPEM)])
        let text = try String(contentsOf: Self.vectors.appendingPathComponent(Self.conformanceBLOB), encoding: .utf8)

        let a = MetadataService(configuration: configuration)
        let refresherA = MetadataRefresher(metadata: a, source: Source(text), context: h.context, interval: .seconds(3600), initialUpdate: nil)
        #expect(try await refresherA.refresh().changed)
        let length = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT octet_length(jwt) AS n FROM mds_kept_blob").first?.int64("n")
        }
        #expect(length == Int64(text.utf8.count))

        let b = MetadataService(configuration: configuration)
        let refresherB = MetadataRefresher(metadata: b, source: Source(""), context: h.context, interval: .seconds(3600), initialUpdate: nil)
        #expect(await refresherB.installKept())
        let entriesA = a.blob?.entries.count ?? 0
        #expect(b.currentNumber == a.currentNumber && b.blob?.entries.count == entriesA && entriesA > 0)
    }
}


import Crypto
import Delivery
import FIDO
import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// Keeps the FIDO metadata (MDS3) current: loads the BLOB again on a schedule (and when an
/// administrator asks), and when a newer BLOB reports a model revoked or compromised, suspends
/// the credentials already registered with it (status reason `authenticator_revoked`), each
/// with its `CredentialStatusChanged` event, so sign-in refuses them too.
///
/// A newer BLOB is in force (registrations refuse its revoked models) as soon as it verifies;
/// its suspensions follow in the database. Those that did not commit (the database failed) are
/// kept as ``Pending`` and tried again by every later refresh, whether or not the source has a
/// newer BLOB by then, until they commit: before, the next refresh found the same BLOB "not
/// newer" and the suspensions waited for a restart.
///
/// Each BLOB it accepts is kept in the database (`mds_kept_blob`, the newest one): a replica
/// whose source is down when it starts — the registration service starts all the same — or
/// that withdrew an older BLOB installs the kept one, verified again (``installKept()``). While
/// nothing is in force, or the source fails, refreshes come sooner: `retryWithoutBLOB`, doubling
/// up to the interval.
///
/// Only FIDO2 models (AAGUIDs) and UAF models (AAIDs) can be matched to stored credentials; U2F
/// attestation key identifiers in the update are logged, not matched.
///
/// An actor: its state is whether a refresh is running (the start-up application, scheduled
/// and requested refreshes run one at a time) and the pending suspensions. Loading and
/// verifying the BLOB and suspending credentials run outside it (``MetadataService`` verifies
/// on a queue of its own; libpq through the pool).
actor MetadataRefresher: Service {
    nonisolated let name = "metadata-refresher"
    nonisolated let metadata: MetadataService
    nonisolated let source: any MetadataSource
    nonisolated let context: ServiceContext
    nonisolated let interval: Duration
    /// The update of the load at start-up, applied once the database is there.
    nonisolated let initialUpdate: MetadataUpdate?
    /// The text of the BLOB loaded at start-up, kept in the database once it is there.
    private var initialText: String?
    /// The first wait before a refresh while no BLOB is in force.
    nonisolated let retryWithoutBLOB: Duration
    private nonisolated let schedule: PeriodicTask
    /// A refresh is running.
    private var refreshing = false
    /// The last wait while no BLOB was in force or the source failed (nil otherwise).
    private var retryDelay: Duration?
    /// The last load from the source failed (other than with a BLOB not newer).
    private var sourceFailing = false
    /// Why the load at start-up failed (a ``MetadataError`` code), counted when the refresher runs.
    private let initialFailure: String?
    /// Where the metrics go: `signet_mds_blob_number` (the BLOB in force, 0 when none),
    /// `signet_mds_source_ok_timestamp_seconds` (when the source last gave a BLOB that verified,
    /// newer or not) and `signet_mds_refresh_failures_total` by `code`.
    private nonisolated let metrics: MetricsRegistry
    private nonisolated let numberGauge: Gauge
    private nonisolated let sourceOK: Gauge
    /// What installed BLOBs still ask of the database.
    private(set) var pending = Pending()

    /// Suspensions and republication the BLOBs in force ask for and the database has not
    /// committed yet. Each part is cleared when its transaction commits.
    struct Pending: Sendable, Equatable {
        /// FIDO2 models whose active credentials are to be suspended.
        var aaguids: Set<String> = []
        /// UAF models (upper case) whose active keys are to be suspended.
        var aaids: Set<String> = []
        /// FIDO policies with a minimum certification level are to be published again.
        var republish = false

        var isEmpty: Bool { aaguids.isEmpty && aaids.isEmpty && !republish }

        /// Adds what `update` asks for.
        mutating func add(_ update: MetadataUpdate) {
            aaguids.formUnion(update.newlyRevokedAAGUIDs.map { $0.description })
            aaids.formUnion(update.newlyRevokedAAIDs.map { $0.uppercased() })
            republish = true
        }
    }

    init(
        metadata: MetadataService, source: any MetadataSource, context: ServiceContext, interval: Duration, initialUpdate: MetadataUpdate?,
        initialText: String? = nil, initialFailure: String? = nil, retryWithoutBLOB: Duration = .seconds(60), metrics: MetricsRegistry = .shared
    ) {
        self.metadata = metadata
        self.source = source
        self.context = context
        self.interval = interval
        self.initialUpdate = initialUpdate
        self.initialText = initialText
        self.retryWithoutBLOB = retryWithoutBLOB
        self.initialFailure = initialFailure
        self.metrics = metrics
        numberGauge = Gauge(label: "signet_mds_blob_number", registry: metrics)
        sourceOK = Gauge(label: "signet_mds_source_ok_timestamp_seconds", registry: metrics)
        schedule = PeriodicTask(interval: interval)
    }

    /// The metrics of the BLOB in force, and of the source's answer (nil: nothing from it).
    private func record(sourceAnswered: Bool, failure: String? = nil) {
        numberGauge.record(metadata.currentNumber ?? 0)
        if sourceAnswered { sourceOK.record(Date().timeIntervalSince1970.rounded(.down)) }
        if let failure { Counter(label: "signet_mds_refresh_failures_total", dimensions: [("code", failure)], registry: metrics).increment() }
    }

    typealias Outcome = MetadataRefreshOutcome

    func run() async throws {
        await holdFloor()
        if let initialUpdate {
            take(initialUpdate)
            if let text = initialText { await keep(text, update: initialUpdate) }
        }
        initialText = nil
        // Nothing in force (the source failed at start-up, or served a BLOB older than one
        // accepted before): the one kept in the database, if it verifies.
        await installKept()
        record(sourceAnswered: initialUpdate != nil, failure: initialFailure)
        sourceFailing = initialFailure != nil
        if !pending.isEmpty {
            do {
                _ = try await applyPendingUnlessRefreshing()
            } catch {
                context.logger.error(
                    "suspending credentials of revoked authenticators failed; the next refresh tries again",
                    metadata: [LogKey.error: "\(error)"])
            }
        }
        // A failed refresh leaves the BLOB in force (and what it asks of the database pending);
        // the next turn tries again — sooner while none is in force.
        await schedule.run(logger: context.logger, failure: "FIDO metadata refresh failed", nextWait: { await self.nextWait() }) {
            _ = try await self.refresh()
        }
    }

    /// How long the schedule waits before the next refresh: the interval while a BLOB is in
    /// force and the source answered last time; otherwise (no BLOB, or the source failed: the
    /// BLOB in force may be a kept one, older than the source's) `retryWithoutBLOB`, doubled
    /// after each such wait, up to the interval.
    func nextWait() -> Duration {
        let none = metadata.blob == nil
        guard none || sourceFailing else {
            retryDelay = nil
            return interval
        }
        let next = retryDelay.map { min($0 * 2, interval) } ?? min(retryWithoutBLOB, interval)
        retryDelay = next
        context.logger.warning(
            none
                ? "no FIDO metadata in force: attestations find no model's roots or status; refreshing again soon"
                : "the FIDO metadata source failed; the BLOB in force stays, refreshing again soon",
            metadata: ["signet.mds.retry_seconds": "\(next.components.seconds)"])
        return next
    }

    /// Keeps the text of a BLOB just accepted in the database, unless a newer one is kept
    /// already. A failure is logged: the BLOB stays in force here, and the next accepted one is
    /// kept in its place.
    private func keep(_ text: String, update: MetadataUpdate) async {
        do {
            try await context.pool.withConnection { conn in
                try await conn.query(
                    """
                    INSERT INTO mds_kept_blob (id, number, jwt, revocation, accepted_at)
                    VALUES (true, \(Int64(update.number)), \(text), \(update.revocation.rawValue), now())
                    ON CONFLICT (id) DO UPDATE SET number = EXCLUDED.number, jwt = EXCLUDED.jwt, revocation = EXCLUDED.revocation,
                        accepted_at = EXCLUDED.accepted_at
                    WHERE mds_kept_blob.number < EXCLUDED.number
                    """)
            }
        } catch {
            context.logger.warning(
                "the FIDO metadata BLOB in force could not be kept in the database; it stays in force here",
                metadata: ["signet.mds.number": "\(update.number)", LogKey.error: "\(error)"])
        }
    }

    /// When no BLOB is in force, installs the one kept in the database (the newest the
    /// deployment accepted), verified again (``MetadataService/load(kept:at:)``), and adds what
    /// it asks of the database to ``pending`` (as a first load: every model it revokes).
    ///
    /// - Returns: whether a BLOB was installed.
    @discardableResult
    func installKept() async -> Bool {
        guard metadata.blob == nil else { return false }
        do {
            guard let row = try await context.pool.withConnection({ conn in
                try await conn.query("SELECT jwt, revocation FROM mds_kept_blob WHERE id").first
            }), let text = row.string("jwt")
            else { return false }
            let update = try await metadata.load(kept: text)
            take(update)
            context.logger.notice(
                "FIDO metadata installed from the copy kept in the database",
                metadata: [
                    "signet.mds.number": "\(update.number)", "signet.mds.revoked_models": "\(update.newlyRevokedAAGUIDs.count)",
                    "signet.mds.revocation": .string(update.revocation.rawValue),
                    "signet.mds.revocation_when_accepted": .string(row.string("revocation") ?? ""),
                ])
            return true
        } catch {
            context.logger.warning(
                "the FIDO metadata kept in the database could not be installed", metadata: [LogKey.error: "\(error)"])
            return false
        }
    }

    func shutdown() async { await schedule.stopRunning() }

    /// Applies the start-up load's update (the BLOB is already in force). Whatever does not
    /// commit — or waits because a refresh is running — stays pending for the next refresh.
    ///
    /// - Returns: How many credentials and UAF keys were suspended.
    func applyInitial(_ update: MetadataUpdate) async throws -> Int {
        take(update)
        return try await applyPendingUnlessRefreshing()
    }

    /// ``applyPending()`` as a refresh of its own (a running refresh applies them itself).
    private func applyPendingUnlessRefreshing() async throws -> Int {
        guard !refreshing else { throw MetadataError(.sourceUnavailable, "a refresh is already running") }
        refreshing = true
        defer { refreshing = false }
        return try await applyPending()
    }

    /// Adds what a newly installed BLOB asks of the database to ``pending``.
    private func take(_ update: MetadataUpdate) {
        pending.add(update)
        if !update.newlyRevokedKeyIdentifiers.isEmpty {
            context.logger.notice(
                "revoked U2F models are not matched to credentials",
                metadata: ["signet.mds.key_identifiers": "\(update.newlyRevokedKeyIdentifiers.count)"])
        }
    }

    /// Loads the source's BLOB; a newer one is installed, and its revocations — with any an
    /// earlier refresh could not commit — applied.
    ///
    /// - Throws: `MetadataError` when the BLOB cannot be read or does not verify (the one in
    ///   force stays; pending suspensions are tried first), or a database error while
    ///   suspending credentials (what did not commit stays pending for the next refresh).
    func refresh() async throws -> Outcome {
        guard !refreshing else {
            throw MetadataError(.sourceUnavailable, "a refresh is already running")
        }
        refreshing = true
        defer { refreshing = false }
        // Another replica may have accepted a newer BLOB meanwhile: nothing older loads here.
        await holdFloor()
        let loaded: Result<(update: MetadataUpdate, text: String), MetadataError>
        do {
            loaded = .success(try await metadata.loadKeepingText(from: source))
        } catch {
            loaded = .failure(error)
        }
        if case .success = loaded { await holdFloor() }
        let update: MetadataUpdate?
        switch loaded {
        case .success(let (new, text)):
            update = new
            take(new)
            await keep(text, update: new)
            record(sourceAnswered: true)
            sourceFailing = false
            context.logger.notice(
                "FIDO metadata updated",
                metadata: [
                    "signet.mds.number": "\(new.number)", "signet.mds.revoked_models": "\(new.newlyRevokedAAGUIDs.count)",
                    "signet.mds.revocation": .string(new.revocation.rawValue),
                ])
        case .failure(let error):
            // A failed load leaves the BLOB in force (without one, the kept one is installed),
            // and what it still asks of the database is tried all the same.
            guard error.code == .notNewer else {
                await installKept()
                record(sourceAnswered: false, failure: error.code.rawValue)
                sourceFailing = true
                if !pending.isEmpty { _ = try await applyPending() }
                throw error
            }
            update = nil
            record(sourceAnswered: true)
            sourceFailing = false
        }
        // Nothing in force (the source's BLOB was older than the floor, or withdrawn by it).
        let installedKept = await installKept()
        if installedKept { record(sourceAnswered: false) }
        let revoked = pending.aaguids.sorted()
        if update == nil, !pending.isEmpty {
            context.logger.notice("retrying the suspensions of revoked authenticator models", metadata: ["signet.mds.revoked_models": "\(revoked.count)"])
        }
        let suspended = try await applyPending()
        // Without a newer BLOB, the one in force is both the number and the previous one.
        let current = metadata.currentNumber
        let previous = installedKept ? nil : update.map(\.previousNumber) ?? current
        return Outcome(
            changed: update != nil || installedKept, number: update?.number ?? current, previousNumber: previous,
            newlyRevokedAAGUIDs: revoked, credentialsSuspended: suspended)
    }

    /// MDS 3.0 §3.2 (a BLOB whose `no` is not greater than the last one's is ignored) across
    /// restarts and replicas: the highest number the deployment accepted is kept in `mds_state`
    /// (RegistrationMigrations 220). It becomes the metadata's floor (a BLOB in force below it,
    /// one served to this replica at start-up, is withdrawn: lookups find nothing until a newer
    /// one loads), and the number in force is recorded. A database failure is logged; the next
    /// refresh does it again.
    func holdFloor() async {
        do {
            // One statement: the number in force recorded (never lowering the one kept), and
            // the highest accepted read back.
            let current = metadata.currentNumber
            let accepted = try await context.pool.withConnection { conn in
                if let current {
                    return try await conn.query(
                        """
                        INSERT INTO mds_state (id, number, recorded_at) VALUES (true, \(Int64(current)), now())
                        ON CONFLICT (id) DO UPDATE SET number = GREATEST(mds_state.number, EXCLUDED.number), recorded_at = EXCLUDED.recorded_at
                        RETURNING number
                        """
                    ).first?.int64("number")
                }
                return try await conn.query("SELECT number FROM mds_state WHERE id").first?.int64("number")
            }
            defer { numberGauge.record(metadata.currentNumber ?? 0) }
            if let accepted, metadata.raiseFloor(to: Int(accepted)) {
                context.logger.error(
                    "the FIDO metadata BLOB in force is older than one accepted before: withdrawn until a newer one loads",
                    metadata: ["signet.mds.number_accepted": "\(accepted)"])
            }
        } catch {
            context.logger.warning(
                "the FIDO metadata number accepted before could not be read or kept; the next refresh tries again",
                metadata: [LogKey.error: "\(error)"])
        }
    }

    /// Suspends the active credentials of the pending models and republishes the policies,
    /// clearing each part of ``pending`` once its transaction has committed.
    ///
    /// - Returns: How many credentials and UAF keys were suspended.
    private func applyPending() async throws -> Int {
        var suspended = 0
        // FIDO UAF keys of newly revoked AAIDs are suspended as FIDO2 credentials are.
        let aaids = pending.aaids.sorted()
        if !aaids.isEmpty {
            suspended += try await Self.suspend(aaids: aaids, context: context, at: Date())
            pending.aaids.subtract(aaids)
        }
        let aaguids = pending.aaguids.sorted()
        if !aaguids.isEmpty {
            suspended += try await Self.suspend(aaguids: aaguids, context: context, at: Date())
            pending.aaguids.subtract(aaguids)
        }
        if suspended > 0 {
            context.logger.warning("credentials of revoked authenticator models suspended", metadata: ["signet.count": "\(suspended)"])
        }
        if pending.republish {
            // Sign-in checks a minimum certification level against the models the metadata
            // certifies: policies that set one are published again with the new list.
            let republished = try await FIDOPolicyStore.republishCertified(metadata: metadata, context: context, at: Date())
            pending.republish = false
            if republished > 0 {
                context.logger.info("FIDO policies with a minimum certification level published again", metadata: ["signet.count": "\(republished)"])
            }
        }
        return suspended
    }

    /// Suspends the active UAF keys of `aaids` (upper case), each with its event, in one transaction.
    private static func suspend(aaids: [String], context: ServiceContext, at now: Date) async throws -> Int {
        try await context.withTransaction { conn in
            let rows = try await conn.query(
                """
                UPDATE uaf_registrations SET status = 'suspended'
                WHERE aaid = ANY(\(PostgresArray(aaids))::text[]) AND status = 'active'
                RETURNING tenant_id, aaid, key_id
                """)
            for row in rows {
                guard let tenant = row.string("tenant_id"), let aaid = row.string("aaid"), let id = row.bytes("key_id") else { continue }
                try await Outbox.enqueue(
                    UAFAuthenticatorStatusChanged(tenantId: tenant, aaid: aaid, keyId: Base64URL.encode(id), status: "suspended", changedAt: now),
                    source: .registration, subject: tenant, key: tenant, on: conn)
            }
            return rows.count
        }
    }

    /// Suspends the active credentials of `aaguids`, each with its event, in one transaction.
    private static func suspend(aaguids: [String], context: ServiceContext, at now: Date) async throws -> Int {
        try await context.withTransaction { conn in
            let rows = try await conn.query(
                """
                UPDATE credentials SET status = 'suspended', status_reason = 'authenticator_revoked'
                WHERE aaguid = ANY(\(PostgresArray(aaguids))::uuid[]) AND status = 'active'
                RETURNING tenant_id, credential_id
                """)
            for row in rows {
                guard let tenant = row.string("tenant_id"), let id = row.bytes("credential_id") else { continue }
                try await Outbox.enqueue(
                    CredentialStatusChanged(tenantId: tenant, credentialId: Base64URL.encode(id), status: "suspended", changedAt: now),
                    source: .registration, subject: tenant, key: tenant, on: conn)
            }
            return rows.count
        }
    }
}

/// An MDS3 BLOB downloaded over HTTPS (`SIGNET_MDS_BLOB_URL`), bounded in size. Plain `http`
/// is refused, for the URL and for every redirect: there is no test or local-stack exception
/// (they load the BLOB from a file, `SIGNET_MDS_BLOB_FILE`).
struct MetadataURLSource: MetadataSource {
    let url: URL

    /// A source for an `https` URL with a host; nil for any other.
    init?(url: URL) {
        guard url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty else { return nil }
        self.url = url
    }

    /// Its own lane: a download of up to a minute never holds up the shared client's calls.
    static let client = HTTPClient(label: "signet.mds", lanes: 1)

    func fetchBLOB(maximumSize: Int) async throws(MetadataError) -> String {
        let data = try await get(url.absoluteString, what: "the metadata URL", timeout: .seconds(60), maximumSize: maximumSize, httpsOnly: true) {
            MetadataError(.sourceUnavailable, $0)
        } tooLarge: {
            MetadataError(.tooLarge, "the BLOB exceeds \(maximumSize) bytes")
        }
        guard let text = String(validating: data, as: UTF8.self) else { throw MetadataError(.malformed, "the BLOB is not UTF-8") }
        return text
    }

    /// A CRL named by the BLOB's (already validated) signing chain, over `http` or `https`: a
    /// CRL is signed by its issuer and checked as such (RFC 5280 distribution points are
    /// usually plain `http`). Bounded in size and time, on the same lane as the BLOB.
    func fetchCRL(url: String, maximumSize: Int) async throws(MetadataError) -> [UInt8]? {
        try await get(url, what: "a CRL location named by the signing chain", timeout: .seconds(30), maximumSize: maximumSize, httpsOnly: false) {
            MetadataError(.revocationUnknown, $0)
        } tooLarge: {
            MetadataError(.revocationUnknown, "a CRL named by the signing chain exceeds \(maximumSize) bytes")
        }
    }

    /// One bounded `GET` on this source's lane (redirects followed; with `httpsOnly`, never to
    /// plain `http`): the body of a 200 answer within `maximumSize`, else `unavailable`'s error
    /// (unreachable, another status) or `tooLarge`'s.
    private func get(
        _ url: String, what: String, timeout: Duration, maximumSize: Int, httpsOnly: Bool, unavailable: (String) -> MetadataError,
        tooLarge: () -> MetadataError
    ) async throws(MetadataError) -> [UInt8] {
        let answer: HTTPClient.Response
        do {
            answer = try await Self.client.send(
                "GET", url, headers: ["User-Agent: signet-registration"], timeout: timeout, responseLimit: maximumSize, followRedirects: true,
                httpsOnly: httpsOnly)
        } catch {
            throw unavailable("\(what) could not be read")
        }
        guard answer.status == 200 else { throw unavailable("\(what) did not answer 200") }
        guard !answer.truncated else { throw tooLarge() }
        return answer.body
    }
}

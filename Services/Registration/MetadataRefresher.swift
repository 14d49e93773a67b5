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
/// Only FIDO2 models (AAGUIDs) can be matched to stored credentials; U2F attestation key
/// identifiers and UAF AAIDs in the update are logged, not matched.
///
/// An actor: its state is whether a refresh is running (scheduled and requested refreshes run
/// one at a time). Loading and verifying the BLOB and suspending credentials run outside it
/// (``MetadataService`` verifies on a queue of its own; libpq through the pool).
actor MetadataRefresher: Service {
    nonisolated let name = "metadata-refresher"
    nonisolated let metadata: MetadataService
    nonisolated let source: any MetadataSource
    nonisolated let context: ServiceContext
    nonisolated let interval: Duration
    /// The update of the load at start-up, applied once the database is there.
    nonisolated let initialUpdate: MetadataUpdate?
    private nonisolated let schedule: PeriodicTask
    /// A refresh is running.
    private var refreshing = false

    init(metadata: MetadataService, source: any MetadataSource, context: ServiceContext, interval: Duration, initialUpdate: MetadataUpdate?) {
        self.metadata = metadata
        self.source = source
        self.context = context
        self.interval = interval
        self.initialUpdate = initialUpdate
        schedule = PeriodicTask(interval: interval)
    }

    typealias Outcome = MetadataRefreshOutcome

    func run() async throws {
        if let initialUpdate {
            do {
                _ = try await apply(initialUpdate)
            } catch {
                context.logger.error("suspending credentials of revoked authenticators failed", metadata: [LogKey.error: "\(error)"])
            }
        }
        // A failed refresh leaves the BLOB in force; the next turn tries again.
        await schedule.run(logger: context.logger, failure: "FIDO metadata refresh failed") { _ = try await self.refresh() }
    }

    func shutdown() async { await schedule.stopRunning() }

    /// Loads the source's BLOB; a newer one is installed and its revocations applied.
    ///
    /// - Throws: `MetadataError` when the BLOB cannot be read or does not verify (the one in
    ///   force stays), or a database error while suspending credentials.
    func refresh() async throws -> Outcome {
        guard !refreshing else {
            throw MetadataError(.sourceUnavailable, "a refresh is already running")
        }
        refreshing = true
        defer { refreshing = false }
        let loaded: Result<MetadataUpdate, MetadataError>
        do {
            loaded = .success(try await metadata.load(from: source))
        } catch {
            loaded = .failure(error)
        }
        guard case .success(let update) = loaded else {
            if case .failure(let error) = loaded, error.code != .notNewer { throw error }
            return Outcome(
                changed: false, number: metadata.currentNumber, previousNumber: metadata.currentNumber, newlyRevokedAAGUIDs: [],
                credentialsSuspended: 0)
        }
        context.logger.notice(
            "FIDO metadata updated",
            metadata: ["signet.mds.number": "\(update.number)", "signet.mds.revoked_models": "\(update.newlyRevokedAAGUIDs.count)"])
        return try await apply(update)
    }

    /// Suspends the active credentials of the models `update` newly revokes.
    nonisolated func apply(_ update: MetadataUpdate) async throws -> Outcome {
        let aaguids = update.newlyRevokedAAGUIDs.map { $0.description }
        if !update.newlyRevokedKeyIdentifiers.isEmpty {
            context.logger.notice(
                "revoked U2F models are not matched to credentials",
                metadata: ["signet.mds.key_identifiers": "\(update.newlyRevokedKeyIdentifiers.count)"])
        }
        var suspended = 0
        // FIDO UAF keys of newly revoked AAIDs are suspended as FIDO2 credentials are.
        let aaids = update.newlyRevokedAAIDs.map { $0.uppercased() }
        if !aaids.isEmpty {
            let now = Date()
            suspended += try await context.withTransaction { conn in
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
        if !aaguids.isEmpty {
            let now = Date()
            suspended += try await context.withTransaction { conn in
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
            if suspended > 0 {
                context.logger.warning("credentials of revoked authenticator models suspended", metadata: ["signet.count": "\(suspended)"])
            }
        }
        // Sign-in checks a minimum certification level against the models the metadata
        // certifies: policies that set one are published again with the new list.
        let republished = try await FIDOPolicyStore.republishCertified(metadata: metadata, context: context, at: Date())
        if republished > 0 {
            context.logger.info("FIDO policies with a minimum certification level published again", metadata: ["signet.count": "\(republished)"])
        }
        return Outcome(
            changed: true, number: update.number, previousNumber: update.previousNumber, newlyRevokedAAGUIDs: aaguids,
            credentialsSuspended: suspended)
    }
}

/// An MDS3 BLOB downloaded over HTTPS (`SIGNET_MDS_BLOB_URL`), bounded in size.
struct MetadataURLSource: MetadataSource {
    let url: URL

    /// Its own lane: a download of up to a minute never holds up the shared client's calls.
    static let client = HTTPClient(label: "signet.mds", lanes: 1)

    func fetchBLOB(maximumSize: Int) async throws(MetadataError) -> String {
        let answer: HTTPClient.Response
        do {
            answer = try await Self.client.send(
                "GET", url.absoluteString, headers: ["User-Agent: signet-registration"], timeout: .seconds(60), responseLimit: maximumSize,
                followRedirects: true)
        } catch {
            throw MetadataError(.sourceUnavailable, "the metadata URL could not be read")
        }
        guard answer.status == 200 else { throw MetadataError(.sourceUnavailable, "the metadata URL did not answer 200") }
        guard !answer.truncated else { throw MetadataError(.tooLarge, "the BLOB exceeds \(maximumSize) bytes") }
        let data = answer.body
        guard let text = String(validating: data, as: UTF8.self) else { throw MetadataError(.malformed, "the BLOB is not UTF-8") }
        return text
    }
}

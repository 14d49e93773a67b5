import Crypto
import FoundationEssentials
import HTTPServer
import Postgres
import ServiceKit

/// How many confirmation codes setting up `email_otp` and `sms_otp` methods sends, decided
/// before anything is stored or sent: ``perUser`` setups per user and ``perDestination`` per
/// address or number (from every user of the tenant together) over a sliding ``window``; past
/// either, 429 `code_send_limited` with `Retry-After`. Each setup is a new method, so the
/// sign-in's budget (per method, in the authentication service) never saw them: any caller the
/// route lets in (an RP key, a user's own session, a sign-up token) could have sent codes to any
/// number without end (SMS pumping, mail bombing) and grown the vault with each.
///
/// Rows in `method_setup_sends`, shared by every replica, counted and spent under advisory
/// locks (the user's, then the destination's: always in that order). The destination is kept
/// as an HMAC under the code-hash key (`SIGNET_OTP_HASH_KEY`) of tenant, kind and the value
/// (an e-mail address by its mailbox, ``mailbox(_:)``), never the value; the user by subject
/// reference. Rows older than the window go with the retention pass, and a user's with their
/// erasure. While the key is being changed, sends recorded under its accepted keys count too.
struct MethodSetupBudget: Sendable {
    static let window: TimeInterval = 600
    static let perUser = 5
    static let perDestination = 5

    let pool: PostgresPool
    let key: [UInt8]
    /// The keys of `SIGNET_OTP_HASH_KEY_ACCEPTED`: the sends counted under them
    /// still count, so that changing the key does not start every destination's budget afresh.
    var acceptedKeys: [[UInt8]] = []

    /// A destination as the budget counts it: its keyed hash under the key, which new sends are
    /// recorded under, and under each accepted key (earlier sends).
    struct Destination: Sendable, Equatable {
        let hash: [UInt8]
        let underAccepted: [[UInt8]]
    }

    /// The keyed hash a destination is counted under. Only the count uses it: the address the
    /// method stores and the code is sent to stay as given.
    func destination(tenant: String, kind: String, value: String) -> Destination {
        let normalized = kind == "email" ? Self.mailbox(value) : value
        let message = Array("method-setup-destination\0\(tenant)\0\(kind)\0\(normalized)".utf8)
        return Destination(
            hash: HMAC.authenticationCode(.sha256, key: key, message: message),
            underAccepted: acceptedKeys.map { HMAC.authenticationCode(.sha256, key: $0, message: message) })
    }

    /// The mailbox an e-mail address delivers to, as the budget counts it: lower case, and the
    /// local part without a `+tag` subaddress (RFC 5233), so `Ada+1@Example.org` and
    /// `ada@example.org` share one budget rather than each getting five sends. A local part
    /// that starts with `+` is kept whole.
    static func mailbox(_ address: String) -> String {
        let lowered = address.lowercased()
        guard let at = lowered.lastIndex(of: "@") else { return lowered }
        let local = lowered[..<at]
        guard let plus = local.firstIndex(of: "+"), plus != local.startIndex else { return lowered }
        return String(local[..<plus]) + lowered[at...]
    }

    /// Spends one setup's code for the user `subjectRef` to `destination`.
    ///
    /// - Throws: 429 `code_send_limited` with `Retry-After` when a budget is spent.
    func spend(tenant: String, subjectRef: String, destination: Destination, now: Date) async throws {
        let since = now.addingTimeInterval(-Self.window)
        let hex = Hex.encode(destination.hash)
        let hashes = PostgresArray(([destination.hash] + destination.underAccepted).map(PostgresBytes.init))
        let refusedFor: TimeInterval? = try await pool.withTransaction { conn in
            try await conn.query("SELECT pg_advisory_xact_lock(hashtextextended(\("method-setup-user/\(tenant)/\(subjectRef)"), 0))")
            try await conn.query("SELECT pg_advisory_xact_lock(hashtextextended(\("method-setup-destination/\(tenant)/\(hex)"), 0))")
            let row = try await conn.query(
                """
                SELECT u.n AS mine, u.oldest AS oldest_mine, d.n AS total, d.oldest AS oldest
                FROM (SELECT count(*) AS n, min(sent_at) AS oldest FROM method_setup_sends
                        WHERE tenant_id = \(tenant) AND subject_ref = \(subjectRef) AND sent_at > \(since)) u,
                    (SELECT count(*) AS n, min(sent_at) AS oldest FROM method_setup_sends
                        WHERE tenant_id = \(tenant) AND destination = ANY(\(hashes)::bytea[]) AND sent_at > \(since)) d
                """
            ).first
            if (row?.int("mine") ?? 0) >= Self.perUser, let oldest = row?.date("oldest_mine") { return oldest.timeIntervalSince(since) }
            if (row?.int("total") ?? 0) >= Self.perDestination, let oldest = row?.date("oldest") { return oldest.timeIntervalSince(since) }
            try await conn.query(
                """
                INSERT INTO method_setup_sends (tenant_id, destination, subject_ref, sent_at)
                VALUES (\(tenant), \(PostgresBytes(destination.hash)), \(subjectRef), \(now))
                """)
            return nil
        }
        if let wait = refusedFor {
            let seconds = max(1, Int(wait.rounded(.up)))
            throw HTTPError(
                .codeSendLimited, detail: "Too many codes were sent to set up methods for this user or to this destination; try again in \(seconds) s.",
                headers: [("Retry-After", String(seconds))])
        }
    }

    /// The rows past the window, in bounded batches (the retention pass).
    static func purge(now: Date, limit: Int, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            limit: limit, on: conn,
            """
            DELETE FROM method_setup_sends WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM method_setup_sends WHERE sent_at < \(now.addingTimeInterval(-window)) LIMIT \(limit)))
            """)
    }
}

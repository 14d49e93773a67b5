import FoundationEssentials
import HTTPServer
import Postgres
import ServiceKit

/// How many one-time codes a destination (an `email_otp` or `sms_otp` method) receives, decided
/// where the client can be told: the sign-in's challenge answers 429 `code_send_limited` with
/// `Retry-After` instead of 200 for a message the oob-notification service would drop.
///
/// Two budgets over a sliding ``window``: ``perClient`` codes per destination and client
/// address, and ``perDestination`` per destination from all addresses together (against SMS
/// pumping). Someone requesting codes for another person's account from their own address spends
/// their own budget, not the owner's; only many addresses together reach the destination's, which
/// is well above one person's needs. The oob-notification service keeps a higher limit of its
/// own (`DeliveryService`) as a backstop only.
///
/// Budgets are rows in `code_sends` (shared by every replica), counted and spent under an
/// advisory lock per destination so that parallel requests cannot all pass one count.
struct CodeSendBudget: Sendable {
    static let window: TimeInterval = 600
    static let perClient = 3
    static let perDestination = 10

    let pool: PostgresPool

    /// Spends one send to `methodID` for `client`.
    ///
    /// - Throws: 429 `code_send_limited` with `Retry-After` when a budget is spent.
    func spend(tenant: String, methodID: String, client: String, now: Date) async throws {
        let since = now.addingTimeInterval(-Self.window)
        let refusedFor: TimeInterval? = try await pool.withTransaction { conn in
            try await conn.query("SELECT pg_advisory_xact_lock(hashtextextended(\("code-sends/\(tenant)/\(methodID)"), 0))")
            let row = try await conn.query(
                """
                SELECT count(*) FILTER (WHERE client = \(client)) AS mine, count(*) AS total,
                    min(sent_at) FILTER (WHERE client = \(client)) AS oldest_mine, min(sent_at) AS oldest
                FROM code_sends WHERE tenant_id = \(tenant) AND method_id = \(methodID) AND sent_at > \(since)
                """
            ).first
            let mine = row?.int("mine") ?? 0
            let total = row?.int("total") ?? 0
            if mine >= Self.perClient, let oldest = row?.date("oldest_mine") { return oldest.timeIntervalSince(since) }
            if total >= Self.perDestination, let oldest = row?.date("oldest") { return oldest.timeIntervalSince(since) }
            try await conn.query(
                "INSERT INTO code_sends (tenant_id, method_id, client, sent_at) VALUES (\(tenant), \(methodID), \(client), \(now))")
            return nil
        }
        if let wait = refusedFor {
            let seconds = max(1, Int(wait.rounded(.up)))
            throw HTTPError(
                .codeSendLimited, detail: "Too many codes were sent to this destination; try again in \(seconds) s.",
                headers: [("Retry-After", String(seconds))])
        }
    }
}

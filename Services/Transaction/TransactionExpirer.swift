import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// Marks PENDING transactions past their expiry EXPIRED, each with its event, every few
/// seconds (a confirmation arriving later is refused anyway: the checks compare with the
/// expiry, not with the status alone).
final class TransactionExpirer: Service {
    let name = "transaction-expirer"
    let context: ServiceContext
    private let schedule: PeriodicTask

    init(context: ServiceContext, interval: Duration = .seconds(5)) {
        self.context = context
        schedule = PeriodicTask(interval: interval)
    }

    func run() async throws {
        await schedule.run(logger: context.logger, failure: "expiring transactions failed") { try await self.expire(now: Date()) }
    }

    func shutdown() async { await schedule.stopRunning() }

    func expire(now: Date) async throws {
        let ids = try await context.pool.withConnection { conn in
            try await conn.query(
                "SELECT id, tenant_id FROM transactions WHERE status = 'PENDING' AND expires_at <= \(now) ORDER BY expires_at LIMIT 500")
        }.compactMap { row -> (String, String)? in
            guard let id = row.string("id"), let tenant = row.string("tenant_id") else { return nil }
            return (id, tenant)
        }
        for (id, tenant) in ids {
            try await context.withTransaction { conn in
                var tx = try await StoredTransaction.load(id, tenant: tenant, on: conn, forUpdate: true)
                guard tx.status == "PENDING", tx.expiresAt <= now else { return }
                tx.status = "EXPIRED"
                tx.revision += 1
                tx.updatedAt = now
                try await tx.update(on: conn)
                try await Outbox.enqueue(tx.changedEvent(context.configuration.subjectKey), source: .transaction, subject: tenant, key: tenant, on: conn)
            }
        }
    }
}

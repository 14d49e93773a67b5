import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// Every few seconds: marks approvals in progress (and QR sessions not finished) past their
/// expiry `EXPIRED`, each with its event, and wakes their long polls; deletes the nonces of device proofs that can no longer
/// be fresh, revoked sessions past any token's lifetime (``SessionRevocations``), and finished approvals older than the retention (`SIGNET_OOB_APPROVAL_RETENTION_DAYS`). (A decision arriving later is refused anyway: every read and decision
/// compares with the expiry, not with the status alone.)
final class ApprovalExpirer: Service {
    let name = "approval-expirer"
    let context: ServiceContext
    let devices: DeviceStore
    let waiters: ApprovalWaiters
    /// Called with each approval expired here, after the commit (callbacks).
    let finished: @Sendable (StoredApproval) -> Void
    /// How long a finished approval is kept.
    let retention: TimeInterval
    private let schedule: PeriodicTask

    init(
        context: ServiceContext, devices: DeviceStore, waiters: ApprovalWaiters, finished: @escaping @Sendable (StoredApproval) -> Void = { _ in },
        retention: TimeInterval = 30 * 86_400, interval: Duration = .seconds(5)
    ) {
        self.retention = retention
        self.context = context
        self.devices = devices
        self.waiters = waiters
        self.finished = finished
        schedule = PeriodicTask(interval: interval)
    }

    func run() async throws {
        await schedule.run(logger: context.logger, failure: "expiring approvals failed") { try await self.expire(now: Date()) }
    }

    func shutdown() async { await schedule.stopRunning() }

    func expire(now: Date) async throws {
        let expired = try await context.withTransaction { conn -> [StoredApproval] in
            var approvals: [StoredApproval] = []
            for var approval in try await StoredApproval.overdue(before: now, limit: 500, on: conn) {
                _ = try await ApprovalRoutes.finish(&approval, now: now, subjectKey: context.configuration.subjectKey, on: conn)
                approvals.append(approval)
            }
            return approvals
        }
        for approval in expired {
            waiters.notify(approval.id)
            finished(approval)
        }
        // QR sessions nobody read after their expiry get their EXPIRED event too.
        let expiredSessions = try await context.withTransaction { conn -> [String] in
            var ids: [String] = []
            for var session in try await StoredQRSession.overdue(before: now, limit: 500, on: conn) {
                if try await QRSessionRoutes.expireIfDue(&session, now: now, on: conn) { ids.append(session.id) }
            }
            return ids
        }
        for id in expiredSessions { waiters.notify(id) }
        try await devices.purgeNonces(before: now)
        try await context.pool.withConnection { conn in
            try await StoredApproval.purgeFinished(before: now.addingTimeInterval(-retention), on: conn)
            try await ApprovalDeliveryStore.purgeFinished(before: now.addingTimeInterval(-retention), on: conn)
            // QR sessions are transient: gone an hour after their expiry.
            try await StoredQRSession.purge(expiredBefore: now.addingTimeInterval(-3600), on: conn)
            _ = try await SessionRevocations.purge(now: now, on: conn)
        }
    }
}

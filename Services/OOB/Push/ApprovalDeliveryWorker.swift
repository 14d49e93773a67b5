import Delivery
import FoundationEssentials
import Platform
import Postgres
import Schema
import ServiceKit

/// Sends the queued approval pushes and callbacks (``ApprovalDeliveryStore``): every
/// `interval`, and at once when a request that queued one commits (``kick()``). Each claimed row
/// gets one attempt; a transient failure (429, 5xx, transport) is tried again after the
/// policy's backoff until its attempts are spent; a permanent one (400, 403, 410) is not. A push
/// whose token the provider reports gone marks the token invalid (``PushNotifier/markGone(_:)``).
///
/// When the last push of an approval still in progress failed and none was sent, the approval
/// becomes `FAILED` (reason `push_failed`) with its event, its long polls woken and its
/// callback queued: no device was reached. An approval no push was queued for (no device with
/// a push token) stays in progress: the device may still find it in its pending list.
///
/// Replicas share the queue: a claim is a short transaction with `FOR UPDATE SKIP LOCKED` and a
/// lease, and the sends happen outside it.
final class ApprovalDeliveryWorker: Service {
    let name = "approval-deliveries"
    let context: ServiceContext
    let devices: DeviceStore
    let push: PushNotifier
    let callbacks: ApprovalCallbacks
    let waiters: ApprovalWaiters
    /// Attempts and backoff of pushes and of callbacks.
    let pushRetry: RetryPolicy
    let callbackRetry: RetryPolicy
    /// How long a claimed row is left to its sender before another may claim it.
    static let lease: TimeInterval = 60
    private let schedule: PeriodicTask

    init(
        context: ServiceContext, devices: DeviceStore, push: PushNotifier, callbacks: ApprovalCallbacks, waiters: ApprovalWaiters, pushRetry: RetryPolicy,
        callbackRetry: RetryPolicy, interval: Duration = .seconds(1)
    ) {
        self.context = context
        self.devices = devices
        self.push = push
        self.callbacks = callbacks
        self.waiters = waiters
        self.pushRetry = pushRetry
        self.callbackRetry = callbackRetry
        schedule = PeriodicTask(interval: interval)
    }

    func run() async throws {
        await schedule.run(logger: context.logger, failure: "approval deliveries failed") { try await self.drain() }
    }

    func shutdown() async { await schedule.stopRunning() }

    /// Sends what is due now, in a task of its own (after a commit that queued something).
    func kick() {
        Task {
            do {
                try await drain()
            } catch {
                context.logger.warning("approval deliveries failed", metadata: [LogKey.error: "\(error)"])
            }
        }
    }

    /// Claims and sends due rows until none is left.
    func drain() async throws {
        while true {
            let claimed = try await context.pool.withConnection { conn in
                try await ApprovalDeliveryStore.claim(now: Date(), lease: Self.lease, limit: 20, on: conn)
            }
            if claimed.isEmpty { return }
            await withTaskGroup(of: Void.self) { group in
                for delivery in claimed { group.addTask { await self.attempt(delivery) } }
            }
        }
    }

    /// One attempt of one row, and its outcome recorded.
    func attempt(_ delivery: ApprovalDelivery) async {
        let metadata: Logger.Metadata = ["signet.approval.id": .string(delivery.approvalId), "signet.delivery.kind": .string(delivery.kind.rawValue)]
        let retry = delivery.kind == .push ? pushRetry : callbackRetry
        var outcome: (status: String, error: String?, retryAt: Date?)
        do {
            try await send(delivery)
            outcome = ("sent", nil, nil)
            context.logger.info(delivery.kind == .push ? "push sent" : "approval callback delivered", metadata: metadata)
        } catch {
            let code = (error as? DeliveryError)?.code.rawValue ?? (error as? Undeliverable)?.reason ?? "internal_error"
            // Anything but a DeliveryError (the database, the signing keys) is worth another try.
            let transient = (error as? DeliveryError).map(\.isTransient) ?? (error as? Undeliverable == nil)
            if transient, delivery.attempts < retry.maximumAttempts {
                outcome = ("pending", code, Date().addingTimeInterval(Self.seconds(retry.delay(afterAttempt: delivery.attempts))))
            } else {
                outcome = ("failed", code, nil)
                context.logger.warning(
                    delivery.kind == .push ? "push failed" : "approval callback failed", metadata: metadata.merging([LogKey.errorCode: .string(code)]) { $1 })
            }
        }
        do {
            let now = Date()
            try await context.pool.withConnection { conn in
                try await ApprovalDeliveryStore.record(delivery.id, status: outcome.status, error: outcome.error, retryAt: outcome.retryAt, now: now, on: conn)
            }
            if delivery.kind == .push, outcome.status == "failed" { try await failIfUnreachable(delivery) }
        } catch {
            // The lease ends and the row is claimed again.
            context.logger.warning("approval delivery outcome not recorded", metadata: metadata.merging([LogKey.error: "\(error)"]) { $1 })
        }
    }

    /// Why a row is dropped without a send (permanent).
    struct Undeliverable: Error {
        let reason: String
    }

    func send(_ delivery: ApprovalDelivery) async throws {
        let (approval, device, text) = try await context.pool.withConnection { conn -> (StoredApproval?, StoredDevice?, String?) in
            let approval = try await StoredApproval.load(delivery.approvalId, tenant: delivery.tenant, on: conn)
            let device = try await delivery.deviceId.flatMapAsync { try await DeviceStore.load($0, tenant: delivery.tenant, on: conn) }
            // The push text: the RP's own, or the tenant's push template in the approval's locale.
            let text = delivery.kind == .push ? try await approval.flatMapAsync { try await PushTemplate.displayText($0, deviceId: delivery.deviceId, on: conn) } : nil
            return (approval, device, text)
        }
        guard let approval else { throw Undeliverable(reason: "approval_gone") }
        switch delivery.kind {
        case .push:
            // A push for an answered, cancelled or expired approval would only mislead.
            guard !approval.isFinished, approval.expiresAt > Date() else { throw Undeliverable(reason: "approval_finished") }
            guard let device, device.status == "ACTIVE", let token = devices.pushToken(of: device) else { throw Undeliverable(reason: "no_push_token") }
            do {
                try await push.send(approval, text: text ?? PushTemplate.builtIn, to: device, token: token)
            } catch let error as DeliveryError where error.code == .pushTokenGone {
                await push.markGone(device)
                throw error
            }
        case .callback:
            guard let url = approval.callbackURL, approval.isFinished else { throw Undeliverable(reason: "approval_not_finished") }
            try await callbacks.post(approval, to: url)
        }
    }

    /// Marks the approval `FAILED` when it is still in progress and none of its pushes was sent
    /// or may still be.
    func failIfUnreachable(_ delivery: ApprovalDelivery) async throws {
        let now = Date()
        let failed = try await context.withTransaction { conn -> StoredApproval? in
            guard var approval = try await StoredApproval.load(delivery.approvalId, tenant: delivery.tenant, on: conn, forUpdate: true),
                approval.status == ApprovalStatus.inProgress, approval.expiresAt > now,
                try await !ApprovalDeliveryStore.mayStillReach(approval.id, on: conn)
            else { return nil }
            try await ApprovalRoutes.change(
                &approval, to: ApprovalStatus.failed, reason: "push_failed", now: now, subjectKey: context.configuration.subjectKey, on: conn)
            return approval
        }
        guard let failed else { return }
        context.logger.warning("approval failed: no device reached", metadata: ["signet.approval.id": .string(failed.id)])
        waiters.notify(failed.id)
        kick()
    }

    static func seconds(_ d: Duration) -> TimeInterval {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}

extension Optional {
    /// The wrapped value mapped by an async function, or nil.
    fileprivate func flatMapAsync<U>(_ transform: (Wrapped) async throws -> U?) async rethrows -> U? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}

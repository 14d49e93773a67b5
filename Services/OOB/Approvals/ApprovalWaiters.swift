import FoundationEssentials

/// Long polls parked on approvals: a `GET …/approvals/{id}?waitSeconds=` registers a ticket,
/// reads the approval, and if it is still in progress waits on the ticket, suspended (no
/// thread is held: the handler task is parked on a continuation), until this process changes
/// the approval (``notify(_:)``, after the change committed) or the ticket's timeout.
///
/// Registering before reading closes the race with a change committed in between: the
/// notification marks the ticket fired and the wait returns at once. Changes made by another
/// replica are not seen here; the caller waits in slices and reads again after each (see
/// `ApprovalRoutes.recheckInterval`).
actor ApprovalWaiters {
    private struct Entry {
        let approvalId: String
        var fired = false
        var continuation: CheckedContinuation<Void, Never>?
    }

    private var entries: [Int: Entry] = [:]
    private var byApproval: [String: Set<Int>] = [:]
    private var nextTicket = 0

    /// The number of parked long polls (for tests and metrics).
    var count: Int { entries.count }

    /// A ticket that ``notify(_:)`` for `approvalId` fires from now on.
    func register(_ approvalId: String) -> Int {
        nextTicket += 1
        entries[nextTicket] = Entry(approvalId: approvalId)
        byApproval[approvalId, default: []].insert(nextTicket)
        return nextTicket
    }

    /// ``register(_:)`` then `read` (the long poll's read of what it waits on). When the read
    /// throws (an unknown id, another tenant's, the database) the ticket is forgotten, since its
    /// wait will not come: each refused long poll used to leave an entry behind, keyed by
    /// whatever id its path named, memory any caller could grow.
    nonisolated func register<T: Sendable>(_ approvalId: String, thenRead read: () async throws -> T) async throws -> (ticket: Int, value: T) {
        let ticket = await register(approvalId)
        do {
            return (ticket, try await read())
        } catch {
            await remove(ticket)
            throw error
        }
    }

    /// Waits until the ticket fires or `timeout` passes (or the task is cancelled), then
    /// forgets it.
    func wait(_ ticket: Int, timeout: Duration) async {
        defer { remove(ticket) }
        guard let entry = entries[ticket], !entry.fired, timeout > .zero else { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.fire(ticket)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                if entries[ticket]?.fired ?? true {
                    c.resume()
                } else {
                    entries[ticket]?.continuation = c
                }
            }
        } onCancel: {
            Task { await self.fire(ticket) }
        }
        timer.cancel()
    }

    /// Wakes every long poll on `approvalId`. Called after the change committed.
    nonisolated func notify(_ approvalId: String) {
        Task { await self.wake(approvalId) }
    }

    private func wake(_ approvalId: String) {
        for ticket in byApproval[approvalId] ?? [] { fire(ticket) }
    }

    private func fire(_ ticket: Int) {
        guard var entry = entries[ticket] else { return }
        entry.fired = true
        let continuation = entry.continuation
        entry.continuation = nil
        entries[ticket] = entry
        continuation?.resume()
    }

    private func remove(_ ticket: Int) {
        guard let entry = entries.removeValue(forKey: ticket) else { return }
        entry.continuation?.resume()
        byApproval[entry.approvalId]?.remove(ticket)
        if byApproval[entry.approvalId]?.isEmpty == true { byApproval[entry.approvalId] = nil }
    }
}

import CSignetShims
import Dispatch
import Glibc
import Synchronization

/// SIGTERM and SIGINT for the process's ``ServiceGroup``s, caught from the moment ``install()``
/// returns and never lost: a C handler writes each signal to a pipe (`signet_signal_trap`), and
/// one dispatch read source passes it to every group then running, or keeps it for the next
/// group to start when none is. A signal before ``install()`` has its default effect: the
/// process ends, which is right before there is anything to drain.
///
/// Services call ``install()`` just before their listener opens (so a signal during start-up
/// is acted on once the group runs); ``ServiceGroup/run()`` calls it too.
public final class SignalTrap: @unchecked Sendable {
    // @unchecked Sendable: `source` is set once in init and only kept alive; the rest is a Mutex.
    public static let shared = SignalTrap()

    private struct State {
        var subscribers: [UInt64: @Sendable (String) -> Void] = [:]
        var nextID: UInt64 = 0
        /// Signals that came while no group was running, for the next one.
        var pending: [String] = []
    }
    private let state = Mutex(State())
    private var source: (any DispatchSourceRead)?

    private init() {
        let fd = signet_signal_trap()
        guard fd >= 0 else { return }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: .global())
        source.setEventHandler { [self] in deliver(from: fd) }
        source.resume()
        self.source = source
    }

    /// Reads what the handler wrote and passes each signal on (or keeps it for the next group).
    private func deliver(from fd: Int32) {
        var bytes = [UInt8](repeating: 0, count: 64)
        while true {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            for byte in bytes[..<n] {
                let name = Int32(byte) == SIGINT ? "SIGINT" : "SIGTERM"
                let subscribers = state.withLock { state -> [@Sendable (String) -> Void] in
                    if state.subscribers.isEmpty { state.pending.append(name) }
                    return Array(state.subscribers.values)
                }
                subscribers.forEach { $0(name) }
            }
        }
    }

    /// Catches SIGTERM and SIGINT from now on (once per process; later calls do nothing).
    /// Whether they are caught: false when the pipe could not be made, the signals then having
    /// their default effect.
    @discardableResult
    public static func install() -> Bool { shared.source != nil }

    /// Calls `handler` with "SIGTERM" or "SIGINT" for each signal until ``unsubscribe(_:)``;
    /// first with those that came while no one was subscribed.
    func subscribe(_ handler: @escaping @Sendable (String) -> Void) -> UInt64 {
        let (id, pending) = state.withLock { state -> (UInt64, [String]) in
            state.nextID += 1
            state.subscribers[state.nextID] = handler
            defer { state.pending.removeAll() }
            return (state.nextID, state.pending)
        }
        pending.forEach { handler($0) }
        return id
    }

    func unsubscribe(_ id: UInt64) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import CSignetShims
import FoundationEssentials
import Platform
import Synchronization

/// Who may hold how many of a server's connections, and what happens to idle ones when they
/// run short. 1,100 idle connections to one service once stopped it serving anyone else for
/// the idle timeout; three rules keep that from happening again:
///
/// - **A cap per client address** (`SIGNET_HTTP_MAX_CONNECTIONS_PER_IP`): a connection from
///   an address that already holds that many is refused at `accept` (libmicrohttpd's accept
///   policy callback closes it before any byte is read). Addresses in
///   `SIGNET_HTTP_UNLIMITED_ADDRESSES` (addresses or CIDR blocks; by default loopback, where
///   the local gateway and sidecar proxies connect from) are bounded by the global limit only:
///   everything behind a gateway arrives from the gateway's few addresses, so a production
///   deployment lists its gateways' addresses there.
///   The count is taken when a connection starts and checked when the next one is accepted,
///   so concurrent accepts on libmicrohttpd's threads may overshoot it by at most one per
///   thread (in loop mode the policy runs in `MHD_add_connection` on the loop a connection is
///   handed to, so at most one per loop; the global `maxConnections` is exact there, kept by
///   the one acceptor).
/// - **A short idle timeout under pressure**: while more than `highWater` connections are
///   open (three quarters of `SIGNET_HTTP_MAX_CONNECTIONS` by default), a connection that has
///   no request in progress (never sent one, or finished its last) for
///   `SIGNET_HTTP_PRESSURE_IDLE_TIMEOUT_SECONDS` is closed, including connections opened
///   before the pressure began. libmicrohttpd offers a per-connection timeout only from the
///   connection's own thread, so a sweeper shuts the socket down instead (`shutdown(2)`; the
///   owning thread then sees end of file and closes the connection itself).
/// - **A reserve for probes** is a listener of its own (``HTTPServerConfiguration/healthPort``),
///   not part of these counts.
final class ConnectionLimiter: Sendable {
    /// One open connection.
    final class Record: Sendable {
        let fd: Int32
        let address: ClientAddress
        /// Monotonic nanoseconds since which no request is in progress; 0 while one is.
        let idleSince: Atomic<UInt64>
        let shutDown = Atomic<Bool>(false)
        /// Whether a request ever began on this connection.
        let hadRequest = Atomic<Bool>(false)

        init(fd: Int32, address: ClientAddress, now: UInt64) {
            self.fd = fd
            self.address = address
            idleSince = Atomic(max(now, 1))
        }

        /// A request began on this connection (its headers are in).
        func requestStarted() {
            idleSince.store(0, ordering: .relaxed)
            hadRequest.store(true, ordering: .relaxed)
        }
        /// The connection's last request completed: it is idle from now.
        func requestFinished() { idleSince.store(max(ConnectionLimiter.now(), 1), ordering: .relaxed) }
    }

    private struct State {
        var perAddress: [ClientAddress: Int] = [:]
        var open: [ObjectIdentifier: Record] = [:]
        var sweeper: Task<Void, Never>?
        var stopped = false
    }

    let perAddressLimit: Int
    let unlimited: [AddressRange]
    let highWater: Int
    let pressureIdleTimeout: Duration
    private let state = PlainLock(State())
    private let openGauge: Gauge
    private let refused: Counter
    private let idleClosed: Counter

    init(perAddressLimit: Int, unlimited: [AddressRange], highWater: Int, pressureIdleTimeout: Duration, listener: String) {
        self.perAddressLimit = perAddressLimit
        self.unlimited = unlimited
        self.highWater = highWater
        self.pressureIdleTimeout = pressureIdleTimeout
        openGauge = Gauge(label: "signet_http_connections_open", dimensions: [("listener", listener)])
        refused = Counter(label: "signet_http_connections_refused_total", dimensions: [("listener", listener), ("reason", "per_address_limit")])
        idleClosed = Counter(label: "signet_http_connections_closed_idle_total", dimensions: [("listener", listener)])
    }

    /// Monotonic nanoseconds from the coarse clock (the last tick, a few milliseconds' grain):
    /// read when every request ends, to judge idleness in seconds. `DispatchTime.now()` cost a
    /// precise clock read and libdispatch's conversions per request (about 2 % of a `/healthz`).
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Whether a new connection from `address` may be accepted.
    func admits(_ address: ClientAddress) -> Bool {
        if unlimited.contains(where: { $0.contains(address) }) { return true }
        let ok = state.withLock { ($0.perAddress[address] ?? 0) < perAddressLimit }
        if !ok { refused.increment() }
        return ok
    }

    /// A connection started (on its libmicrohttpd thread).
    func opened(fd: Int32, address: ClientAddress) -> Record {
        let record = Record(fd: fd, address: address, now: Self.now())
        let count = state.withLock { s -> Int in
            s.perAddress[address, default: 0] += 1
            s.open[ObjectIdentifier(record)] = record
            return s.open.count
        }
        openGauge.record(count)
        return record
    }

    /// A connection closed (on its libmicrohttpd thread, before its socket is closed).
    func closed(_ record: Record) {
        let count = state.withLock { s -> Int in
            s.open[ObjectIdentifier(record)] = nil
            if let n = s.perAddress[record.address] {
                s.perAddress[record.address] = n > 1 ? n - 1 : nil
            }
            return s.open.count
        }
        openGauge.record(count)
    }

    var openCount: Int { state.withLock { $0.open.count } }

    /// Open connections with a request in progress (headers in, response not yet sent), and
    /// those on which no request has begun yet (just accepted, or handed over from the listen
    /// backlog at shutdown).
    var unfinished: (requests: Int, awaitingFirstRequest: Int) {
        state.withLock { s in
            s.open.values.reduce(into: (requests: 0, awaitingFirstRequest: 0)) { n, record in
                if !record.hadRequest.load(ordering: .relaxed) {
                    n.awaitingFirstRequest += 1
                } else if record.idleSince.load(ordering: .relaxed) == 0 {
                    n.requests += 1
                }
            }
        }
    }

    /// Starts sweeping idle connections under pressure every `interval`.
    func start(interval: Duration = .milliseconds(250)) {
        state.withLock { s in
            guard s.sweeper == nil, !s.stopped else { return }
            s.sweeper = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    self?.sweep()
                }
            }
        }
    }

    func stop() {
        let task = state.withLock { s -> Task<Void, Never>? in
            s.stopped = true
            defer { s.sweeper = nil }
            return s.sweeper
        }
        task?.cancel()
    }

    /// Under pressure, shuts down connections idle for longer than the pressure timeout;
    /// returns how many.
    @discardableResult
    func sweep() -> Int {
        let now = Self.now()
        let limit = UInt64(pressureIdleTimeout.components.seconds) * 1_000_000_000
            + UInt64(pressureIdleTimeout.components.attoseconds / 1_000_000_000)
        // shutdown(2) runs under the lock on purpose: a connection's close notification takes
        // the same lock before libmicrohttpd closes its socket, so a descriptor found here is
        // still that connection's, never a reused number of a newer one. shutdown does not block.
        let closed = state.withLock { s -> Int in
            guard s.open.count > highWater else { return 0 }
            var n = 0
            for record in s.open.values {
                let since = record.idleSince.load(ordering: .relaxed)
                guard since != 0, now > since, now - since >= limit, !record.shutDown.load(ordering: .relaxed) else { continue }
                record.shutDown.store(true, ordering: .relaxed)
                _ = shutdown(record.fd, Int32(SHUT_RDWR))
                n += 1
            }
            return n
        }
        if closed > 0 { idleClosed.increment(by: closed) }
        return closed
    }
}

/// A client's IP address; IPv4 is held as IPv4-mapped IPv6 (`::ffff:a.b.c.d`).
public struct ClientAddress: Hashable, Sendable {
    let value: UInt128

    init(value: UInt128) { self.value = value }

    /// From the 4 (IPv4) or 16 (IPv6) bytes of a socket address.
    init?(bytes: UnsafeBufferPointer<UInt8>) {
        switch bytes.count {
        case 4:
            value = UInt128(0xFFFF) << 32 | UInt128(bytes[0]) << 24 | UInt128(bytes[1]) << 16 | UInt128(bytes[2]) << 8 | UInt128(bytes[3])
        case 16:
            value = bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
        default:
            return nil
        }
    }

    /// Parses `192.0.2.1` or `2001:db8::1`.
    public init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            guard let a = withUnsafeBytes(of: &v4, { ClientAddress(bytes: $0.bindMemory(to: UInt8.self)) }) else { return nil }
            self = a
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            guard let a = withUnsafeBytes(of: &v6, { ClientAddress(bytes: $0.bindMemory(to: UInt8.self)) }) else { return nil }
            self = a
        } else {
            return nil
        }
    }

    var isIPv4: Bool { value >> 32 == 0xFFFF }
}

/// An address or a CIDR block (`127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`).
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    let network: UInt128
    let prefixLength: Int
    public let description: String

    public init?(_ text: String) {
        let trimmed = text.trimmingWhitespace()
        let parts = trimmed.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let address = ClientAddress(String(first)) else { return nil }
        let width = address.isIPv4 ? 32 : 128
        var length = width
        if parts.count == 2 {
            guard let n = Int(parts[1]), (0...width).contains(n) else { return nil }
            length = n
        }
        prefixLength = address.isIPv4 ? length + 96 : length
        network = address.value & Self.mask(prefixLength)
        description = trimmed
    }

    func contains(_ address: ClientAddress) -> Bool {
        address.value & Self.mask(prefixLength) == network
    }

    private static func mask(_ length: Int) -> UInt128 {
        length == 0 ? 0 : ~UInt128(0) << (128 - length)
    }

    /// A comma-separated list; nil when an entry does not parse.
    public static func list(_ text: String) -> [AddressRange]? {
        var ranges: [AddressRange] = []
        for item in text.split(separator: ",") where !item.trimmingWhitespace().isEmpty {
            guard let r = AddressRange(String(item)) else { return nil }
            ranges.append(r)
        }
        return ranges
    }

    /// Loopback: the local gateway, and sidecar proxies in a pod.
    public static let loopback: [AddressRange] = [AddressRange("127.0.0.0/8")!, AddressRange("::1")!]

    /// Whether `host`, a listening address, is loopback (`localhost`, `127.0.0.0/8`, `::1`,
    /// `[::1]`): nothing off the machine reaches it.
    public static func isLoopback(host: String) -> Bool {
        if host == "localhost" { return true }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard let address = ClientAddress(bare) else { return false }
        return loopback.contains { $0.contains(address) }
    }
}

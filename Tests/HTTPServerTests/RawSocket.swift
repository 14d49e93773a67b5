import Dispatch
import Foundation

/// A plain blocking TCP client for tests that need bytes URLSession would not send (raw
/// escapes in a request line) or many idle connections. Blocking calls run on a global
/// dispatch queue, not on the cooperative pool.
final class RawSocket: @unchecked Sendable {
    // @unchecked Sendable: used by one test task at a time; the fd is closed once.
    let fd: Int32

    /// Connects to 127.0.0.1:`port` (or `host`), with `timeout` on reads and writes.
    /// `source` binds the client's own address first (any 127.0.0.0/8 address works on
    /// Linux loopback), so that one test can be several clients.
    ///
    /// The descriptor is stored only once connected: a class whose initializer throws after
    /// its stored properties are set runs its `deinit`, which here would close the descriptor
    /// a second time, when another thread of the test process may have been given the same
    /// number (`RawSocketTests`): a database connection or an HTTP client's socket of a test
    /// running beside it would be closed under it.
    init(port: Int, host: String = "127.0.0.1", source: String? = nil, timeout: TimeInterval = 5) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let rc = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else {
                close(fd)
                throw POSIXError(.EADDRNOTAVAIL)
            }
        }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &addr.sin_addr)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: e) ?? .ECONNREFUSED)
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Ends the connection both ways (the descriptor stays open until deinit).
    func shutdownBoth() { _ = shutdown(fd, Int32(SHUT_RDWR)) }

    /// Sends `text` and reads until the peer closes or a full response (by Content-Length)
    /// has arrived. Returns nil when the connection was closed or reset without a response.
    func exchange(_ text: String) -> (status: Int, headers: String, body: String)? {
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else { return nil }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[0..<n]
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = String(text[..<end.lowerBound])
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                let body = String(text[end.upperBound...])
                if body.utf8.count >= length { break }
            }
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n"), let statusLine = text.split(separator: "\r\n").first else { return nil }
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        return (status, String(text[..<end.lowerBound]), String(text[end.upperBound...]))
    }

    /// Whether the peer closes the connection within the socket's read timeout (a read
    /// returns end of file or a reset, rather than timing out).
    func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        if n == 0 { return true }
        if n < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        return false
    }

    /// Runs blocking socket work off the cooperative pool.
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async {
                do { c.resume(returning: try work()) } catch { c.resume(throwing: error) }
            }
        }
    }

    /// Runs blocking socket work on a thread of its own: for work that stays blocked while
    /// the test goes on (dispatch's global queues are few threads here, and sleeping tasks'
    /// timers wait behind them).
    static func runOnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            Thread {
                do { c.resume(returning: try work()) } catch { c.resume(throwing: error) }
            }.start()
        }
    }
}

import Foundation
import Glibc
import Synchronization

/// A TCP socket bound to 127.0.0.1 on a free port, for the failure paths of the clients.
///
/// - ``listening()`` listens but never accepts nor answers: the kernel completes connections
///   into the backlog, so a client connects and then waits for a greeting or response that
///   never comes (timeouts, cancellation).
/// - ``closedPort()`` gives a port that nothing listens on (connection refused).
final class LoopbackSocket: Sendable {
    /// The bound port.
    let port: Int
    private let descriptor: Int32

    private init(descriptor: Int32, port: Int) {
        self.descriptor = descriptor
        self.port = port
    }

    deinit { close(descriptor) }

    /// The socket's descriptor (owned by this object).
    var fileDescriptor: Int32 { descriptor }

    /// A socket listening on a free loopback port that never accepts.
    static func listening() throws -> LoopbackSocket {
        let socket = try bound()
        guard listen(socket.descriptor, 16) == 0 else { throw SocketFailure(call: "listen", errno: errno) }
        return socket
    }

    /// A loopback port that was free a moment ago and has nothing listening on it.
    static func closedPort() throws -> Int {
        try bound().port
    }

    private static func bound() throws -> LoopbackSocket {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SocketFailure(call: "socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bindResult = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bindResult == 0 else {
            close(descriptor)
            throw SocketFailure(call: "bind", errno: errno)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let nameResult = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard nameResult == 0 else {
            close(descriptor)
            throw SocketFailure(call: "getsockname", errno: errno)
        }
        return LoopbackSocket(descriptor: descriptor, port: Int(UInt16(bigEndian: address.sin_port)))
    }
}

/// A failed socket call in a test helper.
struct SocketFailure: Error, CustomStringConvertible {
    let call: String
    let errno: Int32
    var description: String { "\(call) failed with errno \(errno)" }
}

/// A loopback HTTP server for ``HTTPClient``'s tests: accepts connections one after another on
/// a thread of its own, reads each request (head and `Content-Length` body) and writes the next
/// canned response, then closes the connection. The requests it read are kept, as text.
final class CannedHTTPServer: Sendable {
    /// The bound port.
    let port: Int
    private let socket: LoopbackSocket
    private let received = Mutex<[String]>([])

    /// A server that answers the connections it accepts with `responses`, in order, and then
    /// stops accepting. `{port}` in a response is replaced by the server's port.
    init(responses: [String]) throws {
        socket = try LoopbackSocket.listening()
        port = socket.port
        let descriptor = socket.fileDescriptor
        let port = port
        let thread = Thread { [self] in
            for response in responses {
                let connection = accept(descriptor, nil, nil)
                guard connection >= 0 else { return }
                let request = Self.readRequest(connection)
                self.received.withLock { $0.append(request) }
                let bytes = Array(response.replacingOccurrences(of: "{port}", with: "\(port)").utf8)
                _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(connection)
            }
        }
        thread.start()
    }

    /// The requests read so far.
    var requests: [String] { received.withLock { $0 } }

    private static func readRequest(_ connection: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            bytes += buffer[..<count]
            let text = String(decoding: bytes, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { continue }
            let head = text[..<end.lowerBound].lowercased()
            let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            if text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound) + length <= bytes.count { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

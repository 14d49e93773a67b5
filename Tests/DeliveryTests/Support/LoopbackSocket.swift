import Glibc

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

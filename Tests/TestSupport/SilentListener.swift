import Foundation

/// A loopback TCP listener that accepts nothing: connections complete in the kernel's backlog
/// and requests are never answered (a service that hangs). Call ``close()`` at the end.
public final class SilentListener: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestStackError("no socket for a loopback listener") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var out = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        guard bound == 0, listen(fd, 16) == 0,
            withUnsafeMutablePointer(to: &out, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }) == 0
        else {
            _ = Glibc.close(fd)
            throw TestStackError("could not listen on loopback")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: out.sin_port))
    }

    public func close() { _ = Glibc.close(fd) }
}

#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 client over a keep-alive TCP connection with blocking sockets, for the
/// ceremony benchmark's worker threads. URLSession on Linux spent about as much CPU per request
/// as the server did, on the same two cores, so it measured the client more than the server.
/// Handles exactly what the benchmark needs: POST with a JSON body, responses with
/// Content-Length, and reconnecting when the server ends the connection (`Connection: close`,
/// as nginx does after `keepalive_requests`).
final class BlockingHTTPClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let host: String
    private let port: UInt16
    private let hostHeader: String
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []

    init(host: String, port: UInt16) throws {
        self.host = host
        self.port = port
        hostHeader = "\(host):\(port)"
        try connectSocket()
    }

    deinit { if fd >= 0 { close(fd) } }

    private func connectSocket() throws {
        if fd >= 0 { close(fd) }
        buffer.removeAll()
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw Failure(description: "bad address \(host)") }
        let socket = fd
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect failed") }
    }

    /// POSTs `body` as JSON to `path`; returns the status and body.
    func post(_ path: String, body: [UInt8], authorization: String? = nil) throws -> (status: Int, body: [UInt8]) {
        if fd < 0 { try connectSocket() }
        var head = "POST \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        if let authorization { head += "Authorization: \(authorization)\r\n" }
        head += "\r\n"
        do {
            try write(Array(head.utf8) + body)
            return try readResponse()
        } catch {
            close(fd)
            fd = -1
            throw error
        }
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send failed") }
            sent += n
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 16_384, 0) }
        guard n > 0 else { throw Failure(description: "connection closed") }
        buffer.append(contentsOf: chunk[0..<n])
    }

    private func readResponse() throws -> (status: Int, body: [UInt8]) {
        var headerEnd: Int?
        var scanned = 0
        while headerEnd == nil {
            if buffer.count >= 4 {
                for i in scanned...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                    headerEnd = i
                    break
                }
                scanned = buffer.count - 3
            }
            if headerEnd == nil { try fill() }
        }
        // The head is read as bytes (the client is kept lean, like pgbench's): the status line,
        // then each header line's name compared case-insensitively.
        let head = buffer[0..<headerEnd!]
        guard head.count >= 12, let status = Int(String(decoding: head[(head.startIndex + 9)..<(head.startIndex + 12)], as: UTF8.self)) else {
            throw Failure(description: "bad status line")
        }
        var length = 0
        var closing = false
        func lower(_ c: UInt8) -> UInt8 { c >= 65 && c <= 90 ? c + 32 : c }
        func named(_ line: ArraySlice<UInt8>, _ name: String) -> ArraySlice<UInt8>? {
            let n = Array(name.utf8)
            guard line.count > n.count, line[line.startIndex + n.count] == UInt8(ascii: ":"),
                zip(line.prefix(n.count), n).allSatisfy({ lower($0) == $1 })
            else { return nil }
            return line[(line.startIndex + n.count + 1)...].drop { $0 == 32 }
        }
        var lineStart = head.firstIndex(of: 10).map { $0 + 1 } ?? head.endIndex
        while lineStart < head.endIndex {
            let lineEnd = head[lineStart...].firstIndex(of: 13) ?? head.endIndex
            let line = head[lineStart..<lineEnd]
            if let v = named(line, "content-length") { length = Int(String(decoding: v, as: UTF8.self)) ?? 0 }
            if let v = named(line, "connection"), v.map(lower) == Array("close".utf8) { closing = true }
            if named(line, "transfer-encoding") != nil { throw Failure(description: "chunked responses are not supported") }
            lineStart = lineEnd + 2
        }
        let start = headerEnd! + 4
        while buffer.count < start + length { try fill() }
        let body = Array(buffer[start..<(start + length)])
        buffer.removeFirst(start + length)
        if closing {
            close(fd)
            fd = -1
        }
        return (status, body)
    }
}

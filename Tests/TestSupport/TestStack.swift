import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Kafka
import Platform
import Postgres

/// The infrastructure `make test` starts (PostgreSQL, the development broker, the five
/// services), found through the environment `scripts/stack.sh test` exports.
///
/// Suites that need it are enabled when it is there, and also whenever `CI` is set: under CI
/// a missing stack fails loudly instead of skipping.
public enum TestStack {
    public static let environment = ProcessInfo.processInfo.environment

    /// Whether suites that need the stack should run.
    public static var enabled: Bool { environment["SIGNET_TEST_STACK"] == "1" || environment["CI"] != nil }

    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    /// Throws a clear error when the stack is absent (only reachable under CI, or when a
    /// developer forces the suite).
    public static func require() throws {
        guard environment["SIGNET_TEST_STACK"] == "1" else {
            throw Missing(description: "the test stack is not running: run the tests with `make test` (scripts/stack.sh test)")
        }
    }

    public static var pgPort: Int { Int(environment["SIGNET_PG_PORT"] ?? "") ?? 54329 }
    public static var brokers: String { environment["SIGNET_KAFKA_BROKERS"] ?? "127.0.0.1:19092" }
    public static var adminToken: String { environment["SIGNET_ADMIN_TOKEN"] ?? "dev-admin-token" }
    public static var binDir: String? { environment["SIGNET_BIN_DIR"] }
    public static var dataDir: String { environment["SIGNET_DATA_DIR"] ?? ".data" }

    public static func conninfo(database: String) -> String {
        "postgresql://signet@127.0.0.1:\(pgPort)/\(database)?connect_timeout=5"
    }

    public static func pool(database: String, size: Int = 4) -> PostgresPool {
        PostgresPool(configuration: PostgresConfiguration(conninfo: conninfo(database: database), poolSize: size), logger: quietLogger)
    }

    public static let quietLogger = Logger(label: "test", level: .error)

    /// A database of its own for one test, dropped by the returned closure.
    public static func scratchDatabase(prefix: String) async throws -> (name: String, drop: @Sendable () async -> Void) {
        let name = "\(prefix)_\(UInt32.random(in: 0...UInt32.max))"
        let admin = pool(database: "postgres", size: 1)
        try await admin.withConnection { try await $0.execute("CREATE DATABASE \(name)") }
        return (name, {
            _ = try? await admin.withConnection { try await $0.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
            admin.close()
        })
    }

    /// Polls `condition` until it holds or `timeout` passes (no assertion on time: the
    /// timeout only bounds a failing test).
    public static func eventually(timeout: Duration = .seconds(20), every: Duration = .milliseconds(20), _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: every)
        }
        return try await condition()
    }

    /// Sends the development broker a signal (SIGUSR1: down, SIGUSR2: up).
    public static func signalBroker(_ sig: Int32) throws {
        let pidfile = environment["SIGNET_DEVBROKER_PIDFILE"] ?? "\(dataDir)/run/devbroker.pid"
        guard let text = try? String(contentsOfFile: pidfile, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw Missing(description: "no development broker pid file at \(pidfile)")
        }
        guard kill(pid, sig) == 0 else { throw Missing(description: "could not signal the development broker") }
    }
}

/// A minimal HTTP client for stack tests (URLSession over loopback).
public struct TestHTTP: Sendable {
    public struct Response: Sendable {
        public let status: Int
        public let body: [UInt8]
        public let headers: [String: String]
        public var text: String { String(decoding: body, as: UTF8.self) }
        public func json() throws -> [String: Any] {
            (try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
        }
    }

    public static func send(
        _ method: String, _ url: String, headers: [String: String] = [:], body: [UInt8]? = nil, timeout: TimeInterval = 30
    ) async throws -> Response {
        var request = URLRequest(url: URL(string: url)!, timeoutInterval: timeout)
        request.httpMethod = method
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        if let body { request.httpBody = Data(body) }
        let data: Data, response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch let error as URLError where error.code == .badServerResponse || error.code == .networkConnectionLost {
            // Once, on a new connection: URLSession (libcurl) keeps an idle connection up to
            // 118 s, the services close theirs after 30 s (SIGNET_HTTP_IDLE_TIMEOUT_SECONDS), so
            // a request sent on a pooled connection just as the service closes it gets no
            // answer ("Empty reply from server"). The gateway avoids the same race with an
            // upstream keepalive_timeout of 20 s; a suite that leaves a service idle for about
            // 30 s (EventConsumerBatchTests: 29-30 s) met it in the next one. A service that
            // answers nothing fails the second try too.
            (data, response) = try await URLSession.shared.data(for: request)
        }
        let http = response as! HTTPURLResponse
        var h: [String: String] = [:]
        for (k, v) in http.allHeaderFields { h[String(describing: k).lowercased()] = String(describing: v) }
        return Response(status: http.statusCode, body: Array(data), headers: h)
    }

    public static func json(_ method: String, _ url: String, token: String? = nil, json: String) async throws -> Response {
        var headers = ["Content-Type": "application/json"]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return try await send(method, url, headers: headers, body: Array(json.utf8))
    }
}

extension TestStack {
    /// Starts another process of a service of the stack (a replica, or one on a scratch
    /// database) with the stack's environment plus `environment`, logging to
    /// `<data>/logs/<logName>.log`; the caller waits for readiness and terminates it.
    public static func launch(_ executable: String, environment overrides: [String: String], logName: String) throws -> (Process, logPath: String) {
        guard let bin = binDir else { throw TestStackError("SIGNET_BIN_DIR is not set") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "\(bin)/\(executable)")
        // The internal-call settings the stack gives this service, unless the test sets its own.
        let internalCalls = overrides["SIGNET_INTERNAL_TOKEN"] == nil ? internalEnvironment(for: executable) : [:]
        process.environment = ProcessInfo.processInfo.environment.merging(internalCalls) { _, new in new }.merging(overrides) { _, new in new }
        let logPath = "\(dataDir)/logs/\(logName).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = log
        process.standardError = log
        try process.run()
        return (process, logPath)
    }

    /// What scripts/stack.sh (`start_services`) gives a service of the stack for internal calls:
    /// its own development token (`dev-internal-token-<name>`) and the SHA-256 of every
    /// service's; nothing when the stack shares one token (`SIGNET_INTERNAL_TOKEN` set) or for
    /// another executable.
    public static func internalEnvironment(for executable: String) -> [String: String] {
        let names = ["registration", "authentication", "transaction", "oob", "pii"]
        guard environment["SIGNET_INTERNAL_TOKEN"] == nil, executable.hasPrefix("signet-") else { return [:] }
        let name = String(executable.dropFirst("signet-".count))
        guard names.contains(name) else { return [:] }
        let callers = names.map { n in "\(n)=\(TestHex.sha256("dev-internal-token-\(n)"))" }
        return ["SIGNET_INTERNAL_TOKEN": "dev-internal-token-\(name)", "SIGNET_INTERNAL_CALLERS": callers.joined(separator: ",")]
    }

    /// A loopback port nothing listens on now, chosen by the kernel (a listener bound to port 0,
    /// then closed): for a process a test starts. Not a port drawn at random from a fixed range,
    /// which can be the one the previous test's process held: a client that kept a connection
    /// to it alive then talks to that process, still draining, instead of the new one (seen in
    /// CI: the console suite's second test enrolled against the first test's console).
    public static func unusedPort() throws -> Int {
        let listener = try SilentListener()
        defer { listener.close() }
        return listener.port
    }

    /// Whether a service at `base` answers `/readyz` with 200 within a minute.
    public static func becomesReady(_ base: String) async -> Bool {
        await eventually(timeout: .seconds(60)) { (try? await TestHTTP.send("GET", "\(base)/readyz", timeout: 2))?.status == 200 }
    }
}

/// A test environment that cannot be used.
public struct TestStackError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension TestStack {
    public static var brokerPidfile: String { environment["SIGNET_DEVBROKER_PIDFILE"] ?? "\(dataDir)/run/devbroker.pid" }
    public static var brokerAddress: String { environment["SIGNET_DEVBROKER_ADDRESS"] ?? "127.0.0.1:19092" }

    /// The development broker's pid, from its pid file.
    public static func brokerPID() throws -> Int32 {
        guard let text = try? String(contentsOfFile: brokerPidfile, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw Missing(description: "no development broker pid file at \(brokerPidfile)")
        }
        return pid
    }

    /// Kills the development broker (SIGKILL: its in-memory log and group state are gone) and
    /// waits until its bootstrap port is closed.
    public static func killBroker() async throws {
        let pid = try brokerPID()
        guard kill(pid, SIGKILL) == 0 else { throw Missing(description: "could not kill the development broker") }
        let closed = await eventually(timeout: .seconds(10), every: .milliseconds(50)) { !acceptsConnections(brokerAddress) }
        guard closed else { throw TestStackError("the development broker's port is still open after SIGKILL") }
    }

    /// Starts a new development broker the way `scripts/stack.sh` does (same address, pid file
    /// and log), and waits until it accepts connections. It outlives the test process; the
    /// stack's `down` stops it through the pid file.
    public static func startBroker() async throws {
        guard let bin = binDir else { throw TestStackError("SIGNET_BIN_DIR is not set") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "\(bin)/signet-devbroker")
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["SIGNET_DEVBROKER_ADDRESS": brokerAddress, "SIGNET_DEVBROKER_PIDFILE": brokerPidfile]) { _, new in new }
        let logPath = "\(dataDir)/logs/devbroker.log"
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = FileHandle(forWritingAtPath: logPath)
        _ = try log?.seekToEnd()
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let up = await eventually(timeout: .seconds(20), every: .milliseconds(50)) {
            acceptsConnections(brokerAddress) && (try? brokerPID()) == process.processIdentifier
        }
        guard up else { throw TestStackError("the development broker did not start; see \(logPath)") }
    }

    /// Whether a TCP connection to `host:port` succeeds now.
    public static func acceptsConnections(_ address: String) -> Bool {
        let parts = address.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { return false }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, String(parts[0]), &addr.sin_addr) == 1 else { return false }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// The value of the Prometheus sample `name{labels}` in a service's `/metrics`, for every
    /// sample whose labels contain `labelFragment`.
    public static func metricValues(_ base: String, name: String, labelFragment: String) async -> [Double] {
        guard let r = try? await TestHTTP.send("GET", "\(base)/metrics", timeout: 5), r.status == 200 else { return [] }
        return r.text.split(separator: "\n").compactMap { line -> Double? in
            guard line.hasPrefix("\(name){"), line.contains(labelFragment), let space = line.lastIndex(of: " ") else { return nil }
            return Double(line[line.index(after: space)...])
        }
    }
}

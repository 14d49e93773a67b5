import Foundation
import Platform
import Testing
@testable import HTTPServer

/// Idle connections from one address must not stop a service serving everyone else.
@Suite(.serialized) struct ConnectionLimitTests {
    func withServer(_ configure: (inout HTTPServerConfiguration) -> Void, _ body: (HTTPServer) async throws -> Void) async throws {
        var r = Router()
        r.get("/hello") { _, _ in .text("hello") }
        r.get("/healthz") { _, _ in .text("ok") }
        r.get("/thread") { _, _ in .text(currentThreadName()) }
        let app = HTTPApplication(router: r, logger: Logger(label: "test", level: .critical))
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2, maxConnections: 100, idleTimeoutSeconds: 30)
        configure(&configuration)
        let server = HTTPServer(configuration: configuration, logger: Logger(label: "test", level: .critical)) { await app.respond(to: $0) }
        try server.start()
        do {
            try await body(server)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    /// Opens `count` connections from `source` that never send a byte.
    func idle(_ count: Int, port: Int, source: String) async throws -> [RawSocket] {
        try await RawSocket.run {
            var sockets: [RawSocket] = []
            for _ in 0..<count {
                guard let s = try? RawSocket(port: port, source: source, timeout: 2) else { break }
                sockets.append(s)
            }
            return sockets
        }
    }

    /// Waits until `condition` holds, 5 s at most (the expectation after it says what failed).
    static func settle(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    }

    func get(_ path: String, port: Int, source: String) async throws -> Int? {
        try await RawSocket.run {
            let s = try RawSocket(port: port, source: source, timeout: 3)
            return s.exchange("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?.status
        }
    }

    @Test func idleConnectionsFromOneAddressDoNotStarveOthers() async throws {
        try await withServer({ $0.maxConnectionsPerAddress = 20 }) { server in
            let port = server.boundPort
            // As many idle connections as the server's whole limit, all from one address.
            let hog = try await idle(100, port: port, source: "127.0.0.1")
            try await Task.sleep(for: .milliseconds(200))
            // The cap holds (concurrent accepts may pass it by one per libmicrohttpd thread).
            #expect(server.connections.openCount <= 20 + 2)
            #expect(try await get("/hello", port: port, source: "127.0.0.2") == 200)
            // The address itself gets a connection again once it holds fewer.
            withExtendedLifetime(hog) {}
        }
    }

    @Test func unlimitedAddressesAreBoundByTheGlobalLimitOnly() async throws {
        try await withServer({
            $0.maxConnectionsPerAddress = 5
            $0.unlimitedAddresses = [AddressRange("127.0.0.4")!]
        }) { server in
            let gateway = try await idle(30, port: server.boundPort, source: "127.0.0.4")
            try await Task.sleep(for: .milliseconds(200))
            #expect(server.connections.openCount == 30)
            #expect(try await get("/hello", port: server.boundPort, source: "127.0.0.4") == 200)
            withExtendedLifetime(gateway) {}
        }
    }

    /// Every one of `maxConnections` can be taken, with the default two receiving threads: in
    /// loop mode the server has one listener and one limit for all loops (when each loop's
    /// daemon listened with SO_REUSEPORT and held half the limit, the kernel's hash left one
    /// short while the other refused: 39 of 40 in CI).
    @Test func probesAreServedWhenEveryConnectionIsTaken() async throws {
        try await withServer({
            $0.maxConnections = 40
            $0.maxConnectionsPerAddress = 10
            $0.pressureIdleTimeoutSeconds = 60
            $0.healthPort = 0
        }) { server in
            var hogs: [RawSocket] = []
            for source in ["127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"] {
                hogs += try await idle(10, port: server.boundPort, source: source)
            }
            // The whole limit, not one connection more (the last ten wait in the backlog).
            // Polled: under a loaded test run, taking 40 in goes past a fixed 200 ms.
            try await Self.settle { server.connections.openCount >= 40 }
            try await Task.sleep(for: .milliseconds(100))
            #expect(server.connections.openCount == 40, "per loop \(server.loopConnectionCounts), hogs \(hogs.count)")
            // The main listener has nothing left for a newcomer…
            #expect(try await get("/hello", port: server.boundPort, source: "127.0.0.10") == nil)
            // …the probes' listener answers, and only probes.
            #expect(server.healthPort != 0)
            #expect(try await get("/healthz", port: server.healthPort, source: "127.0.0.10") == 200)
            #expect(try await get("/hello", port: server.healthPort, source: "127.0.0.10") == 404)
            // A connection that ends makes room for one from the backlog.
            // (Polled as above: a full second run of this suite in parallel with the schema suites
            // once saw 39 after a fixed 300 ms; the bug this test stands for stays at 39.)
            hogs.removeFirst(10)
            try await Self.settle { server.connections.openCount >= 40 }
            try await Task.sleep(for: .milliseconds(100))
            #expect(server.connections.openCount == 40, "per loop \(server.loopConnectionCounts), hogs \(hogs.count)")
            withExtendedLifetime(hogs) {}
        }
    }

    /// Loop mode: the acceptor reaches the whole limit even when it looks while a loop is adding
    /// a connection (counted then both as open and as in transit). Before the acceptor was told
    /// after the in-transit count dropped, it paused at the double count and stayed one short:
    /// 39 of 40 in CI once (stop 34); here, with the window held open 2 ms, in most of the 15
    /// rounds (per loop [20, 19]).
    @Test func theWholeLimitIsReachedWhileLoopsAreAddingConnections() async throws {
        guard HTTPServerMode.fromEnvironment == .loop else { return }
        try await withServer({
            $0.maxConnections = 40
            $0.maxConnectionsPerAddress = 100
            $0.pressureIdleTimeoutSeconds = 600
            $0.holdAfterAddForTesting = .milliseconds(2)
        }) { server in
            let port = server.boundPort
            var short: [String] = []
            for round in 0..<15 {
                // Four more than the limit: they wait in the backlog.
                let sockets = try await RawSocket.run { try (0..<44).map { _ in try RawSocket(port: port, source: "127.0.2.1", timeout: 3) } }
                try await Self.settle { server.connections.openCount >= 40 }
                try await Task.sleep(for: .milliseconds(30))
                if server.connections.openCount != 40 {
                    short.append("round \(round): \(server.connections.openCount) open, per loop \(server.loopConnectionCounts)")
                }
                try await RawSocket.run { sockets.forEach { $0.shutdownBoth() } }
                try await Self.settle { server.connections.openCount == 0 }
                withExtendedLifetime(sockets) {}
            }
            #expect(short.isEmpty, "\(short)")
        }
    }

    /// Loop mode: connections are spread over the loops by count (each loop gets its share,
    /// within one), not by the kernel's hash of their addresses. Seen from outside: the loop
    /// that serves each connection (its handlers run on it) names itself.
    @Test func connectionsAreSpreadOverTheLoops() async throws {
        guard HTTPServerMode.fromEnvironment == .loop else { return }
        try await withServer({ $0.maxConnections = 100 }) { server in
            let port = server.boundPort
            let (sockets, names) = try await RawSocket.run {
                var sockets: [RawSocket] = []
                for i in 0..<40 { sockets.append(try RawSocket(port: port, source: "127.0.1.\(i + 1)", timeout: 3)) }
                return (sockets, sockets.map { $0.exchange("GET /thread HTTP/1.1\r\nHost: x\r\n\r\n")?.body ?? "none" })
            }
            let perLoop = Dictionary(grouping: names, by: { $0 }).mapValues(\.count)
            #expect(perLoop.keys.sorted() == ["http-loop-0", "http-loop-1"], "\(perLoop)")
            #expect(perLoop.values.allSatisfy { abs($0 - 20) <= 1 }, "\(perLoop)")
            // The counts the acceptor goes by (and /metrics shows): all open, then all closed.
            #expect(server.loopConnectionCounts == [20, 20])
            withExtendedLifetime(sockets) {}
            try await RawSocket.run { sockets.forEach { $0.shutdownBoth() } }
            try await Task.sleep(for: .milliseconds(300))
            #expect(server.loopConnectionCounts == [0, 0])
        }
    }

    @Test func idleConnectionsAreClosedSoonerUnderPressure() async throws {
        try await withServer({
            $0.maxConnections = 100
            $0.maxConnectionsPerAddress = 100
            $0.pressureHighWater = 10
            $0.pressureIdleTimeoutSeconds = 1
        }) { server in
            // Below the high-water mark idle connections keep the normal timeout (30 s here).
            let few = try await idle(5, port: server.boundPort, source: "127.0.0.11")
            try await Task.sleep(for: .milliseconds(1600))
            #expect(server.connections.openCount == 5)
            // Past it, they go after a second of idleness, the older ones included…
            let many = try await idle(20, port: server.boundPort, source: "127.0.0.12")
            let closed = try await RawSocket.run { (few + many).filter { $0.isClosedByPeer() }.count }
            #expect(closed == 25)
            // …and the server still serves.
            #expect(try await get("/hello", port: server.boundPort, source: "127.0.0.13") == 200)
        }
    }
}

/// The deployment's list of unlimited addresses (deploy/compose.yaml, deploy/kubernetes/config.yaml)
/// parses, and covers what it should.
@Suite struct DeploymentAddressRangesTests {
    @Test func privateAndLoopbackRangesParse() throws {
        let ranges = try #require(AddressRange.list("127.0.0.0/8,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"))
        #expect(ranges.count == 6)
        #expect(AddressRange.list("10.0.0.0/33") == nil && AddressRange.list("not-an-address") == nil)
    }
}

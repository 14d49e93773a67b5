import Foundation
import Platform
import Postgres
import Synchronization
import Testing
import TestSupport

/// A service receiving SIGTERM under load finishes in-flight requests and leaves no event
/// unsent. Runs a registration replica of its own, on a scratch database, so the outbox it
/// checks belongs to that replica alone.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct GracefulShutdownTests {
    struct Tally: Sendable {
        var created = 0
        var serverErrors = 0
        var otherStatuses: [Int] = []
        var transportErrors = 0
        var refusedWhileStopping = 0
    }

    @Test func sigtermUnderLoadFinishesInFlightRequestsAndDrainsTheOutbox() async throws {
        try TestStack.require()
        _ = try #require(TestStack.binDir, "SIGNET_BIN_DIR is not set")
        let scratch = try await TestStack.scratchDatabase(prefix: "sigterm")
        defer { Task { await scratch.drop() } }
        let port = 18181
        // Its own consumer group: on a scratch database, it must not take the real registration
        // service's events. The replica's log goes to the data folder, for whoever reads a failure.
        let (process, _) = try TestStack.launch(
            "signet-registration",
            environment: [
                "SIGNET_HTTP_PORT": String(port), "SIGNET_DATABASE_URL": TestStack.conninfo(database: scratch.name), "SIGNET_LOG_LEVEL": "warning",
                "SIGNET_KAFKA_CONSUMER_GROUP": "signet-registration-sigterm-test",
            ],
            logName: "sigterm-replica")
        let base = "http://127.0.0.1:\(port)"
        let ready = await TestStack.becomesReady(base)
        guard ready else {
            process.terminate()
            Issue.record("the replica did not become ready")
            return
        }

        let tally = PlainLock(Tally())
        let stop = AtomicFlag(false)
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        var i = 0
                        while !stop.isSet {
                            i += 1
                            let id = "sig-\(worker)-\(i)"
                            do {
                                let r = try await TestHTTP.json(
                                    "PUT", "\(base)/v1/admin/tenants/\(id)", token: TestStack.adminToken,
                                    json: #"{"displayName":"L","rpId":"example.com","origins":["https://example.com"]}"#)
                                let refused = r.status == 503 && (try? r.json()["code"] as? String) == "service_unavailable"
                                tally.withLock { t in
                                    if r.status == 201 {
                                        t.created += 1
                                    } else if refused {
                                        // Arrived after the final phase began: refused, not processed.
                                        t.refusedWhileStopping += 1
                                    } else if r.status >= 500 {
                                        t.serverErrors += 1
                                    } else {
                                        t.otherStatuses.append(r.status)
                                    }
                                }
                                if refused { return }
                            } catch {
                                // Connection refused once the listener is closed: the load ends.
                                tally.withLock { $0.transportErrors += 1 }
                                return
                            }
                        }
                    }
                }
            }
        }
        try await Task.sleep(for: .milliseconds(1500))
        let beforeSignal = tally.withLock { $0.created }
        kill(process.processIdentifier, SIGTERM)
        let exited = await TestStack.eventually(timeout: .seconds(60)) { !process.isRunning }
        stop.set(true)
        await load.value
        #expect(exited, "the replica did not exit after SIGTERM")
        if !exited { process.terminate() }
        #expect(process.terminationStatus == 0)

        let t = tally.withLock { $0 }
        #expect(beforeSignal > 0, "no load reached the replica before SIGTERM")
        #expect(t.serverErrors == 0, "requests failed during shutdown")
        #expect(t.otherStatuses.isEmpty, "unexpected statuses \(t.otherStatuses)")

        // Every answered request is committed with its event, and every event was published.
        let pool = TestStack.pool(database: scratch.name, size: 1)
        defer { pool.close() }
        let counts = try await pool.withConnection { conn in
            try await conn.query(
                """
                SELECT (SELECT count(*) FROM tenants) AS tenants,
                       (SELECT count(*) FROM outbox) + (SELECT count(*) FROM outbox_sent) AS events,
                       (SELECT count(*) FROM outbox) AS unsent
                """)
        }.first
        #expect(counts?.int("tenants") == t.created)
        #expect(counts?.int("events") == t.created)
        #expect(counts?.int("unsent") == 0)
    }
}

/// A SIGTERM that comes as soon as a process listens, before its service group runs, starts a
/// graceful shutdown all the same (SignalTrap): it is neither lost (a console of a failed CI
/// run lived on for 34 minutes after its test's SIGTERM) nor the default's abrupt end. The
/// console is the process with the most start-up between its listener and its group (it
/// creates its Kafka consumer in between).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct EarlySignalTests {
    @Test func aSigtermAsSoonAsTheListenerOpensShutsDownGracefully() async throws {
        try TestStack.require()
        for attempt in 1...3 {
            let port = try TestStack.unusedPort()
            let tenant = "ops-early-\(UInt32.random(in: 0...UInt32.max))"
            let (process, logPath) = try TestStack.launch(
                "signet-console",
                environment: [
                    "SIGNET_HTTP_PORT": "\(port)", "SIGNET_CONSOLE_TENANT": tenant, "SIGNET_CONSOLE_OPERATORS": "chief=administrator",
                    "SIGNET_CONSOLE_ENROLMENT_CODE": "early-signal-code-\(attempt)", "SIGNET_CONSOLE_RP_API_KEY": "early-signal-key-\(tenant)",
                    "SIGNET_CONSOLE_ORIGIN": "http://localhost:8080", "SIGNET_LOG_LEVEL": "info",
                ], logName: "console-early-signal-\(attempt)")
            // The moment the port accepts: the listener is open, the group may not run yet.
            let listening = await TestStack.eventually(timeout: .seconds(30), every: .milliseconds(1)) {
                TestStack.acceptsConnections("127.0.0.1:\(port)") || !process.isRunning
            }
            guard listening, process.isRunning else {
                process.terminate()
                Issue.record("the console did not listen; see \(logPath)")
                return
            }
            kill(process.processIdentifier, SIGTERM)
            let exited = await TestStack.eventually(timeout: .seconds(60), every: .milliseconds(50)) { !process.isRunning }
            if !exited { kill(process.processIdentifier, SIGKILL) }
            #expect(exited, "attempt \(attempt): the console did not exit after SIGTERM; see \(logPath)")
            #expect(
                exited && process.terminationReason == .exit && process.terminationStatus == 0,
                "attempt \(attempt): \(process.terminationReason == .exit ? "exit" : "signal") \(process.terminationStatus); see \(logPath)")
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            #expect(log.contains(#""msg":"graceful shutdown started""#) && log.contains(#""signet.reason":"SIGTERM""#), "attempt \(attempt): see \(logPath)")
        }
    }
}

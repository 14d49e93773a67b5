import Foundation
import Platform
import Testing
import TestSupport

/// A PostgreSQL restart while requests flow (issue: 216 requests answered 500 during a 0.6 s
/// restart). Every answer is a success, an expected 404, or 503 `database_unavailable` with
/// `Retry-After`; never 500. Afterwards the services serve and exchange events again.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct PostgresRestartStackTests {
    struct Tally: Sendable {
        var ok = 0
        var unavailable = 0
        var unexpected: [String] = []
        var transportErrors = 0
    }

    @Test func requestsDuringARestartAnswerSuccessOr503AndServiceRecovers() async throws {
        try TestStack.require()
        let tally = PlainLock(Tally())
        let stop = AtomicFlag(false)
        func record(_ name: String, _ response: TestHTTP.Response, expected: Set<Int>) {
            let code = (try? response.json()["code"] as? String) ?? ""
            tally.withLock { t in
                if expected.contains(response.status) {
                    t.ok += 1
                } else if response.status == 503, code == "database_unavailable", response.headers["retry-after"] != nil {
                    t.unavailable += 1
                } else if t.unexpected.count < 20 {
                    t.unexpected.append("\(name): \(response.status) \(code) retry-after=\(response.headers["retry-after"] ?? "-")")
                }
            }
        }
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                // Writes: a transaction with an outbox row on registration.
                for worker in 0..<3 {
                    group.addTask {
                        var i = 0
                        while !stop.isSet {
                            i += 1
                            do {
                                let r = try await Stack.putTenant("pgr-\(worker)-\(i)-\(UInt16.random(in: 0...UInt16.max))")
                                record("PUT tenant", r, expected: [201])
                            } catch {
                                tally.withLock { $0.transportErrors += 1 }
                            }
                        }
                    }
                }
                // Reads that reach the database on every consumer service (an unknown tenant
                // is never cached).
                for service in Stack.consumers {
                    group.addTask {
                        while !stop.isSet {
                            do {
                                let r = try await TestHTTP.send("GET", "\(Stack.url(service))/v1/tenants/pgr-unknown-\(UInt32.random(in: 0...UInt32.max))")
                                record("GET tenant on \(service.rawValue)", r, expected: [404])
                            } catch {
                                tally.withLock { $0.transportErrors += 1 }
                            }
                        }
                    }
                }
            }
        }
        defer { stop.set(true) }  // the load ends even when the test fails or times out
        try await Task.sleep(for: .milliseconds(500))
        try await TestStack.restartPostgreSQL()  // pg_ctl restart -m fast, waited for
        try await Task.sleep(for: .seconds(2))
        stop.set(true)
        await load.value

        let t = tally.withLock { $0 }
        print("PostgreSQL restart under load: \(t.ok) expected answers, \(t.unavailable) × 503 database_unavailable, \(t.unexpected.count) unexpected")
        #expect(t.unexpected.isEmpty, "answers other than success or 503 database_unavailable with Retry-After: \(t.unexpected)")
        #expect(t.transportErrors == 0)
        #expect(t.ok > 0)

        // Recovery: a new tenant is written and every service applies its event.
        let id = Stack.newTenantID("pgr-after")
        let written = await TestStack.eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            (try? await Stack.putTenant(id))?.status == 201
        }
        #expect(written)
        for service in Stack.consumers {
            let seen = await TestStack.eventually(timeout: .seconds(60)) { await Stack.sees(service, id) }
            #expect(seen, "\(service.rawValue) did not apply the tenant after the restart")
        }
    }
}

import Foundation
import HTTPServer
import Postgres
import Schema
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport
import Tokens
@testable import OOBService

/// Signed callbacks in process: a finished approval is POSTed to the RP's callback URL as a JWT
/// under the tenant's published key, retried after a 503; URLs off the tenant's origins are
/// refused at create. The callback is a row queued with the approval's change: one whose
/// attempts failed is sent later by another worker (a restarted process) from that row.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct ApprovalCallbackTests {
    @Test func theOutcomeIsPostedSignedAndRetried() async throws {
        let attempts = Mutex(0)
        let received = Mutex<[String]>([])
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in
            guard request.method == "POST", request.path == "/cb" else { return HTTPResponse(status: 404) }
            // The first attempt meets a server error: the callback is tried again.
            if attempts.withLock({ $0 += 1; return $0 }) == 1 { return HTTPResponse(status: 503) }
            guard request.header("content-type") == "application/jwt" else { return HTTPResponse(status: 415) }
            received.withLock { $0.append(String(decoding: request.body, as: UTF8.self)) }
            return HTTPResponse(status: 204)
        }
        try server.start()
        defer { Task { await server.shutdown() } }
        let origin = "http://127.0.0.1:\(server.boundPort)"
        let f = try await OOBFixture.make(origins: [origin])
        defer { Task { await f.h.close() } }
        // The worker sends again what is due (the retry after the 503).
        let worker = try f.deliveries
        let running = Task { try await worker.run() }
        defer { Task { await worker.shutdown(); _ = await running.result } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")

        for url in ["http://127.0.0.1:1/cb", "https://elsewhere.example/cb", "ftp://127.0.0.1/cb", "\(origin)/cb#x"] {
            let refused = await f.rp(
                "POST", "/v1/tenants/acme/approvals", json: #"{"username":"alice","level":"ENTRY","action":"a","resource":"r","callbackUrl":"\#(url)"}"#)
            #expect(refused.status == 400 && refused.object()["field"] as? String == "callbackUrl", "\(url): \(refused.text)")
        }
        let created = await f.rp(
            "POST", "/v1/tenants/acme/approvals", json: #"{"username":"alice","level":"ENTRY","action":"login","resource":"web","callbackUrl":"\#(origin)/cb"}"#)
        try #require(created.status == 201, "\(created.text)")
        let id = try #require(created.object()["approvalId"] as? String)
        let hash = try #require(created.object()["detailsHash"] as? String)
        let decided = try await f.device(
            phone, "POST", "/v1/tenants/acme/devices/\(device)/approvals/\(id)/decision", json: try phone.decision("ACCEPT", approvalId: id, detailsHash: hash))
        #expect(decided.status == 200)

        #expect(await TestStack.eventually(timeout: .seconds(20)) { !received.withLock { $0 }.isEmpty })
        #expect(attempts.withLock { $0 } == 2)
        let token = try #require(received.withLock { $0.first })
        let jwks = await f.h.send("GET", "/v1/tenants/acme/.well-known/jwks.json")
        let jwt = try JWTVerifier(
            keySet: try JWKSet(json: jwks.body),
            options: JWTValidationOptions(issuer: "http://localhost:8080/oob", audience: "acme", expectedType: "approval-callback+jwt")
        ).verify(token, now: Date())
        let approval = try #require(jwt.claims[claim: "approval"]?.objectValue)
        #expect(approval["approvalId"]?.stringValue == id && approval["status"]?.stringValue == "ACCEPTED")
    }

    @Test func aCallbackNotYetDeliveredIsSentByAnotherWorkerFromItsRow() async throws {
        let up = Mutex(false)
        let received = Mutex(0)
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in
            guard up.withLock({ $0 }) else { return HTTPResponse(status: 503) }
            received.withLock { $0 += 1 }
            return HTTPResponse(status: 204)
        }
        try server.start()
        defer { Task { await server.shutdown() } }
        let origin = "http://127.0.0.1:\(server.boundPort)"
        let f = try await OOBFixture.make(origins: [origin])
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")
        let created = await f.rp(
            "POST", "/v1/tenants/acme/approvals", json: #"{"username":"alice","level":"ENTRY","action":"login","resource":"web","callbackUrl":"\#(origin)/cb"}"#)
        let id = try #require(created.object()["approvalId"] as? String)
        let hash = try #require(created.object()["detailsHash"] as? String)
        let decided = try await f.device(
            phone, "POST", "/v1/tenants/acme/devices/\(device)/approvals/\(id)/decision", json: try phone.decision("REJECT", approvalId: id, detailsHash: hash))
        #expect(decided.status == 200)

        // The first attempt (right after the commit) met a 503: the row waits for its retry.
        func row() async throws -> (status: String?, attempts: Int?) {
            let r = try await f.h.context.pool.withConnection { conn in
                try await conn.query("SELECT status, attempts FROM approval_deliveries WHERE approval_id = \(id) AND kind = 'callback'")
            }
            return (r.first?.string("status"), r.first?.int("attempts"))
        }
        #expect(await TestStack.eventually { (try? await row())?.attempts == 1 })
        #expect(try await row().status == "pending" && received.withLock { $0 } == 0)

        // This process "died": another worker, sharing nothing with it but the database, sends it.
        up.withLock { $0 = true }
        let w = try f.deliveries
        let fresh = ApprovalDeliveryWorker(
            context: f.h.context, devices: w.devices, push: w.push, callbacks: w.callbacks, waiters: ApprovalWaiters(), pushRetry: w.pushRetry,
            callbackRetry: w.callbackRetry)
        // Received, and the row marked sent: the worker marks it after the receiver's answer, so
        // "received" alone can be seen first (and the harness's own worker, whose retry may come
        // due meanwhile, can be the one holding the lease; the row's lease keeps it to one send).
        #expect(await TestStack.eventually(timeout: .seconds(10)) {
            try? await fresh.drain()
            let status = try? await row().status
            return received.withLock { $0 } == 1 && status == "sent"
        })
        #expect(try await row().status == "sent")
        // Sent once: nothing is due any more.
        try await fresh.drain()
        #expect(received.withLock { $0 } == 1)
    }
}

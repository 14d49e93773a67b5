import Foundation
import Kafka
import Postgres
import Schema
import TestSupport

/// Addresses and helpers of the running local stack.
enum Stack {
    static let registration = "http://127.0.0.1:8081"
    static func url(_ service: ServiceName) -> String { "http://127.0.0.1:\(service.defaultPort)" }
    static let consumers: [ServiceName] = [.authentication, .transaction, .oob, .pii]

    static func newTenantID(_ prefix: String) -> String {
        "\(prefix)-\(UInt32.random(in: 0...UInt32.max))"
    }

    static func putTenant(_ id: String, name: String = "Test Tenant", base: String = registration) async throws -> TestHTTP.Response {
        try await TestHTTP.json(
            "PUT", "\(base)/v1/admin/tenants/\(id)", token: TestStack.adminToken,
            json: #"{"displayName":"\#(name)","rpId":"example.com","origins":["https://example.com"]}"#)
    }

    /// Whether `service` serves tenant `id` (at `revision` or later, when given).
    static func sees(_ service: ServiceName, _ id: String, displayName: String? = nil) async -> Bool {
        guard let r = try? await TestHTTP.send("GET", "\(url(service))/v1/tenants/\(id)"), r.status == 200 else { return false }
        if let displayName { return (try? r.json()["displayName"] as? String) == displayName }
        return true
    }

    /// Rows of `processed_events` for `eventID` in `service`'s database.
    static func processedCount(_ service: ServiceName, eventID: String) async throws -> Int {
        let pool = TestStack.pool(database: "signet_\(service.rawValue)", size: 1)
        defer { pool.close() }
        let rows = try await pool.withConnection {
            try await $0.query("SELECT count(*) AS n FROM processed_events WHERE event_id = \(eventID)")
        }
        return rows.first?.int("n") ?? -1
    }

    static func producer() throws -> KafkaProducer {
        try KafkaProducer(
            configuration: KafkaConfiguration(brokers: TestStack.brokers, clientID: "signet-stack-test"), logger: TestStack.quietLogger)
    }
}

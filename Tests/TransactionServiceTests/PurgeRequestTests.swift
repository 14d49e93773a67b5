import Foundation
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import TransactionService

/// The purge request names the user by subject reference only: this service asks the
/// registration service for the username of the erasure in progress. While that service
/// cannot be reached the request waits (the consumer retries it); it is never answered
/// without the user's own rows, nor dead-lettered.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct PurgeRequestTests {
    @Test func anUnreachableRegistrationServiceDelaysThePurge() async throws {
        // Nothing listens on port 9.
        let h = try await ServiceHarness<TransactionService>.withDatabase(environment: ["SIGNET_REGISTRATION_URL": "http://127.0.0.1:9"])
        defer { Task { await h.close() } }
        let purge = UserPurgeRequested(
            tenantId: "acme", erasureId: "er_" + String(repeating: "c", count: 32),
            subjectRef: h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice"), subject: nil, requestedAt: Date())
        await #expect(throws: EventDependencyUnavailable.self) { try await h.consume(purge, source: .registration) }
        #expect(try await h.published().allSatisfy { $0.type != ErasurePartCompleted.eventType })
    }
}

import Foundation
import HTTPServer
import Postgres
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// The send budget of method setups over a scratch database: per user and per destination,
/// a sliding window, the destination kept as a keyed hash, old rows purged.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct MethodSetupBudgetTests {
    typealias Harness = ServiceHarness<RegistrationService>

    static func refusal(_ body: () async throws -> Void) async -> (code: String, retryAfter: Int)? {
        do {
            try await body()
            return nil
        } catch let error as HTTPError {
            let retry = error.headers.first { $0.0 == "Retry-After" }.flatMap { Int($0.1) } ?? -1
            return (error.code.rawValue, retry)
        } catch {
            return ("unexpected \(error)", -1)
        }
    }

    @Test func fivePerUserAndFivePerDestinationInTenMinutes() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let budget = MethodSetupBudget(pool: h.context.pool, key: Array(repeating: 7, count: 32))
        let now = Date()
        let phone = budget.destination(tenant: "acme", kind: "phone", value: "+447700900123")
        #expect(budget.destination(tenant: "acme", kind: "email", value: "Ada@Example.org") == budget.destination(tenant: "acme", kind: "email", value: "ada@example.org"))
        #expect(budget.destination(tenant: "other", kind: "phone", value: "+447700900123") != phone)
        for i in 0..<5 {
            try await budget.spend(tenant: "acme", subjectRef: "ref-a", destination: budget.destination(tenant: "acme", kind: "phone", value: "+4477009001\(i)0"), now: now)
        }
        // The user's sixth, to a number never used: refused, Retry-After until the oldest leaves the window.
        let user = await Self.refusal { try await budget.spend(tenant: "acme", subjectRef: "ref-a", destination: phone, now: now.addingTimeInterval(60)) }
        #expect(user?.code == "code_send_limited" && user?.retryAfter == 540, "\(String(describing: user))")
        // Five other users to one number, then a sixth: refused for the number.
        for i in 0..<5 { try await budget.spend(tenant: "acme", subjectRef: "ref-\(i)", destination: phone, now: now) }
        let destination = await Self.refusal { try await budget.spend(tenant: "acme", subjectRef: "ref-z", destination: phone, now: now) }
        #expect(destination?.code == "code_send_limited")
        // Another tenant's budget is its own; past the window, the user may again.
        try await budget.spend(tenant: "other", subjectRef: "ref-z", destination: phone, now: now)
        try await budget.spend(tenant: "acme", subjectRef: "ref-a", destination: phone, now: now.addingTimeInterval(601))
        // No address or number is kept, only hashes; rows past the window are purged.
        let (plain, before) = try await h.context.pool.withConnection { conn in
            (
                try await conn.query("SELECT count(*) AS n FROM method_setup_sends WHERE encode(destination, 'escape') LIKE '%4477%'").first?.int("n"),
                try await conn.query("SELECT count(*) AS n FROM method_setup_sends").first?.int("n")
            )
        }
        #expect(plain == 0 && before == 12)
        let purged = try await h.context.pool.withConnection { try await MethodSetupBudget.purge(now: now.addingTimeInterval(601), limit: 100, on: $0) }
        #expect(purged == 11)
    }

    /// `SIGNET_OTP_HASH_KEY` changed: the sends counted under the old key still count while
    /// it is accepted, so a destination's budget does not start afresh with the new key.
    @Test func aChangedKeyStillCountsTheSendsUnderTheAcceptedOne() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let old = [UInt8](repeating: 7, count: 32), new = [UInt8](repeating: 8, count: 32)
        let before = MethodSetupBudget(pool: h.context.pool, key: old)
        let now = Date()
        for i in 0..<5 {
            try await before.spend(
                tenant: "acme", subjectRef: "ref-\(i)", destination: before.destination(tenant: "acme", kind: "phone", value: "+447700900123"), now: now)
        }
        let changed = MethodSetupBudget(pool: h.context.pool, key: new, acceptedKeys: [old])
        let destination = changed.destination(tenant: "acme", kind: "phone", value: "+447700900123")
        #expect(destination.hash != before.destination(tenant: "acme", kind: "phone", value: "+447700900123").hash)
        let refused = await Self.refusal { try await changed.spend(tenant: "acme", subjectRef: "ref-z", destination: destination, now: now) }
        #expect(refused?.code == "code_send_limited", "\(String(describing: refused))")
        // Without the old key accepted, the earlier sends are another destination's (as before
        // the change): five pass under the new key alone, the sixth is refused.
        let newOnly = MethodSetupBudget(pool: h.context.pool, key: new)
        let underNew = newOnly.destination(tenant: "acme", kind: "phone", value: "+447700900123")
        #expect(underNew.underAccepted.isEmpty && underNew.hash == destination.hash)
        for i in 0..<5 { try await newOnly.spend(tenant: "acme", subjectRef: "ref-n\(i)", destination: underNew, now: now) }
        let sixth = await Self.refusal { try await newOnly.spend(tenant: "acme", subjectRef: "ref-n5", destination: underNew, now: now) }
        #expect(sixth?.code == "code_send_limited")
    }

    @Test func subaddressesOfOneMailboxShareItsBudget() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let budget = MethodSetupBudget(pool: h.context.pool, key: Array(repeating: 7, count: 32))
        let now = Date()
        // Five users, each to another tag of one mailbox (and the domain in another case).
        for i in 0..<5 {
            try await budget.spend(
                tenant: "acme", subjectRef: "ref-\(i)", destination: budget.destination(tenant: "acme", kind: "email", value: "ada+\(i)@Example.ORG"),
                now: now)
        }
        let sixth = await Self.refusal {
            try await budget.spend(tenant: "acme", subjectRef: "ref-z", destination: budget.destination(tenant: "acme", kind: "email", value: "ada@example.org"), now: now)
        }
        #expect(sixth?.code == "code_send_limited", "\(String(describing: sixth))")
    }
}

/// The key a destination's budget is counted under: one per mailbox, whatever the case or the
/// `+tag` of the address (no database: the pool is never used).
@Suite struct MethodSetupBudgetDestinationTests {
    let budget = MethodSetupBudget(pool: PostgresPool(configuration: PostgresConfiguration(conninfo: "postgresql://signet@127.0.0.1:1/none", poolSize: 1), logger: TestStack.quietLogger), key: Array(repeating: 7, count: 32))

    @Test(arguments: ["ada@example.org", "Ada@Example.org", "ada+news@example.org", "ADA+News+2@EXAMPLE.ORG", "ada+@example.org"])
    func oneMailboxIsOneDestination(_ address: String) {
        #expect(budget.destination(tenant: "acme", kind: "email", value: address) == budget.destination(tenant: "acme", kind: "email", value: "ada@example.org"))
    }

    @Test(arguments: ["bob@example.org", "ada@example.net", "ada.b@example.org", "+ada@example.org"])
    func otherMailboxesAreOtherDestinations(_ address: String) {
        #expect(budget.destination(tenant: "acme", kind: "email", value: address) != budget.destination(tenant: "acme", kind: "email", value: "ada@example.org"))
    }

    @Test func aMailboxIsTheLowerCasedAddressWithoutItsTag() {
        #expect(MethodSetupBudget.mailbox("Ada+Tag@Example.ORG") == "ada@example.org")
        #expect(MethodSetupBudget.mailbox("+tag@example.org") == "+tag@example.org")
        // Phone numbers are counted as given.
        #expect(budget.destination(tenant: "acme", kind: "phone", value: "+447700900123") != budget.destination(tenant: "acme", kind: "phone", value: "+447700900124"))
    }
}

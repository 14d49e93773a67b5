import Foundation
import HTTPServer
import JSON
import Platform
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// A sign-up's profile in the vault, over a scratch database with a stand-in vault: an account
/// opened again by a later sign-up (before it held anything) refers to the new values, and the
/// ones they replace leave the vault, as does any value nothing comes to refer to — by a
/// withdrawal request in this service's outbox (`VaultWithdrawalRequested`), or the vault's
/// DELETE when the database cannot take the request.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct SignUpProfileVaultTests {
    typealias Harness = ServiceHarness<RegistrationService>

    /// What the stand-in vault was asked: values stored (their references, in order) and
    /// references deleted.
    struct Calls: Sendable {
        var stored: [String] = []
        var deleted: [String] = []
    }

    /// A stand-in vault answering `acme`'s store and delete calls: a store is recorded under
    /// the reference its caller sent, then answered with `storeStatus` (201 with the reference,
    /// or a problem).
    static func standInVault(_ calls: PlainLock<Calls>, storeStatus: PlainLock<Int> = PlainLock(201)) -> HTTPServer {
        HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in
            let parts = request.path.split(separator: "/").map(String.init)
            guard parts.count >= 5, parts[0...3] == ["v1", "internal", "tenants", "acme"], parts[4] == "pii" else { return HTTPResponse(status: 404) }
            switch (request.method, parts.count) {
            case ("POST", 5):
                guard let ref = (try? JSONValueDecoder().decode(PIIStoreRequest.self, from: request.body))?.ref else { return HTTPResponse(status: 400) }
                calls.withLock { $0.stored.append(ref) }
                let status = storeStatus.withLock { $0 }
                guard status == 201 else {
                    let problem = #"{"type":"about:blank","title":"x","status":\#(status),"code":"internal_error"}"#
                    return HTTPResponse(status: status, headers: [("Content-Type", "application/problem+json")], body: Array(problem.utf8))
                }
                return HTTPResponse(status: 201, headers: [("Content-Type", "application/json")], body: Array(#"{"ref":"\#(ref)","masked":"D•••"}"#.utf8))
            case ("DELETE", 6):
                calls.withLock { $0.deleted.append(parts[5]) }
                return HTTPResponse(status: 204)
            default:
                return HTTPResponse(status: 404)
            }
        }
    }

    /// The vault started, and a harness over a scratch database calling it, with the tenant.
    static func harness(calling vault: HTTPServer) async throws -> Harness {
        try vault.start()
        let h = try await Harness.withDatabase(environment: ["SIGNET_PII_URL": "http://127.0.0.1:\(vault.boundPort)"])
        _ = try await CredentialManagementTests.tenantWithKey(h)
        return h
    }

    static func open(_ h: Harness, _ profile: String, username: String = "dana") async -> HTTPResponse {
        await h.send(
            "POST", "/v1/internal/tenants/acme/sign-ups", bearer: Harness.internalToken, headers: [(name: "X-Signet-Service", value: "authentication")],
            json: #"{"username":"\#(username)","passkeyOnly":false,"profile":\#(profile)}"#)
    }

    /// The references whose withdrawal this service's outbox holds, in order.
    static func withdrawalRequests(_ h: Harness) async throws -> [String] {
        try await h.published(VaultWithdrawalRequested.self).map { request in
            #expect(request.tenantId == "acme")
            return request.piiRef
        }
    }

    static func profileRefs(_ h: Harness, username: String = "dana") async throws -> [String: String] {
        let rows = try await h.context.pool.withConnection { conn in
            try await conn.query("SELECT kind, pii_ref FROM user_profiles WHERE tenant_id = 'acme' AND username = \(username)")
        }
        return Dictionary(uniqueKeysWithValues: rows.compactMap { row in row.string("kind").flatMap { k in row.string("pii_ref").map { (k, $0) } } })
    }

    @Test func anAccountOpenedAgainDeletesTheProfileValuesItReplaces() async throws {
        let calls = PlainLock(Calls())
        let vault = Self.standInVault(calls)
        let h = try await Self.harness(calling: vault)
        defer { Task { await h.close(); await vault.shutdown() } }
        func open(_ profile: String) async -> HTTPResponse { await Self.open(h, profile) }
        func profileRefs() async throws -> [String: String] { try await Self.profileRefs(h) }

        let first = await open(#"{"fullName":"Dana Scully","email":"dana@example.org"}"#)
        #expect(first.status == 201, "\(String(decoding: first.body, as: UTF8.self))")
        let firstRefs = calls.withLock { $0.stored }
        #expect(firstRefs.count == 2 && calls.withLock { $0.deleted }.isEmpty)
        #expect(try await Self.withdrawalRequests(h).isEmpty)
        #expect(try await profileRefs() == ["name": firstRefs[0], "email": firstRefs[1]])

        // Opened again, with a name only: the name's first value goes (requested in the
        // transaction that replaced it); the e-mail address, not given again, stays the profile's.
        let second = await open(#"{"fullName":"Dana K. Scully"}"#)
        #expect(second.status == 201, "\(String(decoding: second.body, as: UTF8.self))")
        let (stored, deleted) = calls.withLock { ($0.stored, $0.deleted) }
        let requested = try await Self.withdrawalRequests(h)
        #expect(stored.count == 3 && deleted.isEmpty && requested == [firstRefs[0]], "\(requested) \(firstRefs)")
        #expect(try await profileRefs() == ["name": stored[2], "email": firstRefs[1]])
    }

    /// The vault stored a value and its answer was lost (a 5xx here): the sign-up fails and
    /// the value's withdrawal, by the reference sent with it, is requested through the outbox;
    /// so is that of a value whose reference this service then failed to record (a database
    /// fault, injected as a trigger). When the outbox cannot take the request either, a value
    /// nothing was asked about is deleted through the vault's DELETE, and one whose reference
    /// could not be checked is kept.
    @Test func aValueNothingRefersToLeavesTheVault() async throws {
        let calls = PlainLock(Calls())
        let status = PlainLock(500)
        let vault = Self.standInVault(calls, storeStatus: status)
        let h = try await Self.harness(calling: vault)
        defer { Task { await h.close(); await vault.shutdown() } }

        let lost = await Self.open(h, #"{"fullName":"Dana Scully"}"#)
        #expect(lost.status == 503, "\(String(decoding: lost.body, as: UTF8.self))")
        var (stored, deleted) = calls.withLock { ($0.stored, $0.deleted) }
        #expect(stored.count == 1 && deleted.isEmpty, "\(stored) \(deleted)")
        #expect(try await Self.withdrawalRequests(h) == stored)
        #expect(try await Self.profileRefs(h).isEmpty)

        status.withLock { $0 = 201 }
        try await h.context.pool.withConnection { conn in
            try await conn.query("CREATE FUNCTION refuse_profiles() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$")
            try await conn.query("CREATE TRIGGER refuse_profiles BEFORE INSERT ON user_profiles FOR EACH ROW EXECUTE FUNCTION refuse_profiles()")
        }
        let unrecorded = await Self.open(h, #"{"fullName":"Dana Scully"}"#)
        #expect(unrecorded.status == 500, "\(String(decoding: unrecorded.body, as: UTF8.self))")
        (stored, deleted) = calls.withLock { ($0.stored, $0.deleted) }
        #expect(stored.count == 2 && deleted.isEmpty, "\(stored) \(deleted)")
        #expect(try await Self.withdrawalRequests(h) == stored)
        #expect(try await Self.profileRefs(h).isEmpty)

        // A value its caller's row refers to after all (a COMMIT whose outcome was unknown) is
        // kept; the withdrawal asks first, in the request's transaction.
        let url = "http://127.0.0.1:\(vault.boundPort)"
        let internalCalls = InternalCalls(token: Harness.internalToken, service: "registration")
        let kept = InternalCalls.newVaultReference()
        await internalCalls.withdrawFromVault(url, ref: kept, tenant: "acme", through: h.context, source: .registration) { _ in true }
        #expect(try await Self.withdrawalRequests(h) == stored)

        // The outbox refusing the request (a fault injected on it): with nothing to ask, the
        // vault's DELETE; with a reference that cannot be checked, the value stays.
        try await h.context.pool.withConnection { conn in
            try await conn.query("CREATE TRIGGER refuse_outbox BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION refuse_profiles()")
        }
        let unqueued = InternalCalls.newVaultReference()
        await internalCalls.withdrawFromVault(url, ref: unqueued, tenant: "acme", through: h.context, source: .registration)
        let unchecked = InternalCalls.newVaultReference()
        await internalCalls.withdrawFromVault(url, ref: unchecked, tenant: "acme", through: h.context, source: .registration) { _ in false }
        #expect(calls.withLock { $0.deleted } == [unqueued])
        #expect(try await Self.withdrawalRequests(h) == stored)
    }

    /// Two sign-ups of one empty account at the same moment, each recording its profile slowly
    /// (a trigger sleeps before the insert): the second waits for the first and withdraws the
    /// value it replaces, so one value is referred to and the other leaves the vault. Before, both
    /// found no profile row to lock and the first's value stayed.
    @Test func twoSignUpsAtOnceLeaveOneValue() async throws {
        let calls = PlainLock(Calls())
        let vault = Self.standInVault(calls)
        let h = try await Self.harness(calling: vault)
        defer { Task { await h.close(); await vault.shutdown() } }
        try await h.context.pool.withConnection { conn in
            try await conn.query("CREATE FUNCTION slow_profiles() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$")
            try await conn.query("CREATE TRIGGER slow_profiles BEFORE INSERT ON user_profiles FOR EACH ROW EXECUTE FUNCTION slow_profiles()")
        }
        async let one = Self.open(h, #"{"fullName":"Dana Scully"}"#)
        async let other = Self.open(h, #"{"fullName":"Dana K. Scully"}"#)
        let statuses = await [one.status, other.status]
        #expect(statuses == [201, 201])
        let stored = calls.withLock { $0.stored }
        let kept = try await Self.profileRefs(h)["name"]
        #expect(stored.count == 2 && kept != nil && stored.contains(kept ?? ""), "\(stored) \(String(describing: kept))")
        let requested = try await Self.withdrawalRequests(h)
        #expect(requested == stored.filter { $0 != kept }, "\(stored) \(requested) \(String(describing: kept))")
    }
}

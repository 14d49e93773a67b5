import Crypto
import Foundation
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// The admin user search, in process over a scratch database: by prefix in byte order, a page
/// at a time, within one tenant, refusing bad parameters by name.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct UserSearchTests {
    typealias Harness = ServiceHarness<RegistrationService>

    func search(_ h: Harness, _ query: String, tenant: String = "acme") async throws -> (names: [String], next: String?) {
        let response = await h.send("GET", "/v1/admin/tenants/\(tenant)/users\(query)", bearer: Harness.adminToken)
        #expect(response.status == 200, "\(query): \(String(decoding: response.body, as: UTF8.self))")
        let result = try JSONValueDecoder().decode(UserSearchResult.self, from: response.body)
        return (result.users.map(\.username), result.next)
    }

    @Test func usersAreFoundByPrefixInByteOrderAPageAtATime() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        _ = try await CredentialManagementTests.tenantWithKey(h)
        #expect(await h.send("PUT", "/v1/admin/tenants/other", bearer: Harness.adminToken,
            json: #"{"displayName":"Other","rpId":"other.example","origins":["https://other.example"]}"#).status == 201)
        // "alice%" must not match like SQL LIKE would; "José" and "Kate" are other accounts than "jose…" and "kate".
        let names = ["alice", "alice%", "alice_b", "alicia", "bob", "al", "Alice", "jos\u{e9}", "kate", "\u{212A}ate"]
        try await h.context.pool.withConnection { conn in
            for name in names {
                try await UserStore.insert(tenant: "acme", username: name, handle: SecureRandom.bytes(32), displayName: name, on: conn)
            }
            try await UserStore.insert(tenant: "other", username: "alice-elsewhere", handle: SecureRandom.bytes(32), displayName: "x", on: conn)
        }
        #expect(try await search(h, "?prefix=ali").names == ["alice", "alice%", "alice_b", "alicia"])
        #expect(try await search(h, "?prefix=alice%25").names == ["alice%"])
        #expect(try await search(h, "?prefix=alice_").names == ["alice_b"])
        #expect(try await search(h, "?prefix=A").names == ["Alice"])
        #expect(try await search(h, "?prefix=jos%C3%A9").names == ["jos\u{e9}"])
        #expect(try await search(h, "?prefix=k").names == ["kate"])
        #expect(try await search(h, "?prefix=zz").names == [])

        // Pages of two over every user of the tenant, none of another's.
        var all: [String] = []
        var after: String? = nil
        repeat {
            let query = "?limit=2" + (after.map { "&after=" + $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! } ?? "")
            let page = try await search(h, query)
            #expect(page.names.count <= 2)
            all += page.names
            after = page.next
        } while after != nil
        #expect(all == names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        let one = try await search(h, "?prefix=alic&limit=3")
        #expect(one.names == ["alice", "alice%", "alice_b"] && one.next == "alice_b")
        let last = try await search(h, "?prefix=alic&limit=3&after=alice_b")
        #expect(last.names == ["alicia"] && last.next == nil)
    }

    @Test func badParametersAndUnknownTenantsAreRefusedByName() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        _ = try await CredentialManagementTests.tenantWithKey(h)
        for (query, field) in [
            ("?limit=0", "limit"), ("?limit=101", "limit"), ("?limit=x", "limit"), ("?prefix=a%0Ab", "prefix"),
            ("?prefix=" + String(repeating: "a", count: 257), "prefix"), ("?after=%07", "after"),
        ] {
            let response = await h.send("GET", "/v1/admin/tenants/acme/users\(query)", bearer: Harness.adminToken)
            #expect(response.status == 400, "\(query)")
            #expect((try? JSONParser.parse(response.body))?["field"]?.stringValue == field, "\(query)")
        }
        #expect(await h.send("GET", "/v1/admin/tenants/nope/users", bearer: Harness.adminToken).status == 404)
        #expect(await h.send("GET", "/v1/admin/tenants/acme/users").status == 401)
        #expect(await h.send("GET", "/v1/admin/tenants/acme/users", bearer: "not-the-admin-token").status == 401)
    }
}

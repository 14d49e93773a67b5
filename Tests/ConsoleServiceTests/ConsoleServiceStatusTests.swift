import Foundation
import HTTPServer
import JSON
import Schema
import Testing
@testable import ConsoleService

/// The services' readiness through the console.
@Suite struct ConsoleServiceStatusTests {
    @Test func eachServicesReadinessAsItAnswersIt() async throws {
        let (fixture, cookie, _) = try await ConsoleFixture.signedIn("vera") { call in
            switch call.service {
            case .registration: FakeUpstream.json(#"{"status":"ok","checks":{"postgres":"ok","kafka":"ok"}}"#)
            case .oob: FakeUpstream.json(#"{"status":"degraded","checks":{"postgres":"ok","kafka":"unavailable"}}"#, status: 503)
            case .pii: FakeUpstream.json("not json", status: 502)
            default: FakeUpstream.json(#"{"status":"ok","checks":{}}"#)
            }
        }
        let response = await fixture.send("GET", "/console/api/services", cookie: cookie, csrf: nil)
        #expect(response.status == 200)
        let services = try JSONParser.parse(response.body)["services"]?.arrayValue ?? []
        let byName = Dictionary(uniqueKeysWithValues: services.map { ($0["service"]?.stringValue ?? "", $0) })
        #expect(byName.keys.sorted() == ["authentication", "oob", "pii", "registration", "transaction"])
        #expect(byName["registration"]?["ready"]?.boolValue == true)
        #expect(byName["oob"]?["ready"]?.boolValue == false && byName["oob"]?["status"]?.stringValue == "degraded")
        #expect(byName["oob"]?["checks"]?["kafka"]?.stringValue == "unavailable")
        #expect(byName["pii"]?["status"]?.stringValue == "unreachable")
        let asked = fixture.upstream.calls.dropFirst()
        #expect(asked.count == 5 && asked.allSatisfy { $0.path == "/readyz" && $0.credential == .none })
    }
}

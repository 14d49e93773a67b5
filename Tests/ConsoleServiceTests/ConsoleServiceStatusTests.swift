import Foundation
import HTTPServer
import JSON
import Platform
import Schema
import Testing
@testable import ConsoleService

/// The services' readiness through the console.
@Suite struct ConsoleServiceStatusTests {
    @Test func eachServicesReadinessAsItAnswersIt() async throws {
        let (fixture, cookie, _) = try await ConsoleFixture.signedIn("vera") { call in
            switch call.service {
            case .registration: FakeUpstream.json(#"{"status":"ok","checks":{"postgres":"ok","kafka":"ok"},"version":"v1.2-3-gabc"}"#)
            case .transaction: FakeUpstream.json(#"{"status":"ok","checks":{},"version":"<script>"}"#)
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
        // Each service's version as it says it, when it is one (printable ASCII, 1-64).
        #expect(byName["registration"]?["version"]?.stringValue == "v1.2-3-gabc")
        #expect(byName["transaction"]?["version"]?.stringValue == "<script>")
        #expect(byName["authentication"]?["version"] == nil && byName["pii"]?["version"] == nil)
        let asked = fixture.upstream.calls.dropFirst()
        #expect(asked.count == 5 && asked.allSatisfy { $0.path == "/readyz" && $0.credential == .none })
    }
}

@Suite struct BuildInfoTests {
    @Test func aVersionIsPrintableASCIIOfAtMost64CharactersElseDev() {
        #expect(BuildInfo.version(from: "v1.4.0-12-g949ffcb-dirty") == "v1.4.0-12-g949ffcb-dirty")
        #expect(BuildInfo.version(from: nil) == "dev")
        #expect(BuildInfo.version(from: "") == "dev")
        #expect(BuildInfo.version(from: "a b") == "dev")
        #expect(BuildInfo.version(from: "v1\n") == "dev")
        #expect(BuildInfo.version(from: "v\u{e9}") == "dev")
        #expect(BuildInfo.version(from: String(repeating: "a", count: 65)) == "dev")
    }

    /// The console's own probes carry its version.
    @Test func theConsolesHealthzCarriesItsVersion() async throws {
        let fixture = try ConsoleFixture()
        let response = await fixture.send("GET", "/healthz")
        #expect(try JSONParser.parse(response.body)["version"]?.stringValue == BuildInfo.version)
    }
}

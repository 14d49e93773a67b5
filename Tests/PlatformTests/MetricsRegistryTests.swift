import Testing
@testable import Platform

@Suite struct MetricsRegistryTests {
    @Test func countersGaugesAndHistogramsRenderInPrometheusText() {
        let registry = MetricsRegistry()
        let c = Counter(label: "signet_test_total", dimensions: [("route", "/v1/tenants/{tenant}"), ("status", "200")], registry: registry)
        c.increment()
        c.increment(by: 2)
        Gauge(label: "signet_backlog", registry: registry).record(7)
        let t = Timer(label: "signet_latency_seconds", dimensions: [("route", "/a")], registry: registry)
        t.record(.milliseconds(3))
        t.record(.seconds(20))
        let text = registry.render()
        #expect(text.contains("# TYPE signet_test_total counter\n"))
        #expect(text.contains("signet_test_total{route=\"/v1/tenants/{tenant}\",status=\"200\"} 3\n"))
        #expect(text.contains("signet_backlog 7\n"))
        #expect(text.contains("signet_latency_seconds_bucket{route=\"/a\",le=\"0.0025\"} 0\n"))
        #expect(text.contains("signet_latency_seconds_bucket{route=\"/a\",le=\"0.005\"} 1\n"))
        #expect(text.contains("signet_latency_seconds_bucket{route=\"/a\",le=\"+Inf\"} 2\n"))
        #expect(text.contains("signet_latency_seconds_count{route=\"/a\"} 2\n"))
    }

    @Test func labelValuesAreEscaped() {
        let registry = MetricsRegistry()
        Counter(label: "x_total", dimensions: [("v", "a\"b\\c\nd")], registry: registry).increment()
        #expect(registry.render().contains("x_total{v=\"a\\\"b\\\\c\\nd\"} 1"))
    }

    @Test func sameLabelsShareOneSeries() {
        let registry = MetricsRegistry()
        Counter(label: "y_total", dimensions: [("a", "1")], registry: registry).increment()
        Counter(label: "y_total", dimensions: [("a", "1")], registry: registry).increment()
        #expect(registry.render().contains("y_total{a=\"1\"} 2"))
    }
}

@Suite struct EnvironmentTests {
    @Test func defaultsAndOverrides() throws {
        let env = Environment(["A": "5", "B": "", "FLAG": "yes"])
        #expect(try env.int("A", default: 1) == 5)
        #expect(try env.int("B", default: 1) == 1)
        #expect(env.string("MISSING", default: "d") == "d")
        #expect(try env.bool("FLAG", default: false))
    }

    @Test func badValuesNameTheVariableNotTheValue() {
        let env = Environment(["PORT": "http", "N": "99999"])
        #expect(throws: Environment.ConfigurationError.self) { try env.int("PORT", default: 1) }
        do {
            _ = try env.int("N", default: 1, range: 0...65535)
            Issue.record("expected a range error")
        } catch let e as Environment.ConfigurationError {
            #expect(e.variable == "N")
            #expect(!e.description.contains("99999"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

@Suite struct LoggerTests {
    @Test func jsonStringEscapesControlCharactersAndQuotes() {
        #expect(jsonString("a\"b\\c\n\u{1}") == "\"a\\\"b\\\\c\\n\\u0001\"")
    }

    @Test func levelsParseAndOrder() {
        #expect(Logger.Level(name: "WARN") == .warning)
        #expect(Logger.Level(name: "nope") == nil)
        #expect(Logger.Level.debug < Logger.Level.error)
    }
}

import Foundation
import Platform
import Schema
import ServiceKit
import Testing
import TestSupport

/// A service reachable from other hosts refuses the public development tokens at start-up.
@Suite struct ServiceConfigurationTests {
    static let strong = String(repeating: "k", count: 40)

    @Test(arguments: ["127.0.0.1", "127.8.9.10", "localhost", "::1"])
    func loopbackAcceptsTheDevelopmentTokens(host: String) throws {
        let c = try ServiceConfiguration(service: .pii, environment: Environment(["SIGNET_HTTP_HOST": host]))
        #expect(c.adminToken == ServiceConfiguration.developmentAdminToken && c.internalToken == InternalCalls.developmentToken)
    }

    @Test(arguments: [
        ([:], "SIGNET_ADMIN_TOKEN"),
        (["SIGNET_ADMIN_TOKEN": strong], "SIGNET_INTERNAL_TOKEN"),
        (["SIGNET_INTERNAL_TOKEN": strong], "SIGNET_ADMIN_TOKEN"),
        (["SIGNET_ADMIN_TOKEN": "dev-admin-token", "SIGNET_INTERNAL_TOKEN": strong], "SIGNET_ADMIN_TOKEN"),
        (["SIGNET_ADMIN_TOKEN": strong, "SIGNET_INTERNAL_TOKEN": "dev-internal-token"], "SIGNET_INTERNAL_TOKEN"),
        (["SIGNET_ADMIN_TOKEN": strong, "SIGNET_INTERNAL_TOKEN": "too-short-0123456789"], "SIGNET_INTERNAL_TOKEN"),
        (["SIGNET_ADMIN_TOKEN": strong, "SIGNET_INTERNAL_TOKEN": strong], "SIGNET_SUBJECT_KEY"),
        (["SIGNET_ADMIN_TOKEN": strong, "SIGNET_INTERNAL_TOKEN": strong, "SIGNET_SUBJECT_KEY": ServiceConfiguration.developmentSubjectKey], "SIGNET_SUBJECT_KEY"),
    ] as [([String: String], String)])
    func offLoopbackTheDevelopmentTokensAreRefused(extra: [String: String], variable: String) {
        for host in ["0.0.0.0", "10.1.2.3", "signet-pii", "::", "127.0.0.1.example"] {
            var values = extra
            values["SIGNET_HTTP_HOST"] = host
            do {
                _ = try ServiceConfiguration(service: .registration, environment: Environment(values))
                Issue.record("\(host) started with \(variable) unset or weak")
            } catch let error as Environment.ConfigurationError {
                #expect(error.variable.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.contains(variable), "\(error.variable)")
                // The error never carries the value.
                #expect(!error.description.contains("dev-") && !error.description.contains(Self.strong))
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    static let key = String(repeating: "A", count: 43)

    /// The subject key: a short or malformed one is refused anywhere; the development key works
    /// on loopback, and gives the references every service of the local stack computes alike.
    /// Every service's default body limit is 64 KiB (routes that carry images declare their
    /// extra bytes, GuardedRouterBodyLimitTests); the environment still decides.
    @Test(arguments: ServiceName.allCases)
    func theBodyLimitIs64KiBUnlessSet(_ service: ServiceName) throws {
        let c = try ServiceConfiguration(service: service, environment: Environment([:]))
        #expect(c.http.maxBodyBytes == 65_536)
        let set = try ServiceConfiguration(service: service, environment: Environment(["SIGNET_HTTP_MAX_BODY_BYTES": "70000"]))
        #expect(set.http.maxBodyBytes == 70_000)
    }

    @Test func theSubjectKeyIsAtLeast32BytesAndDefaultsOnLoopback() throws {
        for bad in [String(repeating: "A", count: 42), "not base64url!"] {
            #expect(throws: Environment.ConfigurationError.self) {
                try ServiceConfiguration(service: .oob, environment: Environment(["SIGNET_SUBJECT_KEY": bad]))
            }
        }
        let loopback = try ServiceConfiguration(service: .oob, environment: Environment([:]))
        let development = try ServiceConfiguration(service: .pii, environment: Environment(["SIGNET_SUBJECT_KEY": ServiceConfiguration.developmentSubjectKey]))
        #expect(loopback.subjectKey.ref(tenant: "t", username: "u@example.net") == development.subjectKey.ref(tenant: "t", username: "u@example.net"))
        let other = try ServiceConfiguration(service: .pii, environment: Environment(["SIGNET_SUBJECT_KEY": String(repeating: "B", count: 48)]))
        #expect(other.subjectKey.ref(tenant: "t", username: "u@example.net") != loopback.subjectKey.ref(tenant: "t", username: "u@example.net"))
    }

    /// Every secret a service needs off loopback, set.
    static func complete(_ service: ServiceName) -> [String: String] {
        var values = ["SIGNET_HTTP_HOST": "0.0.0.0", "SIGNET_ADMIN_TOKEN": strong, "SIGNET_INTERNAL_TOKEN": strong + "i"]
        for name in ServiceConfiguration.requiredSecrets(service) { values[name] = name.hasSuffix("_FILE") ? "/run/secrets/x.pem" : key }
        // The SHA-256 of this service's token (and another service's).
        let other = service == .pii ? "oob" : "pii"
        values["SIGNET_INTERNAL_CALLERS"] =
            "\(service.rawValue)=\(TestHex.sha256(strong + "i")),\(other)=\(TestHex.sha256("another-service-token"))"
        return values
    }

    @Test func offLoopbackStrongTokensStart() throws {
        let c = try ServiceConfiguration(service: .authentication, environment: Environment(Self.complete(.authentication)))
        #expect(c.internalToken == Self.strong + "i")
        #expect(c.internalCallers?.count == 2 && c.internalCalls.callers == c.internalCallers)
        // Another service's token under this service's entry: refused at start.
        var swapped = Self.complete(.authentication)
        swapped["SIGNET_INTERNAL_TOKEN"] = Self.strong + "x"
        #expect(throws: Environment.ConfigurationError.self) { try ServiceConfiguration(service: .authentication, environment: Environment(swapped)) }
    }

    @Test(arguments: ServiceName.allCases)
    func offLoopbackEveryMissingKeyIsNamedAtOnce(service: ServiceName) {
        let required = ServiceConfiguration.requiredSecrets(service)
        #expect(!required.isEmpty)
        var values = Self.complete(service)
        for name in required { values[name] = nil }
        values["SIGNET_ADMIN_TOKEN"] = nil
        do {
            _ = try ServiceConfiguration(service: service, environment: Environment(values))
            Issue.record("\(service) started off loopback without its keys")
        } catch let error as Environment.ConfigurationError {
            let named = Set(error.variable.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(named == Set(required + ["SIGNET_ADMIN_TOKEN"]), "\(error)")
            #expect(!error.description.contains(Self.strong))
        } catch {
            Issue.record("unexpected \(error)")
        }
        // On loopback the same environment starts (random keys, with warnings).
        values["SIGNET_HTTP_HOST"] = "127.0.0.1"
        #expect(throws: Never.self) { try ServiceConfiguration(service: service, environment: Environment(values)) }
    }

    @Test func offLoopbackNoRandomKeyIsMade() {
        let logger = Logger(label: "test", level: .error)
        let env = Environment(["SIGNET_HTTP_HOST": "0.0.0.0"])
        #expect(throws: Environment.ConfigurationError.self) { try ServiceKeys.key("SIGNET_PII_KEK", env, logger: logger) }
        #expect(throws: Environment.ConfigurationError.self) { try CeremonyHandles.fromEnvironment(env, logger: logger) }
        let loopback = Environment(["SIGNET_HTTP_HOST": "127.0.0.1"])
        #expect((try? ServiceKeys.key("SIGNET_PII_KEK", loopback, logger: logger))?.count == 32)
    }

    @Test func secretsComeFromFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("signet-secrets-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var values = Self.complete(.pii)
        for name in ["SIGNET_ADMIN_TOKEN", "SIGNET_PII_KEK"] {
            let path = dir.appendingPathComponent(name).path
            // A mounted Secret often ends with a newline: it is not part of the value.
            try Data("\(values[name]!)\n".utf8).write(to: URL(fileURLWithPath: path))
            values["\(name)_FILE"] = path
            values[name] = nil
        }
        let env = Environment(values)
        let c = try ServiceConfiguration(service: .pii, environment: env)
        #expect(c.adminToken == Self.strong)
        #expect(try ServiceKeys.key("SIGNET_PII_KEK", env, logger: Logger(label: "test", level: .error)).count == 32)

        // An unreadable file, or both the value and a file, is refused, naming the variable.
        for bad in [
            ["SIGNET_INTERNAL_TOKEN_FILE": dir.appendingPathComponent("missing").path],
            ["SIGNET_PII_KEK": Self.key],
        ] {
            do {
                _ = try ServiceConfiguration(service: .pii, environment: Environment(values.merging(bad) { _, new in new }))
                Issue.record("started with \(bad.keys.sorted())")
            } catch let error as Environment.ConfigurationError {
                #expect(error.variable == (bad.keys.first!.hasPrefix("SIGNET_INTERNAL") ? "SIGNET_INTERNAL_TOKEN" : "SIGNET_PII_KEK"), "\(error)")
            }
        }
    }
}

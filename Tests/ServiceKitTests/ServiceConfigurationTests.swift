import Foundation
import Platform
import Schema
import ServiceKit
import Testing

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
    ] as [([String: String], String)])
    func offLoopbackTheDevelopmentTokensAreRefused(extra: [String: String], variable: String) {
        for host in ["0.0.0.0", "10.1.2.3", "signet-pii", "::", "127.0.0.1.example"] {
            var values = extra
            values["SIGNET_HTTP_HOST"] = host
            do {
                _ = try ServiceConfiguration(service: .registration, environment: Environment(values))
                Issue.record("\(host) started with \(variable) unset or weak")
            } catch let error as Environment.ConfigurationError {
                #expect(error.variable == variable)
                // The error never carries the value.
                #expect(!error.description.contains("dev-") && !error.description.contains(Self.strong))
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test func offLoopbackStrongTokensStart() throws {
        let c = try ServiceConfiguration(
            service: .authentication,
            environment: Environment(["SIGNET_HTTP_HOST": "0.0.0.0", "SIGNET_ADMIN_TOKEN": Self.strong, "SIGNET_INTERNAL_TOKEN": Self.strong + "i"]))
        #expect(c.internalToken == Self.strong + "i")
    }
}

import Foundation
import HTTPServer
import JSON
import Platform
import Schema
import Testing
@testable import ConsoleService

/// The operators' tenant as the console provisions it at start-up: the tenant, the console's
/// key, and a FIDO policy that requires user verification, so that the authentication service
/// asks every sign-in ceremony of the tenant for it whatever options a caller asks for.
@Suite struct OperatorsTenantProvisionerTests {
    /// The registration service's answer for a tenant without a policy (its defaults), as
    /// `FIDOPolicy.document()` writes it.
    static let defaultPolicy =
        #"{"allowedAlgorithms":[-7,-8,-257],"attestation":{"acceptNone":true,"acceptSelf":true,"conveyance":"none","required":false},"autoCreatePasskey":false,"disallowedAAGUIDs":[],"residentKey":"preferred","userVerification":"preferred"}"#

    static func provisioner(policy: String) throws -> (OperatorsTenantProvisioner, FakeUpstream) {
        let upstream = FakeUpstream { call in
            call.method == "GET" && call.path.hasSuffix("/fido-policy") ? FakeUpstream.json(policy) : FakeUpstream.json("{}")
        }
        let configuration = try ConsoleService.configuration(ConsoleFixture.environment())
        let provisioner = OperatorsTenantProvisioner(
            configuration: configuration, upstream: upstream, readiness: ConsoleReadiness(), logger: Logger(label: "test", level: .error))
        return (provisioner, upstream)
    }

    @Test func thePolicyIsMadeToRequireUserVerificationKeepingTheRest() async throws {
        let (provisioner, upstream) = try Self.provisioner(policy: Self.defaultPolicy)
        try await provisioner.provision()
        let keyID = OperatorsTenantProvisioner.keyID(for: ConsoleService.developmentOperatorsKey)
        #expect(upstream.calls.map { "\($0.service) \($0.method) \($0.path) \($0.credential)" } == [
            "registration PUT /v1/admin/tenants/operators admin",
            "registration PUT /v1/admin/tenants/operators/api-keys/\(keyID) admin",
            "registration GET /v1/admin/tenants/operators/fido-policy admin",
            "registration PUT /v1/admin/tenants/operators/fido-policy admin",
            "authentication GET /v1/tenants/operators none",
        ])
        let put = try #require(upstream.calls.first { $0.method == "PUT" && $0.path.hasSuffix("/fido-policy") }?.body)
        #expect(put == Self.defaultPolicy.replacingOccurrences(of: #""userVerification":"preferred""#, with: #""userVerification":"required""#))
    }

    /// An administrator's policy that requires it already is not written again.
    @Test func aPolicyThatRequiresUserVerificationIsLeftAsItIs() async throws {
        let policy = Self.defaultPolicy.replacingOccurrences(of: #""userVerification":"preferred""#, with: #""userVerification":"required""#)
        let (provisioner, upstream) = try Self.provisioner(policy: policy)
        try await provisioner.provision()
        #expect(!upstream.calls.contains { $0.method == "PUT" && $0.path.hasSuffix("/fido-policy") })
        #expect(upstream.calls.contains { $0.method == "GET" && $0.path == "/v1/admin/tenants/operators/fido-policy" })
    }

    /// A policy the registration service does not answer is no ready tenant: provisioning
    /// fails (and is retried).
    @Test func aPolicyThatCannotBeReadFailsTheProvisioning() async throws {
        let (provisioner, upstream) = try Self.provisioner(policy: "[]")
        await #expect(throws: HTTPError.self) { try await provisioner.provision() }
        #expect(!upstream.calls.contains { $0.service == .authentication })
    }

    /// Once ready, the provisioner keeps the policy: an administrator who weakens it through
    /// the admin API (here: the service answers `preferred` every time) sees it put back when
    /// the registration service's event arrives (``OperatorsTenantProvisioner/recheck()``) and
    /// at the interval, not at the console's next restart only.
    @Test func aWeakenedPolicyIsPutBackOnItsEventAndAtTheInterval() async throws {
        for interval in [Duration.seconds(3600), .milliseconds(20)] {
            let upstream = FakeUpstream { call in
                call.method == "GET" && call.path.hasSuffix("/fido-policy") ? FakeUpstream.json(Self.defaultPolicy) : FakeUpstream.json("{}")
            }
            let readiness = ConsoleReadiness()
            let provisioner = OperatorsTenantProvisioner(
                configuration: try ConsoleService.configuration(ConsoleFixture.environment()), upstream: upstream, readiness: readiness,
                logger: Logger(label: "test", level: .error), policyCheckInterval: interval)
            let running = Task { try await provisioner.run() }
            func puts() -> Int { upstream.calls.filter { $0.method == "PUT" && $0.path == "/v1/admin/tenants/operators/fido-policy" }.count }
            func eventually(_ condition: () -> Bool) async throws -> Bool {
                for _ in 0..<500 {
                    if condition() { return true }
                    try await Task.sleep(for: .milliseconds(10))
                }
                return condition()
            }
            #expect(try await eventually { readiness.isReady })
            if interval == .seconds(3600) {
                #expect(puts() == 1)
                provisioner.recheck()
                #expect(try await eventually { puts() == 2 }, "put back on the event")
            } else {
                #expect(try await eventually { puts() >= 3 }, "put back at the interval")
            }
            await provisioner.shutdown()
            try await running.value
        }
    }
}

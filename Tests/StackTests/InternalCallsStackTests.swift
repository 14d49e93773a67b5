import Foundation
import Testing
import TestSupport

/// The local stack runs with a token per service (scripts/stack.sh `start_services`, as a
/// deployment with `SIGNET_INTERNAL_CALLERS` does): an internal call is admitted only with the
/// token of the service it names, so one service's token cannot call as another.
@Suite(.enabled(if: TestStack.enabled && TestStack.environment["SIGNET_INTERNAL_TOKEN"] == nil), .serialized, .timeLimit(.minutes(1)))
struct InternalCallsStackTests {
    func call(_ base: String, _ path: String, token: String, as caller: String) async throws -> TestHTTP.Response {
        try await TestHTTP.send("GET", base + path, headers: ["Authorization": "Bearer \(token)", "X-Signet-Service": caller])
    }

    @Test func aServiceCannotCallAsAnother() async throws {
        try TestStack.require()
        let registration = "http://127.0.0.1:8081"
        let path = "/v1/internal/tenants/demo/users/nobody-\(UInt32.random(in: 0...UInt32.max))/vault-subject"
        // Its own token: admitted (the user does not exist).
        let own = try await call(registration, path, token: "dev-internal-token-authentication", as: "authentication")
        #expect(own.status != 401, "\(own.text)")
        // The oob service's token naming the authentication service, the pii service's naming
        // itself wrongly, and the shared development token of the one-token mode: refused.
        for (token, caller) in [
            ("dev-internal-token-oob", "authentication"), ("dev-internal-token-pii", "oob"), ("dev-internal-token", "authentication"),
        ] {
            let refused = try await call(registration, path, token: token, as: caller)
            #expect(refused.status == 401 && (try? refused.json())?["code"] as? String == "unauthorized", "\(caller): \(refused.text)")
        }
        // The same on the pii vault, the audit trail's owner.
        let pii = try await TestHTTP.send(
            "POST", "http://127.0.0.1:8085/v1/internal/tenants/demo/pii/none/read",
            headers: ["Authorization": "Bearer dev-internal-token-registration", "X-Signet-Service": "oob", "Content-Type": "application/json"],
            body: Array(#"{"purpose":"test"}"#.utf8))
        #expect(pii.status == 401, "\(pii.text)")
    }
}

import HTTPServer
import Platform
import Schema
import ServiceKit

/// The tenant's registration decision rules, evaluated by the authentication service (which
/// owns rulesets and the user's sign-in facts) over an internal call.
struct RegistrationRules: Sendable {
    let calls: InternalCalls
    let authenticationURL: String

    static func fromEnvironment(_ env: Environment = Environment()) throws -> RegistrationRules {
        RegistrationRules(
            calls: try InternalCalls.fromEnvironment(env, service: "registration"),
            authenticationURL: env.string("SIGNET_AUTHENTICATION_URL", default: "http://127.0.0.1:8082"))
    }

    /// What the tenant's registration decision rules say about the user now, with the user's
    /// remembered answer to suggestions.
    ///
    /// - Throws: 503 when the authentication service cannot answer.
    func decision(tenant: String, username: String) async throws -> RegistrationDecision {
        try await calls.post(
            "\(authenticationURL)/v1/internal/tenants/\(tenant)/registration-decision", RegistrationDecisionRequest(username: username),
            as: RegistrationDecision.self)
    }

    /// Refuses a registration of `type` that the tenant's registration decision rules do not
    /// allow for the user now: DENY refuses every method; SUGGEST/ENFORCE offer the methods of
    /// their sequences only; IGNORE (the default) leaves the choice open.
    ///
    /// - Throws: 403 `registration_denied` or `method_not_offered`; 503 when the authentication
    ///   service cannot answer (registration fails closed).
    func requireOffered(_ type: String, tenant: String, username: String) async throws {
        let decision = try await decision(tenant: tenant, username: username)
        switch decision.action {
        case "DENY":
            throw HTTPError(
                .registrationDenied,
                detail: "The tenant's registration rules deny registering methods now (rule \(decision.matchedRule)).")
        case "SUGGEST_REGISTRATION", "ENFORCE_REGISTRATION":
            let sequences = decision.offeredSequences
            guard sequences.contains(where: { $0.contains(type) }) else {
                throw HTTPError(
                    .methodNotOffered,
                    detail: "The tenant's registration rules offer \(sequences.map { $0.joined(separator: "+") }.joined(separator: " or ")) now (rule \(decision.matchedRule)).")
            }
        default:
            return
        }
    }
}

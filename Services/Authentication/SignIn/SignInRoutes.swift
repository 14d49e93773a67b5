import FoundationEssentials
import HTTPServer
import Schema
import ServiceKit
import Platform

/// Adaptive sign-in over HTTP; the flow itself is ``SignInCoordinator``'s.
///
/// - `POST /v1/tenants/{tenant}/signins`: facts → rules → ALLOW (session at once), DENY, or
///   TRIGGER_AUTHENTICATION with the sequences the user can complete.
/// - `POST …/signins/quick`: quick authentication, one round trip.
/// - `POST …/signins/{id}/methods/{method}/challenge` and `…/verify`: one step.
/// - `GET …/signins/{id}`: where the flow stands.
/// - `PUT …/signins/{id}/registration-answer`, `POST …/signins/{id}/reject`.
/// - `POST …/signins/{id}/session`: the session of a sign-in that gave a registration-only
///   token (ENFORCE_REGISTRATION), once the user registered.
/// - `POST /v1/internal/tenants/{tenant}/registration-decision`: for the registration service.
struct SignInRoutes: Sendable {
    let coordinator: SignInCoordinator
    let calls: InternalCalls

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/signins", .open) { request, ctx in
            let body = request.body.isEmpty ? SignInStartRequest() : try request.decode(SignInStartRequest.self)
            if let u = body.username { try UsernameRules.require(u) }
            let (signals, context) = try Self.signalsAndContext(body.signals, body.context, request: request)
            let started = try await coordinator.start(
                tenant: ctx.parameter("tenant"), username: body.username, signals: signals, context: context, client: Self.clientIP(request),
                logger: ctx.logger)
            return try .json(started, status: 201, headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/tenants/{tenant}/signins/quick", .open) { request, ctx in
            let body = try request.decode(QuickSignInRequest.self)
            let (signals, context) = try Self.signalsAndContext(body.signals, body.context, request: request)
            let result = try await coordinator.quick(
                body, tenant: ctx.parameter("tenant"), signals: signals, context: context, client: Self.clientIP(request), logger: ctx.logger)
            return try .json(result, headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/internal/tenants/{tenant}/registration-decision", calls.guardInternal) { request, ctx in
            let body = try request.decode(RegistrationDecisionRequest.self)
            try UsernameRules.require(body.username)
            return try .json(try await coordinator.registrationDecision(tenant: ctx.parameter("tenant"), username: body.username))
        }
        router.get("/v1/tenants/{tenant}/signins/{signinId}", .open) { _, ctx in
            let progress = try await coordinator.progress(of: ctx.parameter("signinId"), tenant: ctx.parameter("tenant"))
            return try .json(progress, headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/tenants/{tenant}/signins/{signinId}/methods/{method}/challenge", .open) { request, ctx in
            let body = try await coordinator.challenge(
                signin: ctx.parameter("signinId"), tenant: ctx.parameter("tenant"), method: ctx.parameter("method"), request: request,
                client: Self.clientIP(request))
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: body)
        }
        router.post("/v1/tenants/{tenant}/signins/{signinId}/methods/{method}/verify", .open) { request, ctx in
            let progress = try await coordinator.verify(
                signin: ctx.parameter("signinId"), tenant: ctx.parameter("tenant"), method: ctx.parameter("method"), request: request,
                client: Self.clientIP(request), logger: ctx.logger)
            return try .json(progress, headers: [("Cache-Control", "no-store")])
        }
        router.put("/v1/tenants/{tenant}/signins/{signinId}/registration-answer", .open) { request, ctx in
            try await coordinator.answer(signin: ctx.parameter("signinId"), tenant: ctx.parameter("tenant")) {
                try request.decode(RegistrationAnswerRequest.self).answer
            }
            return HTTPResponse(status: 204)
        }
        router.post("/v1/tenants/{tenant}/signins/{signinId}/session", .open) { request, ctx in
            // ENFORCE_REGISTRATION: the registration-only token, once the user registered.
            let body = try request.decode(RegistrationSessionRequest.self)
            let tokens = try await coordinator.sessionAfterRegistration(
                signin: ctx.parameter("signinId"), tenant: ctx.parameter("tenant"), token: body.registrationToken, logger: ctx.logger)
            return try .json(tokens, headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/tenants/{tenant}/signins/{signinId}/reject", .open) { _, ctx in
            let progress = try await coordinator.reject(signin: ctx.parameter("signinId"), tenant: ctx.parameter("tenant"), logger: ctx.logger)
            return try .json(progress, headers: [("Cache-Control", "no-store")])
        }
    }

    /// The address the gateway saw: the last `X-Forwarded-For` entry (the gateway appends it;
    /// earlier entries are the client's to write).
    static func clientIP(_ request: HTTPRequest) -> String {
        request.header("X-Forwarded-For")?.split(separator: ",").last.map { $0.trimmingWhitespace() } ?? "direct"
    }

    /// A sign-in's signals and context, bounded (64 members each, 8 levels). `signals.ip` is
    /// always the address the gateway saw: the routes are open, so a client's own `ip` would let
    /// it choose which network rules see (a DENY on a network dodged, an ALLOW on the office
    /// network taken from anywhere); what the client sent as `ip` is kept as
    /// `signals.reportedIp`, a client assertion like every other signal.
    static func signalsAndContext(
        _ signals: [String: AnyJSON]?, _ context: [String: AnyJSON]?, request: HTTPRequest
    ) throws -> ([String: AnyJSON], [String: AnyJSON]) {
        var signals = signals ?? [:]
        let context = context ?? [:]
        guard signals.count <= 64, context.count <= 64, AnyJSON.object(signals).depth <= 8, AnyJSON.object(context).depth <= 8 else {
            throw HTTPError.invalid("signals", "signals and context hold at most 64 members each, nested at most 8 deep.")
        }
        if let reported = signals.removeValue(forKey: "ip"), signals["reportedIp"] == nil { signals["reportedIp"] = reported }
        signals["ip"] = .string(clientIP(request))
        return (signals, context)
    }
}

import HTTPServer
import Schema

/// The guards of Signet's routes. Each authenticates the caller the route admits and sets the
/// principal the handler reads; the authorization matrix test (per service) compares every
/// registered route's guard with its table.
///
/// | guard | admits | principal |
/// |---|---|---|
/// | `public` | anyone | `.anonymous` |
/// | `admin` | the operator's admin token | `.admin` |
/// | `relyingParty` | an API key of the path's `{tenant}` | `.relyingParty` |
/// | `relyingPartyOrAdmin` | either of the above | `.relyingParty` or `.admin` |
/// | `relyingPartyOrSelf` | an API key of the tenant, or a user's session (or sign-up) token of the tenant for the path's `{username}` when there is one | `.relyingParty`, `.user` or `.signingUp` |
/// | `internal` | another Signet service with the internal token | `.service` |
extension ServiceContext {
    /// The operator's admin token.
    public var admin: RouteGuard {
        RouteGuard(name: "admin") { request, _ in try requireAdmin(request) }
    }

    /// An RP API key of the path's `{tenant}`.
    public var relyingParty: RouteGuard {
        let tenants = tenants
        return RouteGuard(name: "relyingParty") { request, ctx in
            try await tenants.authenticateRelyingParty(request, tenant: ctx.parameter("tenant"))
        }
    }

    /// An RP API key of the path's `{tenant}`, or the admin token.
    public var relyingPartyOrAdmin: RouteGuard {
        let tenants = tenants
        return RouteGuard(name: "relyingPartyOrAdmin") { request, ctx in
            if let admin = try? requireAdmin(request) { return admin }
            return try await tenants.authenticateRelyingParty(request, tenant: ctx.parameter("tenant"))
        }
    }

    /// An RP API key of the path's `{tenant}`, or a user's session or sign-up token of that
    /// tenant; when the path names a `{username}`, the token must be that user's (compared by
    /// ``UsernameRules/identical(_:_:)``). A route whose username is in the body checks it
    /// against the principal itself (``Principal/isOtherUser(than:)``).
    ///
    /// - Throws: 401 for a missing or invalid credential; 400 `invalid_field` for a path
    ///   username that is not one; 403 `forbidden` for another user's token.
    public func relyingPartyOrSelf(sessions: SessionTokenVerifier?) -> RouteGuard {
        let tenants = tenants
        return RouteGuard(name: "relyingPartyOrSelf") { request, ctx in
            let principal = try await tenants.authenticateRelyingPartyOrUser(request, tenant: ctx.parameter("tenant"), sessions: sessions)
            if ctx.parameters["username"] != nil, principal.isOtherUser(than: try ctx.username()) {
                throw HTTPError(.forbidden, detail: "A session token acts on its own user's account only.")
            }
            return principal
        }
    }
}

extension InternalCalls {
    /// Another Signet service, by the internal token and its name (`/v1/internal/…`).
    public var guardInternal: RouteGuard {
        RouteGuard(name: "internal") { request, _ in .service(try requireCaller(request)) }
    }
}

extension HTTPApplication {
    /// Path parameters every Signet service checks before routing to a handler: `{tenant}`
    /// (``TenantValidation``). Usernames are checked where they are read
    /// (``RequestContext/username()``), as their rule answers with its own field.
    public static let signetParameterChecks: [String: ParameterCheck] = [
        "tenant": ParameterCheck(requirement: "Tenant ids are 1-63 lower-case letters, digits or dashes.") { TenantValidation.isValidTenantID($0) }
    ]
}

import HTTPServer
import JSON
import Schema
import Tokens

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
/// | `relyingPartyOrSelf` | an API key of the tenant, or a user's session token of the tenant for the path's `{username}` when there is one | `.relyingParty` or `.user` |
/// | `relyingPartyOrRegistrant[kinds]` | as `relyingPartyOrSelf`, and also a registration-only token of one of the route's ``RegistrationTokenKind``s (`signUp`, `enforcedRegistration`, `qrRegistration`) | `.relyingParty`, `.user` or `.signingUp` |
/// | `internal` | another Signet service with the internal token | `.service` |
/// | `device` | a proof (``DeviceProof``) signed by the device key of the path's `{deviceId}` | `.device` |
/// | `deviceKeyHolder` | a proof signed by the device key in the body's `deviceKey` member | `.deviceKeyHolder` |
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

    /// An RP API key of the path's `{tenant}`, or a user's session token of that tenant; when
    /// the path names a `{username}`, the token must be that user's (compared by
    /// ``UsernameRules/identical(_:_:)``). A route whose username is in the body checks it
    /// against the principal itself (``Principal/isOtherUser(than:)``). A registration-only
    /// token (``Principal/signingUp(tenant:username:kind:)``: a sign-up, a sign-in whose
    /// registration rules enforce registering first, or a QR registration) is refused here:
    /// only the routes guarded by ``relyingPartyOrRegistrant(sessions:accepting:)`` take it.
    ///
    /// - Throws: 401 for a missing or invalid credential; 400 `invalid_field` for a path
    ///   username that is not one; 403 `forbidden` for another user's token; 403
    ///   `registration_only` for a registration-only token.
    public func relyingPartyOrSelf(sessions: SessionTokenVerifier?) -> RouteGuard {
        selfGuard(name: "relyingPartyOrSelf", sessions: sessions, admits: [])
    }

    /// As ``relyingPartyOrSelf(sessions:)``, and also a registration-only token of the user
    /// whose kind is one of `kinds`: the routes that register a method (options, finish, set-up
    /// and confirmation), list what the user has, or say what the user may register each name
    /// the kinds they take, so that a token issued for one purpose (a QR registration's: a
    /// passkey on the phone) reaches only the routes of that purpose. The guard's name carries
    /// the kinds (`relyingPartyOrRegistrant[signUp,enforcedRegistration]`), so the
    /// authorization matrix shows what each route takes.
    ///
    /// - Throws: as ``relyingPartyOrSelf(sessions:)``, and 403 `registration_token_not_accepted`
    ///   for a registration-only token of another kind.
    public func relyingPartyOrRegistrant(sessions: SessionTokenVerifier?, accepting kinds: Set<RegistrationTokenKind>) -> RouteGuard {
        precondition(!kinds.isEmpty, "a registrant route takes at least one kind of registration-only token")
        let names = RegistrationTokenKind.allCases.filter(kinds.contains).map(\.rawValue).joined(separator: ",")
        return selfGuard(name: "relyingPartyOrRegistrant[\(names)]", sessions: sessions, admits: kinds)
    }

    private func selfGuard(name: String, sessions: SessionTokenVerifier?, admits kinds: Set<RegistrationTokenKind>) -> RouteGuard {
        let tenants = tenants
        return RouteGuard(name: name) { request, ctx in
            let principal = try await tenants.authenticateRelyingPartyOrUser(request, tenant: ctx.parameter("tenant"), sessions: sessions)
            if ctx.parameters["username"] != nil, principal.isOtherUser(than: try ctx.username()) {
                throw HTTPError(.forbidden, detail: "A session token acts on its own user's account only.")
            }
            try principal.requireAdmitted(registrationTokens: kinds)
            return principal
        }
    }
}

extension ProblemCode {
    /// A registration-only token (a sign-up's, a sign-in's whose registration rules
    /// ENFORCE_REGISTRATION, or a QR registration's) on a route that does not register a method.
    public static let registrationOnly = ProblemCode("registration_only", status: 403, title: "Registration only")
    /// A registration-only token on a route that takes registration-only tokens, but not of
    /// its kind (a QR registration's token anywhere but WebAuthn registration options and finish).
    public static let registrationTokenNotAccepted = ProblemCode(
        "registration_token_not_accepted", status: 403, title: "Not for this kind of registration-only token")
}

extension ServiceContext {
    /// A registered device of the path's `{tenant}`: the `Device-Proof` header verifies with
    /// the device key of the path's `{deviceId}` and its nonce is new.
    ///
    /// - Throws: 401 `unauthorized` for a missing or invalid proof, an unknown or revoked
    ///   device (the same answer: a stranger learns nothing about which ids exist), or a replay.
    public func deviceSigned(_ devices: some DeviceKeyDirectory) -> RouteGuard {
        RouteGuard(name: "device") { request, ctx in
            // Nothing is read before a proof is there at all.
            guard request.header(DeviceProof.headerName) != nil else { throw DeviceProof.refused("no Device-Proof header") }
            let tenant = ctx.parameter("tenant")
            let deviceId = ctx.parameter("deviceId")
            guard let key = try await devices.deviceKey(tenant: tenant, deviceId: deviceId) else { throw DeviceProof.refused("no such device") }
            try await devices.admit(request, key: key, tenant: tenant, holder: deviceId)
            return .device(tenant: tenant, deviceId: deviceId)
        }
    }

    /// The holder of the device key in the JSON body's `deviceKey` member (a public JWK): the
    /// `Device-Proof` header verifies with that key and its nonce is new. For the call that
    /// creates or updates a device, before it has an id.
    ///
    /// - Throws: 401 `unauthorized` for a missing or invalid proof or a replay; 400
    ///   `malformed_json` / `invalid_field` (`deviceKey`) for a body without a usable key.
    public func deviceKeyHolder(_ devices: some DeviceKeyDirectory) -> RouteGuard {
        RouteGuard(name: "deviceKeyHolder") { request, ctx in
            guard request.header(DeviceProof.headerName) != nil else { throw DeviceProof.refused("no Device-Proof header") }
            let body = try request.decode(DeviceKeyHolderBody.self)
            guard case .object(let members) = body.deviceKey, let key = try? JWK(jsonObject: members), key.keyType == "EC",
                (try? JWSVerificationKey(jwk: key, allowedAlgorithms: [.es256])) != nil
            else { throw HTTPError.invalid("deviceKey", "deviceKey must be a public P-256 JWK (ES256).") }
            let tenant = ctx.parameter("tenant")
            let thumbprint = key.thumbprintBase64URL
            try await devices.admit(request, key: key, tenant: tenant, holder: "jkt:" + thumbprint)
            return .deviceKeyHolder(tenant: tenant, thumbprint: thumbprint)
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

extension Principal {
    /// Refuses a registration-only principal (``signingUp(tenant:username:kind:)``) whose kind
    /// is not in `kinds` (empty: the route takes none); any other principal passes. The route
    /// guards call it; a route that reads a registration-only token from its body decides by
    /// ``RegistrationTokenKind/init(claims:)`` the same way.
    ///
    /// - Throws: 403 `registration_only` when the route takes no registration-only token; 403
    ///   `registration_token_not_accepted` when it takes other kinds.
    public func requireAdmitted(registrationTokens kinds: Set<RegistrationTokenKind>) throws {
        guard case .signingUp(_, _, let kind) = self else { return }
        guard !kinds.isEmpty else {
            throw HTTPError(.registrationOnly, detail: "This token may only register a method; register one, then get a session.")
        }
        guard kinds.contains(kind) else {
            throw HTTPError(
                .registrationTokenNotAccepted,
                detail: kind == .qrRegistration
                    ? "A QR registration's token only registers a passkey (WebAuthn registration options and finish)."
                    : "This kind of registration-only token is not taken here.")
        }
    }
}

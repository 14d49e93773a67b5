import Crypto
import FIDO
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Schema
import ServiceKit

/// FIDO UAF 1.2 registration over HTTP (UAF Protocol §3.4): the RegistrationRequest, whose
/// state travels sealed in `serverData` (nothing is written), then the client's
/// RegistrationResponse verified by `FIDO.UAFRegistrationVerifier` under the tenant's UAF
/// policy and metadata, and the keys stored with their events. Also the tenant's TrustedFacets
/// document (its AppID), its UAF settings (admin), and the user's UAF registrations.
struct UAFRegistrationRoutes: Sendable {
    let context: ServiceContext
    let handles: CeremonyHandles
    let store: UAFStore
    /// Checks users' session tokens; nil accepts RP API keys only.
    let sessions: SessionTokenVerifier?
    let metadata: MetadataService?
    /// The public base URL of the registration service (behind the gateway): AppIDs are
    /// `<base>/v1/tenants/<tenant>/uaf/facets`.
    let appIDBase: String
    /// The certificate(s) UAF clients' TLS server presents (`SIGNET_UAF_TLS_SERVER_CERTIFICATES`),
    /// for channel binding; empty: not compared.
    var serverCertificates: [UAFServerCertificate] = []

    static let requestLifetime: TimeInterval = 300
    static let handlePurpose = "signet.uaf.registration.v1"
    /// The versions offered: one request per version, the client answers one.
    static let offeredVersions: [UAFVersion] = [.v1_2, .v1_1]

    /// What `serverData` carries from the request to the response.
    struct ServerData: Codable {
        var tenant: String
        var username: String
        var challenge: String
        var expiresAt: Date
    }

    static func appID(base: String, tenant: String) -> String { "\(base)/v1/tenants/\(tenant)/uaf/facets" }

    func register(on router: inout GuardedRouter) {
        // A registration-only token (sign-up, ENFORCE_REGISTRATION) registers and lists keys;
        // deregistering and changing them need a session.
        let selfOrRP = context.relyingPartyOrSelf(sessions: sessions)
        // A QR registration's token does not (it registers a passkey only).
        let registrant = context.relyingPartyOrRegistrant(sessions: sessions, accepting: [.signUp, .enforcedRegistration])
        router.get("/v1/tenants/{tenant}/uaf/facets", .open) { _, ctx in try await facets(ctx) }
        // A sign-up's token acts only on an account it registered on first (SignUpClaim).
        router.post("/v1/tenants/{tenant}/uaf/registrations/requests", registrant) { request, ctx in
            try await context.signUpScoped(request, ctx) { try await requests(request, ctx) }
        }
        router.post("/v1/tenants/{tenant}/uaf/registrations", registrant) { request, ctx in
            try await context.signUpScoped(request, ctx) { try await finish(request, ctx) }
        }
        router.get("/v1/tenants/{tenant}/users/{username}/uaf/registrations", registrant) { request, ctx in
            try await context.signUpScoped(request, ctx) {
                try .json(UAFRegistrationResult(registrations: try await store.list(tenant: ctx.parameter("tenant"), username: try ctx.username())))
            }
        }
        router.delete("/v1/tenants/{tenant}/users/{username}/uaf/registrations/{aaid}/{keyId}", selfOrRP) { _, ctx in try await deregister(ctx) }
        router.patch("/v1/tenants/{tenant}/users/{username}/uaf/registrations/{aaid}/{keyId}", selfOrRP) { request, ctx in try await update(request, ctx) }
        router.put("/v1/admin/tenants/{tenant}/uaf-settings", context.admin) { request, ctx in try await putSettings(request, ctx) }
        router.get("/v1/admin/tenants/{tenant}/uaf-settings", context.admin) { _, ctx in try await getSettings(ctx) }
    }

    // MARK: - Facets and settings

    /// The tenant's trusted facets: its configured facet IDs, or its web origins.
    func settings(_ tenant: TenantResource) async throws -> UAFStore.Settings {
        try await store.settings(tenant: tenant.id)
            ?? UAFStore.Settings(facetIDs: tenant.origins, policy: .acceptAll, policyDocument: nil, allowsSurrogateWithoutMetadata: true, revision: 0)
    }

    /// `GET …/uaf/facets`: the TrustedFacets document (FIDO AppID and Facet §3.1.2), public.
    func facets(_ ctx: RequestContext) async throws -> HTTPResponse {
        guard let tenant = try await context.tenants.find(ctx.parameter("tenant")) else { throw HTTPError(.tenantNotFound) }
        let ids = try await settings(tenant).facetIDs
        let document = UAFTrustedFacetList(trustedFacets: Self.offeredVersions.map { UAFTrustedFacetList.TrustedFacets(version: $0, ids: ids) })
        return HTTPResponse(
            status: 200, headers: [("Content-Type", "application/fido.trusted-apps+json"), ("Cache-Control", "public, max-age=300")],
            body: try JSONValueEncoder().encodeToBytes(document))
    }

    /// `PUT /v1/admin/tenants/{tenant}/uaf-settings`.
    func putSettings(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let body = try request.decode(UAFSettingsDocument.self)
        guard body.facetIds.count <= UAFValidation.maximumFacets else {
            throw HTTPError.invalid("facetIds", "At most \(UAFValidation.maximumFacets) facet IDs.")
        }
        for (i, id) in body.facetIds.enumerated() where !UAFValidation.isFacetID(id) {
            throw HTTPError.invalid("facetIds[\(i)]", "A facet ID is an https origin, android:apk-key-hash:… or ios:bundle-id:….")
        }
        if let policy = body.policy {
            guard policy.depth <= 6, let decoded = try? JSONValueDecoder().decode(UAFPolicy.self, from: policy),
                policy.objectValue?["accepted"]?.arrayValue?.isEmpty == false
            else { throw HTTPError.invalid("policy", "policy must be a UAF Policy with a non-empty accepted list.") }
            // Criteria Signet cannot evaluate would never match: refused here, by name.
            if let unsupported = decoded.unsupportedCriterion {
                throw HTTPError.invalid("policy.\(unsupported.path)", "\(unsupported.reason); a criterion with it would never match.")
            }
        }
        let allows = body.allowSurrogateWithoutMetadata ?? true
        let revision = try await store.putSettings(tenant: tenant, facetIDs: body.facetIds, policy: body.policy, allowsSurrogate: allows, at: Date())
        ctx.logger.info("uaf settings updated")
        return try .json(
            UAFSettingsDocument(
                appId: Self.appID(base: appIDBase, tenant: tenant), facetIds: body.facetIds, policy: body.policy ?? UAFStore.defaultPolicyDocument,
                allowSurrogateWithoutMetadata: allows, revision: revision))
    }

    /// `GET /v1/admin/tenants/{tenant}/uaf-settings`.
    func getSettings(_ ctx: RequestContext) async throws -> HTTPResponse {
        guard let tenant = try await context.tenants.find(ctx.parameter("tenant")) else { throw HTTPError(.tenantNotFound) }
        let s = try await settings(tenant)
        return try .json(
            UAFSettingsDocument(
                appId: Self.appID(base: appIDBase, tenant: tenant.id), facetIds: s.facetIDs, policy: s.policyDocument ?? UAFStore.defaultPolicyDocument,
                allowSurrogateWithoutMetadata: s.allowsSurrogateWithoutMetadata, revision: s.revision))
    }

    // MARK: - Registration

    /// `POST …/uaf/registrations/requests` `{"username"}` → `{"uafRequest": [RegistrationRequest…]}`.
    func requests(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let body = try request.decode(UAFRegistrationRequestBody.self)
        try UsernameRules.require(body.username)
        try WebAuthnRegistrationRoutes.requireOwnAccount(ctx.principal, username: body.username)
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        // An account opened by a username-less sign-up registers passkeys only.
        guard try await !UserStore(pool: context.pool).isPasskeyOnly(tenant: tenantID, username: body.username) else {
            throw HTTPError(.passkeyOnlyAccount, detail: "This account was opened for passkeys only; register a passkey.")
        }
        let policy = try await settings(tenant).policy
        let expiresAt = Date().addingTimeInterval(Self.requestLifetime)
        let challenge = SecureRandom.token(byteCount: 32)
        let serverData = try handles.seal(
            ServerData(tenant: tenantID, username: body.username, challenge: challenge, expiresAt: expiresAt), purpose: Self.handlePurpose)
        let appID = Self.appID(base: appIDBase, tenant: tenantID)
        let messages = try Self.offeredVersions.map { version in
            try JSONValueEncoder().encode(
                UAFRegistrationRequest(
                    header: UAFOperationHeader(upv: version, op: "Reg", appID: appID, serverData: serverData),
                    challenge: challenge, username: body.username, policy: policy))
        }
        return try .json(UAFRequestEnvelope(uafRequest: messages, expiresAt: expiresAt), headers: [("Cache-Control", "no-store")])
    }

    /// `POST …/uaf/registrations` `{"uafResponse"}` → 201 with the registered keys.
    func finish(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let body = try request.decode(UAFResponseBody.self)
        let response: UAFResponse
        do { response = try UAFMessageDecoding.response(body.uafResponse) } catch {
            throw HTTPError(.uafRegistrationRefused(error), detail: error.description, field: "uafResponse")
        }
        // serverData: sealed by this service for this tenant, unexpired.
        guard let sealed = response.header.serverData,
            let state = try? handles.open(sealed, as: ServerData.self, purpose: Self.handlePurpose)
        else { throw HTTPError(.invalidHandle, detail: "serverData is not one this service issued.") }
        guard state.tenant == tenantID else { throw HTTPError(.invalidHandle, detail: "serverData belongs to another tenant.") }
        guard state.expiresAt > Date() else { throw HTTPError(.handleExpired, detail: "The registration request expired; start again.") }
        try WebAuthnRegistrationRoutes.requireOwnAccount(ctx.principal, username: state.username)
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        let settings = try await settings(tenant)
        let metadata = self.metadata
        let verifier = UAFRegistrationVerifier(
            context: UAFResponseContext(appID: Self.appID(base: appIDBase, tenant: tenantID), trustedFacetIDs: settings.facetIDs, acceptedVersions: Self.offeredVersions,
                serverCertificates: serverCertificates),
            policy: settings.policy, allowsSurrogateWithoutMetadata: settings.allowsSurrogateWithoutMetadata,
            metadata: { aaid in metadata?.blob?.entry(forAAID: aaid) })
        let verified: [UAFVerifiedRegistration]
        do {
            verified = try verifier.verify(response, expectedChallenge: state.challenge, serverData: sealed)
        } catch {
            ctx.logger.info("uaf registration refused", metadata: [LogKey.errorCode: .string(error.code.rawValue)])
            throw HTTPError(.uafRegistrationRefused(error), detail: error.description)
        }
        let now = Date()
        try await store.register(
            verified, tenant: tenantID, username: state.username, appID: Self.appID(base: appIDBase, tenant: tenantID), challenge: Array(state.challenge.utf8), challengeExpiresAt: state.expiresAt, at: now)
        ctx.logger.info("uaf authenticator registered")
        let resources = verified.map {
            UAFRegistrationResource(
                aaid: $0.aaid, keyId: Base64URL.encode($0.keyID), attestationType: $0.attestation.typeName,
                signatureAlgorithm: Int($0.publicKey.algorithm.rawValue), friendlyName: $0.description, status: "active", createdAt: now)
        }
        return try .json(UAFRegistrationResult(registrations: resources), status: 201)
    }

    // MARK: - Deregistration

    /// `DELETE …/users/{username}/uaf/registrations/{aaid}/{keyId}` (the AAID's `#` sent as
    /// `%23`): deregisters the key and answers the DeregistrationRequest messages (UAF Protocol
    /// §3.6.2) for the client to pass to its authenticator.
    func deregister(_ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let username = try ctx.username()
        let (aaid, keyID) = try Self.key(ctx)
        try await store.deregister(tenant: tenant, username: username, aaid: aaid, keyID: keyID, at: Date())
        ctx.logger.info("uaf key deregistered")
        let appID = Self.appID(base: appIDBase, tenant: tenant)
        let messages = try Self.offeredVersions.map { version in
            try JSONValueEncoder().encode(
                UAFDeregistrationRequest(
                    header: UAFOperationHeader(upv: version, op: "Dereg", appID: appID, serverData: nil),
                    authenticators: [UAFDeregisterAuthenticator(aaid: aaid, keyID: Base64URL.encode(keyID))]))
        }
        return try .json(UAFDeregistrationResult(uafRequest: messages))
    }

    /// The path's `{aaid}` (upper case) and `{keyId}`.
    static func key(_ ctx: RequestContext) throws -> (aaid: String, keyID: [UInt8]) {
        let aaid = ctx.parameter("aaid").uppercased()
        guard UAFValidation.isAAID(aaid) else { throw HTTPError.invalid("aaid", "aaid must be VVVV#MMMM in hexadecimal (# sent as %23).") }
        guard let keyID = Base64URL.decode(ctx.parameter("keyId")), !keyID.isEmpty, keyID.count <= 2048 else {
            throw HTTPError.invalid("keyId", "keyId must be base64url.")
        }
        return (aaid, keyID)
    }

    /// `PATCH …/users/{username}/uaf/registrations/{aaid}/{keyId}` `{"friendlyName"?, "status"?}`:
    /// rename, or (the relying party only) suspend and resume; the key as it is then.
    func update(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let username = try ctx.username()
        let (aaid, keyID) = try Self.key(ctx)
        let body = try request.decode(CredentialUpdateRequest.self)
        if body.status != nil, case .user = ctx.principal {
            throw HTTPError(.forbidden, detail: "Only the relying party can suspend or resume a key.")
        }
        if let name = body.friendlyName, name.isEmpty || name.count > 100 || name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw HTTPError.invalid("friendlyName", "friendlyName must be 1-100 characters without control characters.")
        }
        if let status = body.status, !["active", "suspended"].contains(status) {
            throw HTTPError.invalid("status", "status must be active or suspended.")
        }
        guard body.friendlyName != nil || body.status != nil else { throw HTTPError.invalid("$", "Give friendlyName or status.") }
        try await store.update(tenant: tenant, username: username, aaid: aaid, keyID: keyID, friendlyName: body.friendlyName, status: body.status, at: Date())
        guard let resource = try await store.registration(tenant: tenant, username: username, aaid: aaid, keyID: keyID) else {
            throw HTTPError(.notFound)
        }
        return try .json(resource)
    }
}

import Crypto
import FIDO
import Foundation
import HTTPServer
import Platform
import Postgres
import Schema
import ServiceKit

/// WebAuthn registration: creation options (a sealed handle, nothing written), verification
/// of the browser's response (WebAuthn L3 §7.1, in `FIDO.RegistrationVerifier`), and the
/// user's credential list. Authorised by the tenant's RP API key.
struct WebAuthnRegistrationRoutes: Sendable {
    let context: ServiceContext
    let handles: CeremonyHandles
    /// FIDO MDS3 metadata, when the deployment configures a BLOB.
    let metadata: MetadataService?
    /// Checks users' session tokens; nil accepts RP API keys only.
    let sessions: SessionTokenVerifier?
    /// The registration decision rules (nil: not consulted).
    var rules: RegistrationRules? = nil

    /// A user's session token acts on that user's own account only.
    static func requireOwnAccount(_ principal: Principal, username: String) throws {
        // By bytes (UsernameRules.identical), as the database compares usernames.
        if principal.isOtherUser(than: username) {
            throw HTTPError(.forbidden, detail: "A session token acts on its own user's credentials only.")
        }
    }

    /// A sign-up token registers methods and does nothing else.
    static func refuseSignUp(_ principal: Principal) throws {
        if case .signingUp = principal { throw HTTPError(.forbidden, detail: "A sign-up token can only register methods.") }
    }
    /// Attestation trust anchors: MDS3 statements' roots, when configured.
    var anchors: any AttestationTrustAnchorSource {
        if let metadata { return TrustAnchorLookup(metadata.anchorProvider) }
        return ConfiguredTrustAnchors()
    }

    /// How long a registration ceremony may take (also the `timeout` hint to the browser).
    static let ceremonyLifetime: TimeInterval = 300
    static let handlePurpose = "signet.webauthn.registration.v1"
    /// ES256, EdDSA, RS256, PS256 (and ES384/ES512), in preference order.
    static let offeredAlgorithms = [-7, -8, -257, -37, -35, -36]

    /// What the handle carries from options to finish.
    struct HandleState: Codable {
        var tenant: String
        var username: String
        var displayName: String
        var userHandle: String
        var challenge: String
        var expiresAt: Date
        var userVerification: String
        var algorithms: [Int]
    }

    func register(on router: inout GuardedRouter) {
        let selfOrRP = context.relyingPartyOrSelf(sessions: sessions)
        router.get("/v1/tenants/{tenant}/webauthn/related-origins", .open) { _, ctx in try await relatedOrigins(ctx) }
        router.post("/v1/tenants/{tenant}/webauthn/registrations/options", selfOrRP) { request, ctx in try await options(request, ctx) }
        router.post("/v1/tenants/{tenant}/webauthn/registrations", selfOrRP) { request, ctx in try await finish(request, ctx) }
        router.get("/v1/tenants/{tenant}/users/{username}/credentials", selfOrRP) { request, ctx in try await list(request, ctx) }
        router.patch("/v1/tenants/{tenant}/users/{username}/credentials/{credentialId}", selfOrRP) { request, ctx in try await update(request, ctx) }
        router.delete("/v1/tenants/{tenant}/users/{username}/credentials/{credentialId}", selfOrRP) { request, ctx in try await deregister(request, ctx) }
    }

    // MARK: - Related origins

    /// `GET …/webauthn/related-origins`: the WebAuthn L3 §5.11 related origins document for
    /// the tenant's RP ID, `{"origins": [...]}`, for the relying party to serve at
    /// `https://<rpId>/.well-known/webauthn` so that browsers let its other origins (other
    /// domains of the same service) use the RP ID. Public, like the document itself.
    func relatedOrigins(_ ctx: RequestContext) async throws -> HTTPResponse {
        guard let tenant = try await context.tenants.find(ctx.parameter("tenant")) else { throw HTTPError(.tenantNotFound) }
        return try .json(RelatedOriginsDocument(origins: tenant.origins), headers: [("Cache-Control", "public, max-age=300")])
    }

    // MARK: - Options

    func options(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let principal = ctx.principal
        let body = try request.decode(RegistrationOptionsRequest.self)
        try UsernameRules.require(body.username)
        try Self.requireOwnAccount(principal, username: body.username)
        try await rules?.requireOffered("fido2", tenant: tenantID, username: body.username)
        let displayName = body.displayName ?? body.username
        guard !displayName.isEmpty, displayName.count <= 256 else { throw HTTPError.invalid("displayName", "displayName must be 1-256 characters.") }
        let requestedSelection = try Self.selection(body.authenticatorSelection)
        let requestedAttestation = body.attestation ?? "none"
        guard ["none", "indirect", "direct", "enterprise"].contains(requestedAttestation) else {
            throw HTTPError.invalid("attestation", "attestation must be none, indirect, direct or enterprise.")
        }
        let hints = body.hints ?? []
        guard hints.count <= 3, hints.allSatisfy({ ["security-key", "client-device", "hybrid"].contains($0) }) else {
            throw HTTPError.invalid("hints", "hints may contain security-key, client-device and hybrid.")
        }
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        // The tenant's FIDO policy tightens what the RP asked for, never loosens it.
        let policy = try await FIDOPolicyRoutes.policy(for: tenantID, pool: context.pool)
        var selection = requestedSelection
        if policy.userVerification == .required { selection.userVerification = "required" }
        if policy.residentKey == .required {
            selection.residentKey = "required"
            selection.requireResidentKey = true
        }
        let attestation = body.attestation ?? (policy.attestation.required ? policy.attestation.conveyance.rawValue : requestedAttestation)
        let algorithms = Self.offeredAlgorithms.filter { policy.allowedAlgorithms.contains(COSEAlgorithm(rawValue: $0)) }
        guard !algorithms.isEmpty else { throw HTTPError(.conflict, detail: "The tenant's policy allows none of the offered algorithms.") }

        // Existing user: same user handle, and their credentials are excluded.
        let (userHandle, existing) = try await context.pool.withConnection { conn -> ([UInt8]?, [CredentialDescriptorJSON]) in
            let user = try await conn.query("SELECT user_handle FROM users WHERE tenant_id = \(tenantID) AND username = \(body.username)")
            let creds = try await conn.query(
                "SELECT credential_id, array_to_json(transports)::text AS transports FROM credentials WHERE tenant_id = \(tenantID) AND username = \(body.username) AND status <> 'deleted'")
            let descriptors = creds.compactMap { row -> CredentialDescriptorJSON? in
                guard let id = row.bytes("credential_id") else { return nil }
                let transports = row.stringArray("transports")
                return CredentialDescriptorJSON(id: Base64URL.encode(id), transports: transports)
            }
            return (user.first?.bytes("user_handle"), descriptors)
        }
        let handleBytes = userHandle ?? SecureRandom.bytes(32)
        let challenge = SecureRandom.bytes(32)
        let state = HandleState(
            tenant: tenantID, username: body.username, displayName: displayName, userHandle: Base64URL.encode(handleBytes),
            challenge: Base64URL.encode(challenge), expiresAt: Date().addingTimeInterval(Self.ceremonyLifetime),
            userVerification: selection.userVerification ?? "preferred", algorithms: algorithms)
        let options = CreationOptionsJSON(
            rp: RelyingPartyEntityJSON(id: tenant.rpId, name: tenant.displayName),
            user: UserEntityJSON(id: state.userHandle, name: body.username, displayName: displayName),
            challenge: state.challenge,
            pubKeyCredParams: algorithms.map { CredentialParametersJSON(alg: $0) },
            timeout: Int(Self.ceremonyLifetime * 1000),
            excludeCredentials: existing,
            authenticatorSelection: selection,
            hints: hints,
            attestation: attestation,
            extensions: ExtensionInputsJSON(credProps: true))
        let handle = try handles.seal(state, purpose: Self.handlePurpose)
        return try .json(RegistrationOptionsResponse(handle: handle, publicKey: options), headers: [("Cache-Control", "no-store")])
    }

    static func selection(_ requested: AuthenticatorSelectionJSON?) throws -> AuthenticatorSelectionJSON {
        var s = requested ?? AuthenticatorSelectionJSON()
        if let a = s.authenticatorAttachment, !["platform", "cross-platform"].contains(a) {
            throw HTTPError.invalid("authenticatorSelection.authenticatorAttachment", "authenticatorAttachment must be platform or cross-platform.")
        }
        let rk = s.residentKey ?? (s.requireResidentKey == true ? "required" : "preferred")
        guard ["required", "preferred", "discouraged"].contains(rk) else {
            throw HTTPError.invalid("authenticatorSelection.residentKey", "residentKey must be required, preferred or discouraged.")
        }
        let uv = s.userVerification ?? "preferred"
        guard ["required", "preferred", "discouraged"].contains(uv) else {
            throw HTTPError.invalid("authenticatorSelection.userVerification", "userVerification must be required, preferred or discouraged.")
        }
        s.residentKey = rk
        s.requireResidentKey = rk == "required"
        s.userVerification = uv
        return s
    }

    // MARK: - Finish

    func finish(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let principal = ctx.principal
        let body = try request.decode(RegistrationFinishRequest.self)
        let state = try handles.open(body.handle, as: HandleState.self, purpose: Self.handlePurpose)
        guard state.tenant == tenantID else { throw HTTPError(.invalidHandle, detail: "The handle belongs to another tenant.") }
        try Self.requireOwnAccount(principal, username: state.username)
        guard state.expiresAt > Date() else { throw HTTPError(.handleExpired, detail: "The registration ceremony expired; start again.") }
        if let name = body.friendlyName, name.isEmpty || name.count > 100 {
            throw HTTPError.invalid("friendlyName", "friendlyName must be 1-100 characters.")
        }
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        guard let clientData = Base64URL.decode(body.credential.response.clientDataJSON) else {
            throw HTTPError.invalid("credential.response.clientDataJSON", "clientDataJSON must be base64url.")
        }
        guard let attestationObject = Base64URL.decode(body.credential.response.attestationObject) else {
            throw HTTPError.invalid("credential.response.attestationObject", "attestationObject must be base64url.")
        }
        guard body.credential.type == "public-key" else { throw HTTPError.invalid("credential.type", "type must be public-key.") }
        guard let challenge = Base64URL.decode(state.challenge), let userHandle = Base64URL.decode(state.userHandle) else {
            throw HTTPError(.invalidHandle)
        }
        let policy = try await FIDOPolicyRoutes.policy(for: tenantID, pool: context.pool)
        // A policy that requires attestation trusts only chains to configured anchors (and
        // MDS3 roots); otherwise an untrusted chain counts as no attestation (§7.1 step 24).
        let trust: any AttestationTrustEvaluator =
            policy.attestation.required
            ? TrustAnchorEvaluator(source: anchors, allowsIntermediateAnchors: true)
            : ConsumerAttestationTrust(source: anchors, logger: ctx.logger)
        let verifier = RegistrationVerifier(
            relyingParty: RelyingParty(id: tenant.rpId, origins: tenant.origins),
            requiresUserVerification: state.userVerification == "required" || policy.userVerification == .required,
            allowedAlgorithms: state.algorithms.map { COSEAlgorithm(rawValue: $0) },
            trustEvaluator: trust)
        let response = RegistrationResponse(
            clientDataJSON: clientData, attestationObject: attestationObject, transports: body.credential.response.transports ?? [])
        let verified: VerifiedRegistration
        do {
            verified = try verifier.verify(response, expectedChallenge: challenge)
        } catch {
            ctx.logger.info("registration refused", metadata: [LogKey.errorCode: .string(error.code.rawValue)])
            throw HTTPError(ProblemCode(error.code.rawValue, status: 400, title: "Registration refused"), detail: error.description)
        }
        if case .refused(let refusal) = policy.evaluate(
            registration: verified, metadata: metadata, residentKey: body.credential.clientExtensionResults?.credProps?.rk)
        {
            ctx.logger.info("registration refused by policy", metadata: [LogKey.errorCode: .string(refusal.code.rawValue)])
            throw HTTPError(
                ProblemCode(refusal.code.rawValue, status: 400, title: "Registration refused by policy"),
                detail: "Refused by the tenant's FIDO policy rule \(refusal.rule): \(refusal.detail).")
        }
        // The credential id the client reports must be the authenticator's.
        guard Base64URL.decode(body.credential.rawId) == verified.credentialID, body.credential.id == body.credential.rawId else {
            throw HTTPError(ProblemCode("credential_id_mismatch", status: 400, title: "Registration refused"), detail: "id/rawId differ from the attested credential id.")
        }
        let now = Date()
        let transports = Array((body.credential.response.transports ?? []).prefix(8))
        let resource = CredentialResource(
            credentialId: Base64URL.encode(verified.credentialID), aaguid: verified.aaguid.description.lowercased(),
            attestationFormat: verified.attestationFormat, attestationType: verified.attestationType.rawValue,
            algorithm: verified.algorithm.rawValue, userVerified: verified.userVerified, backupEligible: verified.backupEligible,
            backupState: verified.backupState, transports: transports, friendlyName: body.friendlyName, status: "active",
            createdAt: now, lastUsedAt: nil)
        try await context.withTransaction { conn in
            // Single use of the challenge, in the same transaction as the credential.
            let used = try await conn.query(
                """
                INSERT INTO used_challenges (challenge_hash, expires_at) VALUES (\(PostgresBytes(SHA256.hash(challenge))), \(state.expiresAt))
                ON CONFLICT DO NOTHING
                """)
            guard used.affectedRows == 1 else { throw HTTPError(.challengeReplayed, detail: "This registration was already completed.") }
            try await conn.query(
                """
                INSERT INTO users (tenant_id, username, user_handle, display_name)
                VALUES (\(tenantID), \(state.username), \(PostgresBytes(userHandle)), \(state.displayName))
                ON CONFLICT (tenant_id, username) DO NOTHING
                """)
            let owner = try await conn.query("SELECT user_handle FROM users WHERE tenant_id = \(tenantID) AND username = \(state.username)")
            guard owner.first?.bytes("user_handle") == userHandle else {
                throw HTTPError(.conflict, detail: "The user was registered concurrently; start again.")
            }
            let inserted = try await conn.query(
                """
                INSERT INTO credentials (tenant_id, credential_id, username, user_handle, public_key_cose, algorithm, sign_count, aaguid,
                    backup_eligible, backup_state, user_verified, transports, attestation_format, attestation_type, friendly_name, created_at)
                VALUES (\(tenantID), \(PostgresBytes(verified.credentialID)), \(state.username), \(PostgresBytes(userHandle)),
                    \(PostgresBytes(verified.publicKeyCOSE)), \(verified.algorithm.rawValue), \(Int64(verified.signCount)),
                    \(resource.aaguid), \(verified.backupEligible), \(verified.backupState), \(verified.userVerified),
                    \(PostgresArray(transports)), \(verified.attestationFormat), \(verified.attestationType.rawValue), \(body.friendlyName), \(now))
                ON CONFLICT DO NOTHING
                """)
            guard inserted.affectedRows == 1 else {
                throw HTTPError(ProblemCode("credential_exists", status: 409, title: "Credential already registered"),
                                detail: "This credential is already registered.")
            }
            let event = CredentialRegistered(
                tenantId: tenantID, username: state.username, userHandle: state.userHandle, credentialId: resource.credentialId,
                publicKeyCose: Base64URL.encode(verified.publicKeyCOSE), algorithm: verified.algorithm.rawValue,
                signCount: Int(verified.signCount), backupEligible: verified.backupEligible, backupState: verified.backupState,
                transports: transports, aaguid: resource.aaguid, registeredAt: now)
            try await Outbox.enqueue(event, source: .registration, subject: tenantID, key: tenantID, on: conn)
        }
        ctx.logger.info("credential registered", metadata: ["signet.attestation.format": .string(verified.attestationFormat)])
        var registered = resource
        registered.quickAuth = QuickAuthData(tenant: tenantID, rpId: tenant.rpId, credentialId: resource.credentialId)
        return try .json(registered, status: 201)
    }

    // MARK: - Manage

    /// `PATCH …/credentials/{credentialId}`: rename, suspend or resume. Every change is an
    /// event; a suspension stops sign-in as soon as the authentication service applies it.
    func update(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let principal = ctx.principal
        let username = try ctx.username()
        try Self.refuseSignUp(principal)
        guard let credentialID = Base64URL.decode(ctx.parameter("credentialId")), !credentialID.isEmpty else {
            throw HTTPError.invalid("credentialId", "credentialId must be base64url.")
        }
        let body = try request.decode(CredentialUpdateRequest.self)
        if body.status != nil, case .user = principal {
            // Suspending and resuming are the relying party's decisions: a resume may lift a
            // suspicion of cloning or a revoked model.
            throw HTTPError(.forbidden, detail: "Only the relying party can suspend or resume a credential.")
        }
        if let name = body.friendlyName, name.isEmpty || name.count > 100 || name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw HTTPError.invalid("friendlyName", "friendlyName must be 1-100 characters without control characters.")
        }
        if let status = body.status, !["active", "suspended"].contains(status) {
            throw HTTPError.invalid("status", "status must be active or suspended.")
        }
        guard body.friendlyName != nil || body.status != nil else { throw HTTPError.invalid("$", "Give friendlyName or status.") }
        let now = Date()
        try await context.withTransaction { conn in
            let rows = try await conn.query(
                """
                SELECT status, friendly_name FROM credentials
                WHERE tenant_id = \(tenantID) AND username = \(username) AND credential_id = \(PostgresBytes(credentialID)) AND status <> 'deleted'
                FOR UPDATE
                """)
            guard let row = rows.first else { throw HTTPError(.notFound, detail: "No such credential for this user.") }
            if let name = body.friendlyName, name != row.string("friendly_name") {
                try await conn.query(
                    "UPDATE credentials SET friendly_name = \(name) WHERE tenant_id = \(tenantID) AND credential_id = \(PostgresBytes(credentialID))")
                try await Outbox.enqueue(
                    CredentialRenamed(tenantId: tenantID, credentialId: Base64URL.encode(credentialID), renamedAt: now), source: .registration,
                    subject: tenantID, key: tenantID, on: conn)
            }
            if let status = body.status, status != row.string("status") {
                try await conn.query(
                    """
                    UPDATE credentials SET status = \(status), status_reason = NULL
                    WHERE tenant_id = \(tenantID) AND credential_id = \(PostgresBytes(credentialID))
                    """)
                try await Outbox.enqueue(
                    CredentialStatusChanged(tenantId: tenantID, credentialId: Base64URL.encode(credentialID), status: status, changedAt: now),
                    source: .registration, subject: tenantID, key: tenantID, on: conn)
            }
        }
        guard let resource = try await credentials(tenantID: tenantID, username: username).first(where: { $0.credentialId == Base64URL.encode(credentialID) }) else {
            throw HTTPError(.notFound)
        }
        return try .json(resource)
    }

    /// `DELETE …/credentials/{credentialId}`: deregisters; 204, or 404 when unknown.
    func deregister(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let principal = ctx.principal
        let username = try ctx.username()
        try Self.refuseSignUp(principal)
        guard let credentialID = Base64URL.decode(ctx.parameter("credentialId")), !credentialID.isEmpty else {
            throw HTTPError.invalid("credentialId", "credentialId must be base64url.")
        }
        let now = Date()
        try await context.withTransaction { conn in
            let updated = try await conn.query(
                """
                UPDATE credentials SET status = 'deleted'
                WHERE tenant_id = \(tenantID) AND username = \(username) AND credential_id = \(PostgresBytes(credentialID)) AND status <> 'deleted'
                """)
            guard updated.affectedRows == 1 else { throw HTTPError(.notFound, detail: "No such credential for this user.") }
            try await Outbox.enqueue(
                CredentialStatusChanged(tenantId: tenantID, credentialId: Base64URL.encode(credentialID), status: "deleted", changedAt: now),
                source: .registration, subject: tenantID, key: tenantID, on: conn)
        }
        ctx.logger.info("credential deregistered")
        return HTTPResponse(status: 204)
    }

    // MARK: - List

    func list(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantID = ctx.parameter("tenant")
        let username = try ctx.username()
        return try .json(CredentialList(credentials: try await credentials(tenantID: tenantID, username: username)))
    }

    func credentials(tenantID: String, username: String) async throws -> [CredentialResource] {
        let rows = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                SELECT credential_id, aaguid::text AS aaguid, attestation_format, attestation_type, algorithm, user_verified,
                       backup_eligible, backup_state, array_to_json(transports)::text AS transports, friendly_name, status,
                       status_reason, created_at, last_used_at
                FROM credentials WHERE tenant_id = \(tenantID) AND username = \(username) AND status <> 'deleted'
                ORDER BY created_at
                """)
        }
        let credentials = rows.compactMap { row -> CredentialResource? in
            guard let id = row.bytes("credential_id"), let aaguid = row.string("aaguid"), let created = row.date("created_at") else { return nil }
            return CredentialResource(
                credentialId: Base64URL.encode(id), aaguid: aaguid, attestationFormat: row.string("attestation_format") ?? "",
                attestationType: row.string("attestation_type") ?? "", algorithm: row.int("algorithm") ?? 0,
                userVerified: row.bool("user_verified") ?? false, backupEligible: row.bool("backup_eligible") ?? false,
                backupState: row.bool("backup_state") ?? false,
                transports: row.stringArray("transports") ?? [],
                friendlyName: row.string("friendly_name"), status: row.string("status") ?? "active",
                statusReason: row.string("status_reason"), createdAt: created,
                lastUsedAt: row.date("last_used_at"))
        }
        return credentials
    }
}

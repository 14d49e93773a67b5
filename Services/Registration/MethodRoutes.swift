import Crypto
import Foundation
import HTTPServer
import OTP
import Platform
import Postgres
import QRCode
import Schema
import ServiceKit

/// Secrets the non-FIDO methods need, from the environment.
struct MethodSecrets: Sendable {
    /// Seals TOTP secrets (shared with the authentication service).
    let methodSecrets: AES256GCM
    /// Seals one-time codes to the oob-notification service.
    let delivery: AES256GCM
    /// Keys the stored hashes of one-time codes.
    let codeHashKey: [UInt8]
    let calls: InternalCalls
    let piiURL: String
    static func fromEnvironment(_ env: Environment = Environment(), logger: Logger, service: String) throws -> MethodSecrets {
        MethodSecrets(
            methodSecrets: try AES256GCM(key: try ServiceKeys.key("SIGNET_METHOD_SECRET_KEY", env, logger: logger)),
            delivery: try AES256GCM(key: try ServiceKeys.key("SIGNET_DELIVERY_KEY", env, logger: logger)),
            codeHashKey: try ServiceKeys.key("SIGNET_OTP_HASH_KEY", env, logger: logger),
            calls: InternalCalls.fromEnvironment(env, service: service),
            piiURL: env.string("SIGNET_PII_URL", default: "http://127.0.0.1:8085"))
    }
}

/// Non-FIDO methods of a user (registration service): set up `email_otp` and `sms_otp`
/// (address or number kept by the pii service; confirmed by a code delivered through the
/// oob-notification service) and `totp` (secret generated here, `otpauth://` URI and QR code,
/// confirmed by a first code); list them with the FIDO credentials; rename; remove. Every
/// activation and removal is a `MethodChanged` event.
struct MethodRoutes: Sendable {
    let context: ServiceContext
    let secrets: MethodSecrets
    let rules: RegistrationRules
    let sessions: SessionTokenVerifier?
    static let codeLifetime: TimeInterval = 300
    static let maximumConfirmAttempts = 5

    static let migration = Migration(
        104, "user_methods",
        """
        CREATE TABLE user_methods (
            id text PRIMARY KEY,
            tenant_id text NOT NULL,
            username text NOT NULL,
            type text NOT NULL,
            status text NOT NULL,
            pii_ref text,
            masked text,
            sealed_secret bytea,
            code_hash bytea,
            code_expires_at timestamptz,
            confirm_attempts integer NOT NULL DEFAULT 0,
            friendly_name text,
            created_at timestamptz NOT NULL,
            confirmed_at timestamptz
        );
        CREATE INDEX user_methods_by_user ON user_methods (tenant_id, username);
        """)

    func register(on router: inout GuardedRouter) {
        let selfOrRP = context.relyingPartyOrSelf(sessions: sessions)
        router.post("/v1/tenants/{tenant}/users/{username}/methods", selfOrRP) { request, ctx in try await create(request, ctx) }
        router.get("/v1/tenants/{tenant}/users/{username}/methods", selfOrRP) { request, ctx in try await list(request, ctx) }
        router.post("/v1/tenants/{tenant}/users/{username}/methods/{methodId}/confirm", selfOrRP) { request, ctx in try await confirm(request, ctx) }
        router.patch("/v1/tenants/{tenant}/users/{username}/methods/{methodId}", selfOrRP) { request, ctx in
            _ = try authorize(ctx, registering: false)
            return try await rename(request, ctx)
        }
        router.delete("/v1/tenants/{tenant}/users/{username}/methods/{methodId}", selfOrRP) { request, ctx in
            _ = try authorize(ctx, registering: false)
            return try await remove(request, ctx)
        }
    }

    /// The tenant and user of the path (the guard admitted the RP or the user themself). A
    /// sign-up token may register (create, confirm, list) but not rename or remove.
    func authorize(_ ctx: RequestContext, registering: Bool = true) throws -> (tenant: String, username: String) {
        if !registering { try WebAuthnRegistrationRoutes.refuseSignUp(ctx.principal) }
        return (ctx.parameter("tenant"), try ctx.username())
    }

    // MARK: - Create and confirm

    func create(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenantID, username) = try authorize(ctx)
        let body = try request.decode(MethodCreateRequest.self)
        guard MethodTypes.registrable.contains(body.type) else { throw HTTPError.invalid("type", "type must be email_otp, sms_otp or totp.") }
        if let name = body.friendlyName, name.isEmpty || name.count > 100 { throw HTTPError.invalid("friendlyName", "friendlyName must be 1-100 characters.") }
        let locale = body.locale ?? "en"
        guard (2...16).contains(locale.utf8.count), locale.allSatisfy({ $0.isLetter || $0 == "-" }) else { throw HTTPError.invalid("locale", "locale like en or fr-CA.") }
        guard let tenant = try await context.tenants.find(tenantID) else { throw HTTPError(.tenantNotFound) }
        try await rules.requireOffered(body.type, tenant: tenantID, username: username)
        let now = Date()
        let methodID = "m_" + Hex.encode(SecureRandom.bytes(16))
        let userHandle = try await ensureUser(tenant: tenantID, username: username)
        var resource = MethodResource(methodId: methodID, type: body.type, status: "PENDING_CONFIRMATION", friendlyName: body.friendlyName, createdAt: now)
        switch body.type {
        case "email_otp", "sms_otp":
            let (kind, value) = body.type == "email_otp" ? ("email", body.email) : ("phone", body.phone)
            guard let value else { throw HTTPError.invalid(kind == "email" ? "email" : "phone", "Give the \(kind == "email" ? "e-mail address" : "phone number").") }
            if kind == "email", !PIIRules.isValidEmail(value) { throw HTTPError.invalid("email", "Not an e-mail address.") }
            if kind == "phone", !PIIRules.isValidPhone(value) { throw HTTPError.invalid("phone", "Phone numbers are E.164: + and 7-15 digits.") }
            // The vault keeps the value; this service keeps its reference and masked form.
            let stored = try await secrets.calls.post(
                "\(secrets.piiURL)/v1/internal/tenants/\(tenantID)/pii", PIIStoreRequest(subject: Base64URL.encode(userHandle), kind: kind, value: value),
                as: PIIReference.self)
            let code = try OneTimeCode.generate(digits: 6)
            let hash = try OneTimeCode.storageHash(of: code, key: secrets.codeHashKey, context: Array(methodID.utf8))
            let delivery = try DeliveryRequested.sealing(
                code: code, with: secrets.delivery, tenant: tenantID, channel: kind == "email" ? "email" : "sms", piiRef: stored.ref, locale: locale,
                lifetime: Self.codeLifetime, now: now)
            try await context.withTransaction { conn in
                try await conn.query(
                    """
                    INSERT INTO user_methods (id, tenant_id, username, type, status, pii_ref, masked, code_hash, code_expires_at, friendly_name, created_at)
                    VALUES (\(methodID), \(tenantID), \(username), \(body.type), 'PENDING_CONFIRMATION', \(stored.ref), \(stored.masked),
                        \(PostgresBytes(hash)), \(now.addingTimeInterval(Self.codeLifetime)), \(body.friendlyName), \(now))
                    """)
                try await Outbox.enqueue(delivery, source: .registration, subject: tenantID, key: tenantID, on: conn)
            }
            resource.masked = stored.masked
        default:
            let secret = OTPSecret()
            let sealed = try secrets.methodSecrets.seal(secret.bytes, associatedData: Array("\(tenantID)/\(methodID)".utf8))
            let uri = try OTPAuthURI(totp: try TOTP(secret: secret), issuer: tenant.displayName, account: username)
            try await context.withTransaction { conn in
                try await conn.query(
                    """
                    INSERT INTO user_methods (id, tenant_id, username, type, status, sealed_secret, friendly_name, created_at)
                    VALUES (\(methodID), \(tenantID), \(username), 'totp', 'PENDING_CONFIRMATION', \(PostgresBytes(sealed)), \(body.friendlyName), \(now))
                    """)
            }
            resource.otpauthUri = uri.absoluteString
            resource.qrCodePng = Data(try QRCode.encode(uri.absoluteString).pngData()).base64EncodedString()
        }
        ctx.logger.info("method setup started", metadata: ["signet.method": .string(body.type)])
        return try .json(resource, status: 201, headers: [("Cache-Control", "no-store")])
    }

    func confirm(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenantID, username) = try authorize(ctx)
        let methodID = ctx.parameter("methodId")
        let body = try request.decode(CodeRequest.self)
        let now = Date()
        let refused = { (code: String, detail: String) in HTTPError(ProblemCode(code, status: 400, title: "Confirmation refused"), detail: detail) }
        enum Outcome { case confirmed(MethodResource), wrong, exhausted }
        let outcome = try await context.withTransaction { conn -> Outcome in
            guard let row = try await conn.query(
                """
                SELECT type, status, pii_ref, masked, sealed_secret, code_hash, code_expires_at, confirm_attempts, friendly_name, created_at
                FROM user_methods WHERE id = \(methodID) AND tenant_id = \(tenantID) AND username = \(username) FOR UPDATE
                """
            ).first, let type = row.string("type"), let created = row.date("created_at")
            else { throw HTTPError(.notFound, detail: "No such method for this user.") }
            guard row.string("status") == "PENDING_CONFIRMATION" else {
                throw HTTPError(ProblemCode("method_already_confirmed", status: 409, title: "Already confirmed"), detail: "This method is already confirmed.")
            }
            let attempts = row.int("confirm_attempts") ?? 0
            guard attempts < Self.maximumConfirmAttempts else { return .exhausted }
            var lastStep: Int?
            var ok = false
            if type == "totp" {
                guard let sealed = row.bytes("sealed_secret"),
                    let secretBytes = try? secrets.methodSecrets.open(sealed, associatedData: Array("\(tenantID)/\(methodID)".utf8))
                else { throw HTTPError(.internalError) }
                if let step = try? TOTP(secret: try OTPSecret(bytes: secretBytes)).verify(body.code, at: now) {
                    ok = true
                    lastStep = Int(step)
                }
            } else {
                guard let hash = row.bytes("code_hash"), let expires = row.date("code_expires_at") else { throw HTTPError(.internalError) }
                guard expires > now else { throw refused("code_expired", "The code expired; set the method up again.") }
                ok = OneTimeCode.matches(body.code, digits: 6, storedHash: hash, key: secrets.codeHashKey, context: Array(methodID.utf8))
            }
            guard ok else {
                try await conn.query("UPDATE user_methods SET confirm_attempts = confirm_attempts + 1 WHERE id = \(methodID)")
                return .wrong
            }
            try await conn.query(
                "UPDATE user_methods SET status = 'ACTIVE', confirmed_at = \(now), code_hash = NULL, code_expires_at = NULL WHERE id = \(methodID)")
            try await Outbox.enqueue(
                MethodChanged(
                    tenantId: tenantID, username: username, methodId: methodID, type: type, status: "ACTIVE", piiRef: row.string("pii_ref"),
                    masked: row.string("masked"), sealedSecret: row.bytes("sealed_secret").map(Base64URL.encode),
                    lastTotpStep: lastStep, changedAt: now),
                source: .registration, subject: tenantID, key: tenantID, on: conn)
            return .confirmed(
                MethodResource(
                    methodId: methodID, type: type, status: "ACTIVE", masked: row.string("masked"), friendlyName: row.string("friendly_name"),
                    createdAt: created, confirmedAt: now))
        }
        switch outcome {
        case .confirmed(let resource):
            ctx.logger.info("method confirmed", metadata: ["signet.method": .string(resource.type)])
            return try .json(resource)
        case .wrong:
            throw refused("code_mismatch", "The code is not right.")
        case .exhausted:
            throw refused("too_many_attempts", "Too many wrong codes; set the method up again.")
        }
    }

    // MARK: - List, rename, remove

    func list(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenantID, username) = try authorize(ctx)
        let (methods, credentials) = try await context.pool.withConnection { conn in
            (
                try await conn.query(
                    """
                    SELECT id, type, status, masked, friendly_name, created_at, confirmed_at FROM user_methods
                    WHERE tenant_id = \(tenantID) AND username = \(username) AND status <> 'DELETED' ORDER BY created_at
                    """),
                try await conn.query(
                    """
                    SELECT credential_id, status, friendly_name, created_at FROM credentials
                    WHERE tenant_id = \(tenantID) AND username = \(username) AND status <> 'deleted' ORDER BY created_at
                    """)
            )
        }
        var list = credentials.compactMap { row -> MethodResource? in
            guard let id = row.bytes("credential_id"), let created = row.date("created_at") else { return nil }
            return MethodResource(
                methodId: Base64URL.encode(id), type: "fido2", status: row.string("status") == "active" ? "ACTIVE" : "SUSPENDED",
                friendlyName: row.string("friendly_name"), createdAt: created, confirmedAt: created)
        }
        list += methods.compactMap { row -> MethodResource? in
            guard let id = row.string("id"), let type = row.string("type"), let status = row.string("status"), let created = row.date("created_at") else { return nil }
            return MethodResource(
                methodId: id, type: type, status: status, masked: row.string("masked"), friendlyName: row.string("friendly_name"), createdAt: created,
                confirmedAt: row.date("confirmed_at"))
        }
        return try .json(MethodList(methods: list), headers: [("Cache-Control", "no-store")])
    }

    func rename(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenantID, username) = try authorize(ctx)
        struct Rename: Codable { var friendlyName: String }
        let body = try request.decode(Rename.self)
        guard !body.friendlyName.isEmpty, body.friendlyName.count <= 100 else { throw HTTPError.invalid("friendlyName", "friendlyName must be 1-100 characters.") }
        let updated = try await context.pool.withConnection { conn in
            try await conn.query(
                """
                UPDATE user_methods SET friendly_name = \(body.friendlyName)
                WHERE id = \(ctx.parameter("methodId")) AND tenant_id = \(tenantID) AND username = \(username) AND status <> 'DELETED'
                """)
        }
        guard updated.affectedRows == 1 else { throw HTTPError(.notFound, detail: "No such method for this user.") }
        return HTTPResponse(status: 204)
    }

    func remove(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let (tenantID, username) = try authorize(ctx)
        let methodID = ctx.parameter("methodId")
        let now = Date()
        try await context.withTransaction { conn in
            guard let row = try await conn.query(
                """
                UPDATE user_methods SET status = 'DELETED', code_hash = NULL, sealed_secret = NULL
                WHERE id = \(methodID) AND tenant_id = \(tenantID) AND username = \(username) AND status <> 'DELETED'
                RETURNING type
                """
            ).first, let type = row.string("type")
            else { throw HTTPError(.notFound, detail: "No such method for this user.") }
            try await Outbox.enqueue(
                MethodChanged(
                    tenantId: tenantID, username: username, methodId: methodID, type: type, status: "DELETED", piiRef: nil, sealedSecret: nil,
                    lastTotpStep: nil, changedAt: now),
                source: .registration, subject: tenantID, key: tenantID, on: conn)
        }
        return HTTPResponse(status: 204)
    }

    /// The user's handle (registration's opaque user id), creating the user when new.
    func ensureUser(tenant: String, username: String) async throws -> [UInt8] {
        try await context.pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO users (tenant_id, username, user_handle, display_name) VALUES (\(tenant), \(username), \(PostgresBytes(SecureRandom.bytes(32))), \(username))
                ON CONFLICT (tenant_id, username) DO NOTHING
                """)
            guard let handle = try await conn.query("SELECT user_handle FROM users WHERE tenant_id = \(tenant) AND username = \(username)").first?
                .bytes("user_handle")
            else { throw HTTPError(.internalError) }
            return handle
        }
    }
}

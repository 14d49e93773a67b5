import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Postgres
import QRCode
import Schema
import ServiceKit

/// How this deployment writes QR payloads (`SIGNET_OOB_QR_*`).
struct QRSettings: Sendable {
    /// The form used when a request names none (`SIGNET_OOB_QR_DEFAULT_TYPE`).
    var defaultType: QRPayloadType = .universalLink
    /// The app's URL scheme for deep links (`SIGNET_OOB_QR_APP_SCHEME`).
    var appScheme = "signet"
    /// The authentication service, which issues QR registration tokens (`SIGNET_AUTHENTICATION_URL`).
    var authenticationURL = "http://127.0.0.1:8082"
}

/// QR sessions: a page (through its RP, or the authentication service's `qr` sign-in method)
/// asks for a code; the page watches its status by long polling or Server-Sent Events; the
/// user's bound phone, of the same tenant, claims it once (proving its device key) and
/// accepts or rejects.
///
/// A code is worth nothing to whoever photographs it after use or expiry: the payload carries
/// only the session's id (128 random bits), a session is claimed at most once, and lives
/// 30-600 s. Status readers without the RP's key hold the watch token given at creation only.
struct QRSessionRoutes: Sendable {
    let context: ServiceContext
    let devices: DeviceStore
    let settings: QRSettings
    /// The tenant's default QR type and web URL.
    let apps: AppSettingsStore
    /// Parked long polls and event streams, keyed by session id (the approvals' waiters).
    let waiters: ApprovalWaiters
    /// Calls to the authentication service (a `register` session's token) and the registration
    /// service (the credential the phone names); ``internalGuard`` admits other services' calls.
    let calls: InternalCalls
    let internalGuard: RouteGuard
    /// A device without a call for this long is inactive (`SIGNET_OOB_INACTIVE_DAYS`).
    let inactiveAfter: TimeInterval

    static let defaultLifetime = 120
    static let lifetimes = 30...600
    static let maximumWait = 30
    static let recheckInterval: Duration = .seconds(2)
    /// An `EventSource` reconnects after this many milliseconds when a response ends.
    static let retryMilliseconds = 1000

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/qr-sessions", context.relyingParty) { request, ctx in try await create(request, ctx) }
        router.post("/v1/internal/tenants/{tenant}/qr-sessions", internalGuard) { request, ctx in try await create(request, ctx) }
        router.get("/v1/tenants/{tenant}/qr-sessions/{qrSessionId}", watcher) { request, ctx in try await read(request, ctx) }
        router.post("/v1/internal/tenants/{tenant}/qr-sessions/{qrSessionId}/read", internalGuard) { _, ctx in
            let session = try await settled(ctx.parameter("qrSessionId"), tenant: ctx.parameter("tenant"))
            return try .json(session.resource, headers: [("Cache-Control", "no-store")])
        }
        let device = context.deviceSigned(devices)
        router.post("/v1/tenants/{tenant}/devices/{deviceId}/qr-sessions/{qrSessionId}/claim", device) { _, ctx in try await claim(ctx) }
        router.get("/v1/tenants/{tenant}/devices/{deviceId}/qr-capabilities", device) { _, ctx in try await capabilities(ctx) }
        router.post("/v1/tenants/{tenant}/devices/{deviceId}/qr-sessions/{qrSessionId}/decision", device) { request, ctx in
            try await decide(request, ctx)
        }
        registerBless(on: &router)
    }

    // MARK: - Guard

    /// The RP's API key, or the session's watch token (`Authorization: Bearer`, or
    /// `?watchToken=` for a browser's `EventSource`, which cannot set headers); a wrong token
    /// is the same 401 as none.
    var watcher: RouteGuard {
        let tenants = context.tenants
        let pool = context.pool
        return RouteGuard(name: "relyingPartyOrWatcher") { request, ctx in
            let tenant = ctx.parameter("tenant")
            /// Whether `token` is the watch token of the path's session (a wrong one is simply no).
            func watches(_ token: String) async throws -> Bool {
                guard token.utf8.count <= 64, let presented = Base64URL.decode(token), presented.count == 32 else { return false }
                let session = try await pool.withConnection { try await StoredQRSession.load(ctx.parameter("qrSessionId"), on: $0) }
                guard let session, session.tenant == tenant else { return false }
                return ConstantTime.equals(SHA256.hash(presented), session.watchTokenHash)
            }
            if let token = request.query["watchToken"] {
                guard try await watches(token) else { throw HTTPError(.unauthorized, detail: "The watch token is not valid for this QR session.") }
                return .anonymous
            }
            // A bearer is the watch token when it is one (32 bytes, base64url), else an API key.
            if let bearer = request.bearerToken, try await watches(bearer) { return .anonymous }
            return try await tenants.authenticateRelyingParty(request, tenant: tenant)
        }
    }

    // MARK: - Create

    func create(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantId = ctx.parameter("tenant")
        let body = try request.decode(QRSessionCreateRequest.self)
        guard QRSessionPurpose.all.contains(body.purpose) else { throw HTTPError.invalid("purpose", "purpose is authenticate, register or bless.") }
        guard body.purpose != QRSessionPurpose.bless else {
            throw HTTPError(
                .qrPurposeUnavailable, detail: "A blessing's code is created by a device: POST …/devices/{deviceId}/bless-sessions.", field: "purpose")
        }
        if let username = body.username { try UsernameRules.require(username) }
        // A registration is for a user: the page's (the phone registers an authenticator for them).
        if body.purpose == QRSessionPurpose.register {
            guard body.username != nil else { throw HTTPError.invalid("username", "A register QR session names the user.") }
            guard body.signinId == nil else { throw HTTPError.invalid("signinId", "A register QR session belongs to no sign-in.") }
        }
        if let signinId = body.signinId {
            guard (1...64).contains(signinId.utf8.count), signinId.utf8.allSatisfy({ $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) })
            else { throw HTTPError.invalid("signinId", "signinId is 1-64 lower-case letters, digits, dashes or underscores.") }
        }
        if let name = body.qrType, QRPayloadType(rawValue: name) == nil {
            throw HTTPError.invalid("qrType", "qrType is deepLink, universalLink or compact.")
        }
        let lifetime = body.expiresInSeconds ?? Self.defaultLifetime
        guard Self.lifetimes.contains(lifetime) else { throw HTTPError.invalid("expiresInSeconds", "expiresInSeconds must be 30-600.") }
        let (qrType, origin) = try await payloadForm(tenantId: tenantId, purpose: body.purpose, qrType: body.qrType, webUrl: body.webUrl, ctx)

        let now = Date()
        let watch = SecureRandom.bytes(32)
        let session = StoredQRSession(
            id: "qr_" + Hex.encode(SecureRandom.bytes(16)), tenant: tenantId, purpose: body.purpose, qrType: qrType, username: body.username,
            signinId: body.signinId, watchTokenHash: SHA256.hash(watch), status: QRSessionStatus.pending, revision: 1, reason: nil, deviceId: nil,
            claimedUsername: nil, createdAt: now, expiresAt: now.addingTimeInterval(Double(lifetime)), updatedAt: now)
        let payload = qrType.payload(id: session.id, scheme: settings.appScheme, origin: origin)
        let code = try QRCode.encode(payload)
        try await context.withTransaction { conn in
            if let username = body.username {
                // A code only the user's phone could claim is worth showing only if they have one.
                guard try await !DeviceStore.devices(of: username, tenant: tenantId, on: conn).isEmpty else {
                    throw HTTPError(.noCapableDevice, detail: "The user has no bound device to scan the code.")
                }
            }
            try await session.insert(on: conn)
            try await Outbox.enqueue(session.changedEvent, source: .oob, subject: tenantId, key: tenantId, on: conn)
        }
        ctx.logger.info("qr session created", metadata: ["signet.qr.id": .string(session.id)])
        let created = QRSessionCreated(
            qrSessionId: session.id, purpose: session.purpose, qrType: qrType.rawValue, qrPayload: payload,
            qrCodePng: Data(code.pngData()).base64EncodedString(), qrCodeSvg: code.svg(), watchToken: Base64URL.encode(watch),
            expiresAt: session.expiresAt)
        return try .json(created, status: 201, headers: [("Cache-Control", "no-store")])
    }

    /// The payload form and the universal link's origin of a new code for `tenantId`, after
    /// the tenant's checks (`webUrl` on its origins, the purpose offered by its app settings).
    func payloadForm(tenantId: String, purpose: String, qrType: String?, webUrl: String?, _ ctx: RequestContext) async throws -> (QRPayloadType, String) {
        guard let tenant = try await context.tenants.find(tenantId) else { throw HTTPError(.tenantNotFound, detail: "No such tenant.") }
        if let webURL = webUrl { try AppSettingsRules.checkWebURL(webURL, origins: tenant.origins, field: "webUrl") }
        let tenantApps = try await apps.get(tenant: tenantId)
        if let tenantApps, !tenantApps.allowsQR(purpose) {
            throw HTTPError(.qrPurposeNotAllowed, detail: "The tenant does not offer QR \(purpose).", field: "purpose")
        }
        // The request's form, else the tenant's default, else the deployment's.
        let form = (qrType ?? tenantApps?.defaultQrType).flatMap(QRPayloadType.init(rawValue:)) ?? settings.defaultType
        // A universal link opens the app on the tenant's own domain: under the request's
        // webUrl, else the tenant's (checked again: the tenant's origins may have changed since
        // it was set), else the tenant's first https origin.
        var origin = tenant.origins.first { $0.hasPrefix("https://") } ?? tenant.origins.first { !$0.hasPrefix("android:") } ?? ""
        if let webURL = webUrl {
            origin = webURL
        } else if let webURL = tenantApps?.webUrl {
            if (try? AppSettingsRules.checkWebURL(webURL, origins: tenant.origins, field: "webUrl")) != nil {
                origin = webURL
            } else {
                ctx.logger.warning("the tenant's webUrl is no longer on its origins: its first origin is used")
            }
        }
        if form == .universalLink, origin.isEmpty {
            throw HTTPError.invalid("qrType", "The tenant has no origin for a universal link; use deepLink or compact.")
        }
        return (form, origin)
    }

    // MARK: - Status: long polling and Server-Sent Events

    /// The session's status. With `waitSeconds` (0-30), the answer waits for the next change
    /// after `sinceRevision` (default: the revision when the request arrived) or the end. With
    /// `Accept: text/event-stream`, the answer is one Server-Sent Event (`id` the revision)
    /// as soon as the revision passes `Last-Event-ID`, then the response ends with `retry`, so
    /// that an `EventSource` reconnects and receives the next; once the session is finished and
    /// its last event was seen, 204 (an `EventSource` stops).
    func read(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let id = ctx.parameter("qrSessionId")
        let forPage = ctx.principal == .anonymous
        let stream = request.header("accept")?.lowercased().contains("text/event-stream") == true
        var wait = stream ? Self.maximumWait : 0
        if let text = request.query["waitSeconds"] {
            guard let seconds = Int(text), (0...Self.maximumWait).contains(seconds) else {
                throw HTTPError.invalid("waitSeconds", "waitSeconds is 0-\(Self.maximumWait).")
            }
            wait = seconds
        }
        var since: Int?
        if stream {
            since = request.header("last-event-id").flatMap { Int($0) } ?? 0
        } else if let text = request.query["sinceRevision"] {
            guard let n = Int(text), n >= 0 else { throw HTTPError.invalid("sinceRevision", "sinceRevision is a revision number.") }
            since = n
        }
        // The server answers every request within its request timeout: a wait ends a little
        // before it, changed or not.
        let bound = context.configuration.http.requestTimeout - .seconds(2)
        let deadline = ContinuousClock.now + min(.seconds(wait), max(bound, .zero))
        while true {
            let (ticket, session) = try await waiters.register(id) { try await settled(id, tenant: tenant) }
            let seen = since ?? session.revision
            since = seen
            let remaining = deadline - ContinuousClock.now
            if session.revision > seen || session.isFinished || remaining <= .zero {
                await waiters.wait(ticket, timeout: .zero)
                let view = forPage ? session.resourceForPage : session.resource
                guard stream else { return try .json(view, headers: [("Cache-Control", "no-store")]) }
                return try Self.event(view, after: seen)
            }
            await waiters.wait(ticket, timeout: min(remaining, Self.recheckInterval))
        }
    }

    /// One Server-Sent Event for `view` when its revision is past `seen`; a comment when not
    /// (the wait ended); 204 when the session is finished and its last event was seen.
    static func event(_ view: QRSessionResource, after seen: Int) throws -> HTTPResponse {
        let headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-store")]
        if view.revision <= seen {
            if QRSessionStatus.finished.contains(view.status) { return HTTPResponse(status: 204, headers: [("Cache-Control", "no-store")]) }
            return HTTPResponse(status: 200, headers: headers, body: Array("retry: \(retryMilliseconds)\n: no change\n\n".utf8))
        }
        let data = String(decoding: try JSONValueEncoder().encodeToBytes(view), as: UTF8.self)
        return HTTPResponse(status: 200, headers: headers, body: Array("retry: \(retryMilliseconds)\nid: \(view.revision)\nevent: status\ndata: \(data)\n\n".utf8))
    }

    /// The session as it stands now: one not finished past its expiry is marked expired first.
    func settled(_ id: String, tenant: String) async throws -> StoredQRSession {
        let now = Date()
        let session = try await context.pool.withConnection { try await StoredQRSession.load(id, on: $0) }
        guard let session, session.tenant == tenant else { throw HTTPError(.qrSessionNotFound, detail: "No such QR session.") }
        guard !session.isFinished, session.expiresAt <= now else { return session }
        let expired = try await context.withTransaction { conn -> StoredQRSession in
            guard var locked = try await StoredQRSession.load(id, on: conn, forUpdate: true) else {
                throw HTTPError(.qrSessionNotFound, detail: "No such QR session.")
            }
            _ = try await Self.expireIfDue(&locked, now: now, on: conn)
            return locked
        }
        waiters.notify(id)
        return expired
    }

    // MARK: - State changes

    /// Marks a session not finished past its expiry `EXPIRED` (the caller holds the row's
    /// lock): true when it did.
    static func expireIfDue(_ session: inout StoredQRSession, now: Date, on conn: PostgresConnection) async throws -> Bool {
        guard !session.isFinished, session.expiresAt <= now else { return false }
        try await change(&session, to: QRSessionStatus.expired, now: now, on: conn)
        return true
    }

    static func change(_ session: inout StoredQRSession, to status: String, reason: String? = nil, now: Date, on conn: PostgresConnection) async throws {
        session.status = status
        session.reason = reason
        session.revision += 1
        session.updatedAt = now
        try await session.updateState(on: conn)
        try await Outbox.enqueue(session.changedEvent, source: .oob, subject: session.tenant, key: session.tenant, on: conn)
    }
}

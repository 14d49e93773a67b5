import Crypto
import FoundationEssentials
import HTTPServer
import Postgres
import QRCode
import Schema
import ServiceKit
import Tokens

/// Device blessing (`purpose: bless`, #17): a new device registers for the user of an old,
/// bound one, and is bound to that user, once the old device's user approved.
///
/// - `registerQr`: the old device creates the code (`POST …/devices/{old}/bless-sessions`)
///   and shows it; the new device scans it (the ordinary claim).
/// - `authenticateQr`: the new device creates and shows it; the old device scans it.
///
/// Then, either way: the old device approves with a signature by its user-auth key (as an
/// ESSENTIAL approval is signed: the user's presence) over the session and the new device's
/// id (`…/approval`) → `APPROVED`; the new device reads the session (`GET …/devices/{new}/qr-sessions/{id}`)
/// and, APPROVED, receives a registration-only token for the user (the QR registration's
/// token); it registers an authenticator with the registration service and answers
/// `ACCEPT` naming the credential (`…/decision`); the credential is checked with the
/// registration service as for `register`, and the new device is bound to the user in the
/// same transaction that makes the session `SUCCEEDED`. Both devices read the outcome (long
/// polling on the same route). No token exists before the approval: a new device nobody
/// approved registers nothing.
extension QRSessionRoutes {
    func registerBless(on router: inout GuardedRouter) {
        let device = context.deviceSigned(devices)
        router.post("/v1/tenants/{tenant}/devices/{deviceId}/bless-sessions", device) { request, ctx in try await createBless(request, ctx) }
        router.post("/v1/tenants/{tenant}/devices/{deviceId}/qr-sessions/{qrSessionId}/approval", device) { request, ctx in
            try await approveBless(request, ctx)
        }
        router.get("/v1/tenants/{tenant}/devices/{deviceId}/qr-sessions/{qrSessionId}", device) { request, ctx in try await readBless(request, ctx) }
    }

    /// The old device of a blessing (which approves) and the new one (which registers).
    static func roles(_ session: StoredQRSession) -> (approver: String?, newDevice: String?) {
        session.blessMode == QRBlessMode.registerQr ? (session.creatorDeviceId, session.deviceId) : (session.deviceId, session.creatorDeviceId)
    }

    /// A new device: active and bound to nobody yet.
    static func unboundDevice(_ deviceId: String, tenant: String, on conn: PostgresConnection) async throws -> StoredDevice {
        guard let device = try await DeviceStore.load(deviceId, tenant: tenant, on: conn), device.status == "ACTIVE" else {
            throw HTTPError(.qrSessionDeviceRefused, detail: "The device is not active.")
        }
        guard device.username == nil else { throw HTTPError(.qrSessionDeviceRefused, detail: "The device is bound already: it needs no blessing.") }
        return device
    }

    // MARK: - Create

    func createBless(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantId = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let body = try request.decode(QRBlessCreateRequest.self)
        guard QRBlessMode.all.contains(body.mode) else { throw HTTPError.invalid("mode", "mode is registerQr or authenticateQr.") }
        if let name = body.qrType, QRPayloadType(rawValue: name) == nil {
            throw HTTPError.invalid("qrType", "qrType is deepLink, universalLink or compact.")
        }
        let lifetime = body.expiresInSeconds ?? Self.defaultLifetime
        guard Self.lifetimes.contains(lifetime) else { throw HTTPError.invalid("expiresInSeconds", "expiresInSeconds must be 30-600.") }
        // registerQr: the old device (bound, security enabled) shows the code for its user;
        // authenticateQr: a new device (bound to nobody) shows it.
        var username: String?
        try await context.pool.withConnection { conn in
            if body.mode == QRBlessMode.registerQr {
                username = try await Self.boundUser(deviceId, tenant: tenantId, on: conn)
            } else {
                _ = try await Self.unboundDevice(deviceId, tenant: tenantId, on: conn)
            }
        }
        let (qrType, origin) = try await payloadForm(tenantId: tenantId, purpose: QRSessionPurpose.bless, qrType: body.qrType, webUrl: nil, ctx)
        let now = Date()
        let watch = SecureRandom.bytes(32)
        var session = StoredQRSession(
            id: "qr_" + Hex.encode(SecureRandom.bytes(16)), tenant: tenantId, purpose: QRSessionPurpose.bless, qrType: qrType, username: username,
            signinId: nil, watchTokenHash: SHA256.hash(watch), status: QRSessionStatus.pending, revision: 1, reason: nil, deviceId: nil,
            claimedUsername: nil, createdAt: now, expiresAt: now.addingTimeInterval(Double(lifetime)), updatedAt: now)
        session.blessMode = body.mode
        session.creatorDeviceId = deviceId
        let payload = qrType.payload(id: session.id, scheme: settings.appScheme, origin: origin)
        let code = try QRCode.encode(payload)
        try await context.withTransaction { conn in
            try await session.insert(on: conn)
            try await Outbox.enqueue(session.changedEvent, source: .oob, subject: tenantId, key: tenantId, on: conn)
        }
        ctx.logger.info("bless session created", metadata: ["signet.qr.id": .string(session.id)])
        // The devices read the session with their proofs (``readBless``); the watch token lets
        // a page of the app's RP watch it too, as for any QR session.
        let created = QRSessionCreated(
            qrSessionId: session.id, purpose: session.purpose, qrType: qrType.rawValue, qrPayload: payload,
            qrCodePng: Data(code.pngData()).base64EncodedString(), qrCodeSvg: code.svg(), watchToken: Base64URL.encode(watch), expiresAt: session.expiresAt)
        return try .json(created, status: 201, headers: [("Cache-Control", "no-store")])
    }

    // MARK: - Claim (the scanner)

    /// The scanner of a blessing claims it: the new device (`registerQr`, bound to nobody) or
    /// the old one (`authenticateQr`, bound, security enabled), never the creator.
    func claimBless(_ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantId = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let id = ctx.parameter("qrSessionId")
        let now = Date()
        let outcome = try await context.withTransaction { conn -> Outcome in
            var session = try await Self.lockForDevice(id, tenant: tenantId, on: conn)
            guard session.creatorDeviceId != deviceId else { throw HTTPError(.qrSessionDeviceRefused, detail: "The device that shows the code does not scan it.") }
            if session.blessMode == QRBlessMode.registerQr {
                _ = try await Self.unboundDevice(deviceId, tenant: tenantId, on: conn)
            } else {
                let owner = try await Self.boundUser(deviceId, tenant: tenantId, on: conn)
                session.username = owner
                session.claimedUsername = owner
            }
            if try await Self.expireIfDue(&session, now: now, on: conn) { return .finished(session, expiredNow: true) }
            guard session.status == QRSessionStatus.pending else { return .finished(session, expiredNow: false) }
            session.deviceId = deviceId
            try await Self.change(&session, to: QRSessionStatus.scanned, now: now, on: conn)
            return .changed(session)
        }
        let session = try respond(outcome)
        ctx.logger.info("bless session claimed", metadata: ["signet.qr.id": .string(id)])
        let tenant = try await context.tenants.find(tenantId)
        let claim = QRSessionClaim(
            qrSessionId: session.id, purpose: session.purpose, status: session.status, tenantName: tenant?.displayName ?? tenantId, expiresAt: session.expiresAt)
        return try .json(claim, headers: [("Cache-Control", "no-store")])
    }

    // MARK: - Approval (the old device)

    func approveBless(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let body = try request.decode(QRBlessApprovalRequest.self)
        guard ["ACCEPT", "REJECT"].contains(body.decision) else { throw HTTPError.invalid("decision", "decision is ACCEPT or REJECT.") }
        guard body.signature.utf8.count <= 128, let raw = Base64URL.decode(body.signature), raw.count == 64, let der = ECDSASignature.der(fromRaw: raw) else {
            throw HTTPError.invalid("signature", "signature is a base64url ES256 signature (r‖s, 64 bytes).")
        }
        let tenantId = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let id = ctx.parameter("qrSessionId")
        let now = Date()
        let outcome = try await context.withTransaction { conn -> Outcome in
            var session = try await Self.lockForDevice(id, tenant: tenantId, on: conn)
            guard session.purpose == QRSessionPurpose.bless else { throw HTTPError(.qrSessionNotFound, detail: "No such blessing.") }
            let (approver, newDevice) = Self.roles(session)
            guard approver == deviceId else { throw HTTPError(.qrSessionDeviceRefused, detail: "Only the old device approves a blessing.") }
            let owner = try await Self.boundUser(deviceId, tenant: tenantId, on: conn)
            guard let username = session.username, UsernameRules.identical(username, owner) else {
                throw HTTPError(.qrSessionDeviceRefused, detail: "The device is no longer bound to the blessing's user.")
            }
            if try await Self.expireIfDue(&session, now: now, on: conn) { return .finished(session, expiredNow: true) }
            if session.status == QRSessionStatus.pending { throw HTTPError(.qrSessionDeviceRefused, detail: "No device scanned the code yet.") }
            guard session.status == QRSessionStatus.scanned, let newDevice else { return .finished(session, expiredNow: false) }
            // The signature first: nothing changes for an answer the user did not sign.
            let device = try await DeviceStore.load(deviceId, tenant: tenantId, on: conn)
            let message = QRBlessSignature.message(qrSessionId: id, newDeviceId: newDevice, decision: body.decision)
            guard let keyText = device?.userAuthKey, let key = try? JWK(json: keyText).publicKey(), key.verify(signature: der, message: message, algorithm: .es256)
            else {
                throw HTTPError(.qrBlessSignatureInvalid, detail: "The signature does not verify with the device's user-auth key.", field: "signature")
            }
            if body.decision == "ACCEPT" {
                try await Self.change(&session, to: QRSessionStatus.approved, now: now, on: conn)
            } else {
                try await Self.change(&session, to: QRSessionStatus.failed, reason: "user_rejected", now: now, on: conn)
            }
            return .changed(session)
        }
        let session = try respond(outcome)
        ctx.logger.info("bless session approved", metadata: ["signet.qr.id": .string(id), "signet.qr.status": .string(session.status)])
        return try .json(try await blessView(session, for: deviceId), headers: [("Cache-Control", "no-store")])
    }

    // MARK: - Decision (the new device)

    /// The new device's answer: `ACCEPT` with the credential it registered (APPROVED only),
    /// or `REJECT` (it gives up).
    func decideBless(_ body: QRSessionDecisionRequest, seen: StoredQRSession, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantId = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let id = seen.id
        // The credential is checked before the transaction (no row locked meanwhile), for the
        // new device's answer to an approved blessing only (the transaction checks again).
        var registered: (credentialId: String, confirmed: Bool)?
        if body.decision == "ACCEPT" {
            let credentialId = try Self.checkedCredentialID(body.credentialId)
            if Self.roles(seen).newDevice == deviceId, seen.status == QRSessionStatus.approved, let username = seen.username {
                registered = (credentialId, try await credentialRegistered(credentialId, username: username, session: seen))
            }
        } else if body.credentialId != nil {
            throw HTTPError.invalid("credentialId", "Only an ACCEPT names a credential.")
        }
        let now = Date()
        let outcome = try await context.withTransaction { conn -> Outcome in
            var session = try await Self.lockForDevice(id, tenant: tenantId, on: conn)
            guard Self.roles(session).newDevice == deviceId, let username = session.username else {
                throw HTTPError(.qrSessionDeviceRefused, detail: "Only the new device answers a blessing.")
            }
            if try await Self.expireIfDue(&session, now: now, on: conn) { return .finished(session, expiredNow: true) }
            if session.status == QRSessionStatus.scanned, body.decision == "ACCEPT" {
                throw HTTPError(.qrBlessNotApproved, detail: "The old device's user has not approved yet.")
            }
            guard session.status == QRSessionStatus.approved || session.status == QRSessionStatus.scanned else {
                return .finished(session, expiredNow: false)
            }
            guard body.decision == "ACCEPT" else {
                try await Self.change(&session, to: QRSessionStatus.failed, reason: "user_rejected", now: now, on: conn)
                return .changed(session)
            }
            guard let registered, registered.confirmed else {
                try await Self.change(&session, to: QRSessionStatus.failed, reason: "credential_not_registered", now: now, on: conn)
                return .changed(session)
            }
            // The new device is bound to the user with the success, in one transaction.
            guard var device = try await DeviceStore.load(deviceId, tenant: tenantId, on: conn, forUpdate: true), device.status == "ACTIVE",
                device.username == nil
            else { throw HTTPError(.qrSessionDeviceRefused, detail: "The device was revoked or bound meanwhile.") }
            device.username = username
            device.updatedAt = now
            try await DeviceStore.update(device, on: conn)
            try await Outbox.enqueue(device.changed("bound", at: now, key: context.configuration.subjectKey), source: .oob, subject: tenantId, key: tenantId, on: conn)
            session.credentialId = registered.credentialId
            try await Self.change(&session, to: QRSessionStatus.succeeded, now: now, on: conn)
            return .changed(session)
        }
        let session = try respond(outcome)
        ctx.logger.info("bless session decided", metadata: ["signet.qr.id": .string(id), "signet.qr.status": .string(session.status)])
        return try .json(try await blessView(session, for: deviceId), headers: [("Cache-Control", "no-store")])
    }

    // MARK: - Read (both devices)

    /// The blessing as one of its two devices sees it; `waitSeconds` (0-30) waits for the next
    /// change after `sinceRevision` (default: the revision at arrival) or the end. The new
    /// device's view of an APPROVED blessing carries the user and a registration-only token.
    func readBless(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let id = ctx.parameter("qrSessionId")
        var wait = 0
        if let text = request.query["waitSeconds"] {
            guard let seconds = Int(text), (0...Self.maximumWait).contains(seconds) else {
                throw HTTPError.invalid("waitSeconds", "waitSeconds is 0-\(Self.maximumWait).")
            }
            wait = seconds
        }
        var since: Int?
        if let text = request.query["sinceRevision"] {
            guard let n = Int(text), n >= 0 else { throw HTTPError.invalid("sinceRevision", "sinceRevision is a revision number.") }
            since = n
        }
        let bound = context.configuration.http.requestTimeout - .seconds(2)
        let deadline = ContinuousClock.now + min(.seconds(wait), max(bound, .zero))
        while true {
            let (ticket, session) = try await waiters.register(id) { try await settled(id, tenant: tenant) }
            // Only the blessing's two devices see it; to anyone else it does not exist.
            guard session.purpose == QRSessionPurpose.bless, session.creatorDeviceId == deviceId || session.deviceId == deviceId else {
                await waiters.wait(ticket, timeout: .zero)
                throw HTTPError(.qrSessionNotFound, detail: "No such QR session.")
            }
            let seen = since ?? session.revision
            since = seen
            let remaining = deadline - ContinuousClock.now
            if session.revision > seen || session.isFinished || remaining <= .zero {
                await waiters.wait(ticket, timeout: .zero)
                return try .json(try await blessView(session, for: deviceId), headers: [("Cache-Control", "no-store")])
            }
            await waiters.wait(ticket, timeout: min(remaining, Self.recheckInterval))
        }
    }

    /// What `deviceId` (one of the two) sees. The token is asked for the new device of an
    /// APPROVED blessing only.
    func blessView(_ session: StoredQRSession, for deviceId: String) async throws -> QRBlessView {
        let newDevice = Self.roles(session).newDevice
        var view = QRBlessView(
            qrSessionId: session.id, mode: session.blessMode ?? QRBlessMode.registerQr, status: session.status, revision: session.revision,
            reason: session.reason, newDeviceId: newDevice, credentialId: session.credentialId, expiresAt: session.expiresAt)
        if let newDevice, let device = try await context.pool.withConnection({ try await DeviceStore.load(newDevice, tenant: session.tenant, on: $0) }) {
            view.newDevicePlatform = device.platform
            view.newDeviceModel = device.model
        }
        if newDevice == deviceId, session.status == QRSessionStatus.approved, let username = session.username {
            view.username = username
            view.registrationToken = try await registrationToken(for: session, username: username).registrationToken
        }
        return view
    }
}

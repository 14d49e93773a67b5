import Crypto
import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Schema
import ServiceKit
import Tokens

/// Approval requests: the RP creates, reads (long polling) and cancels them; the user's bound
/// device lists the pending ones, reads one, and accepts or rejects it with a signature over
/// the canonical approval (``ApprovalSignature``) by the key the level needs.
struct ApprovalRoutes: Sendable {
    let context: ServiceContext
    let store: DeviceStore
    let waiters: ApprovalWaiters
    /// Called with each approval created, after it committed (its pushes are queued: send now).
    let created: @Sendable (StoredApproval) async -> Void
    /// Called with each approval that finished, after it committed (its callback is queued: send now).
    let finished: @Sendable (StoredApproval) -> Void
    /// Admits other Signet services (the authentication service's `oob_push` method).
    let internalGuard: RouteGuard
    /// Which platforms' pushes can be sent (a push is queued only for those).
    let push: PushCredentials
    /// The tenant's app settings (whether it allows dynamic text).
    let appSettings: AppSettingsStore

    static let defaultLifetime = 120
    static let lifetimes = 10...3600
    static let maximumWait = 30
    /// A long poll reads the approval again at least this often: changes made by another
    /// replica do not wake it.
    static let recheckInterval: Duration = .seconds(2)

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/approvals", context.relyingParty) { request, ctx in try await create(request, ctx, internalCaller: false) }
        router.get("/v1/tenants/{tenant}/approvals/{approvalId}", context.relyingParty) { request, ctx in try await read(request, ctx) }
        router.post("/v1/tenants/{tenant}/approvals/{approvalId}/cancel", context.relyingParty) { _, ctx in try await cancel(ctx) }
        // The same for other services: the authentication service asks the user's device to
        // approve a sign-in (`oob_push`) and reads the outcome.
        router.post("/v1/internal/tenants/{tenant}/approvals", internalGuard) { request, ctx in try await create(request, ctx, internalCaller: true) }
        router.post("/v1/internal/tenants/{tenant}/approvals/{approvalId}/read", internalGuard) { _, ctx in
            let approval = try await settled(ctx.parameter("approvalId"), tenant: ctx.parameter("tenant"))
            return try .json(approval.resourceForRelyingParty, headers: [("Cache-Control", "no-store")])
        }
        // What the device signed, for a transaction confirmed by push: the authentication
        // service hands it to the transaction service, which verifies it again.
        router.post("/v1/internal/tenants/{tenant}/approvals/{approvalId}/evidence", internalGuard) { _, ctx in
            let tenant = ctx.parameter("tenant")
            let approval = try await settled(ctx.parameter("approvalId"), tenant: tenant)
            var device: StoredDevice?
            if let id = approval.decidedDeviceId {
                device = try await context.pool.withConnection { try await DeviceStore.load(id, tenant: tenant, on: $0) }
            }
            let keyText = approval.decisionSignedWith == "userAuthKey" ? device?.userAuthKey : device?.deviceKey
            guard let keyText, let key = try? JWK(json: keyText), let evidence = approval.decisionEvidence(keyThumbprint: key.thumbprintBase64URL) else {
                throw HTTPError(.approvalNotDecided, detail: "The approval has no signed decision.")
            }
            return try .json(evidence, headers: [("Cache-Control", "no-store")])
        }
        let device = context.deviceSigned(store)
        router.get("/v1/tenants/{tenant}/devices/{deviceId}/approvals", device) { request, ctx in try await pending(request, ctx) }
        router.get("/v1/tenants/{tenant}/devices/{deviceId}/approvals/{approvalId}", device) { _, ctx in
            let (_, approval) = try await deviceView(ctx)
            return try .json(approval.resourceForDevice, headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/tenants/{tenant}/devices/{deviceId}/approvals/{approvalId}/decision", device) { request, ctx in
            try await decide(request, ctx)
        }
    }

    // MARK: - Relying party

    /// What the device shows (``ShownText``): a right-to-left override or an invisible
    /// character in the action or resource would show the user something other than what the
    /// approval's signature binds. The text may have several lines (a transaction's text has).
    static func checkText(_ value: String?, _ field: String, max: Int, newlines: Bool = false) throws {
        guard let value else { return }
        guard ShownText.isValid(value, characters: max, newlines: newlines) else {
            throw HTTPError.invalid(
                field, "\(field) must be 1-\(max) characters without control, bidirectional or invisible characters\(newlines ? " (newlines allowed)" : "").")
        }
    }

    func create(_ request: HTTPRequest, _ ctx: RequestContext, internalCaller: Bool) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let body = try request.decode(ApprovalCreateRequest.self)
        guard (body.username == nil) != (body.deviceId == nil) else {
            throw HTTPError.invalid("username", "Exactly one of username and deviceId.")
        }
        if let username = body.username { try UsernameRules.require(username) }
        guard let level = ApprovalLevel(rawValue: body.level) else { throw HTTPError.invalid("level", "level is ENTRY, ESSENTIAL or EXECUTIVE.") }
        try Self.checkText(body.action, "action", max: 256)
        try Self.checkText(body.resource, "resource", max: 256)
        try Self.checkText(body.text, "text", max: 512, newlines: true)
        if let locale = body.locale, !PushTemplate.isLocale(locale) { throw HTTPError.invalid("locale", "A locale like en or fr-CA.") }
        if body.text != nil, !internalCaller {
            // The tenant chooses between its push templates and the RP's own text. Signet's own
            // callers (a sign-in's or a transaction's text) are not the RP's free text.
            guard try await appSettings.get(tenant: tenant)?.allowDynamicText == true else {
                throw HTTPError(.dynamicTextNotAllowed, detail: "The tenant does not allow dynamic text: the push text comes from its push templates.", field: "text")
            }
        }
        if let fields = body.customFields {
            guard fields.count <= 20,
                fields.allSatisfy({ ShownText.isValid($0.key, characters: 64) && ($0.value.isEmpty || ShownText.isValid($0.value, characters: 500, newlines: true)) })
            else {
                throw HTTPError.invalid(
                    "customFields",
                    "At most 20 custom fields, names 1-64 and values up to 500 characters, without control, bidirectional or invisible characters (newlines allowed in values).")
            }
        }
        if let hash = body.transactionHash {
            // Only the authentication service asks for a transaction's confirmation: an RP's
            // approval never yields a tcToken, so it may not pretend to confirm one.
            guard internalCaller else { throw HTTPError.invalid("transactionHash", "transactionHash is not accepted on this route.") }
            guard hash.utf8.count == 43, Base64URL.decode(hash)?.count == 32 else {
                throw HTTPError.invalid("transactionHash", "transactionHash is a base64url SHA-256 (43 characters).")
            }
            guard level >= .essential else {
                throw HTTPError.invalid("level", "A transaction is confirmed with the user-auth key: the level is ESSENTIAL.")
            }
        }
        let lifetime = body.expiresInSeconds ?? Self.defaultLifetime
        guard Self.lifetimes.contains(lifetime) else { throw HTTPError.invalid("expiresInSeconds", "expiresInSeconds must be 10-3600.") }
        if let url = body.callbackUrl {
            // Only to the tenant's own origins: the RP cannot point this service at another
            // host (its internal network among them).
            guard let origin = ApprovalCallbacks.origin(of: url), try await context.tenants.find(tenant)?.origins.contains(origin) == true else {
                throw HTTPError.invalid("callbackUrl", "callbackUrl must be an https URL (http for localhost) on one of the tenant's origins.")
            }
        }
        let now = Date()
        let approval = try await context.withTransaction { conn -> StoredApproval in
            let candidates: [StoredDevice]
            let username: String
            if let deviceId = body.deviceId {
                guard let device = try await DeviceStore.load(deviceId, tenant: tenant, on: conn), device.status == "ACTIVE", let owner = device.username
                else { throw HTTPError(.noCapableDevice, detail: "The device is not an active device bound to a user.") }
                candidates = [device]
                username = owner
            } else {
                username = body.username ?? ""
                candidates = try await DeviceStore.devices(of: username, tenant: tenant, on: conn)
            }
            guard candidates.contains(where: { level == .entry || $0.securityEnabled }) else {
                throw HTTPError(.noCapableDevice, detail: "No bound device can answer at \(level.rawValue).")
            }
            let approval = StoredApproval(
                id: "ap_" + Hex.encode(SecureRandom.bytes(16)), tenant: tenant, username: username, deviceId: body.deviceId, level: level,
                action: body.action, resource: body.resource, text: body.text, customFields: body.customFields,
                numberMatching: body.numberMatching ?? false, number: body.numberMatching == true ? Self.matchingNumber() : nil,
                status: ApprovalStatus.inProgress, revision: 1, reason: nil, decidedDeviceId: nil, decidedLevel: nil, callbackURL: body.callbackUrl,
                transactionHash: body.transactionHash, createdAt: now,
                expiresAt: now.addingTimeInterval(Double(lifetime)), updatedAt: now, allowLowerLevel: body.allowLowerLevel ?? false)
            try await approval.insert(on: conn)
            if let locale = body.locale { try await PushTemplate.recordLocale(locale, approval: approval.id, tenant: tenant, on: conn) }
            try await Outbox.enqueue(approval.changedEvent(context.configuration.subjectKey), source: .oob, subject: tenant, key: tenant, on: conn)
            // The pushes, durably in the same transaction (sent by ApprovalDeliveryWorker).
            try await ApprovalDeliveryStore.enqueuePushes(
                approval, to: candidates.filter { (level == .entry || $0.securityEnabled) && push.provides($0.platform) }, now: now, on: conn)
            return approval
        }
        ctx.logger.info("approval created", metadata: ["signet.approval.id": .string(approval.id)])
        await created(approval)
        return try .json(approval.resourceForRelyingParty, status: 201, headers: [("Cache-Control", "no-store")])
    }

    /// A two-digit number, uniformly from 10-99 (rejection sampling over random bytes).
    static func matchingNumber() -> Int {
        while true {
            let byte = Int(SecureRandom.bytes(1)[0])
            if byte < 180 { return 10 + byte % 90 }
        }
    }

    func read(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let id = ctx.parameter("approvalId")
        var wait = 0
        if let text = request.query["waitSeconds"] {
            guard let seconds = Int(text), (0...Self.maximumWait).contains(seconds) else {
                throw HTTPError.invalid("waitSeconds", "waitSeconds is 0-\(Self.maximumWait).")
            }
            wait = seconds
        }
        // The server answers every request within its request timeout: a long poll ends a
        // little before it, finished or not.
        let bound = context.configuration.http.requestTimeout - .seconds(2)
        let deadline = ContinuousClock.now + min(.seconds(wait), max(bound, .zero))
        while true {
            let (ticket, approval) = try await waiters.register(id) { try await settled(id, tenant: tenant) }
            let remaining = deadline - ContinuousClock.now
            if approval.isFinished || remaining <= .zero {
                await waiters.wait(ticket, timeout: .zero)
                return try .json(approval.resourceForRelyingParty, headers: [("Cache-Control", "no-store")])
            }
            await waiters.wait(ticket, timeout: min(remaining, Self.recheckInterval))
        }
    }

    func cancel(_ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let id = ctx.parameter("approvalId")
        let now = Date()
        let outcome = try await context.withTransaction { conn -> Outcome in
            guard var approval = try await StoredApproval.load(id, tenant: tenant, on: conn, forUpdate: true) else {
                throw HTTPError(.approvalNotFound, detail: "No such approval.")
            }
            if let finished = try await Self.finish(&approval, now: now, subjectKey: context.configuration.subjectKey, on: conn) { return finished }
            try await Self.change(&approval, to: ApprovalStatus.cancelled, reason: nil, now: now, subjectKey: context.configuration.subjectKey, on: conn)
            return .changed(approval)
        }
        return try .json(try respond(outcome).resourceForRelyingParty)
    }

    // MARK: - Device

    func pending(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        if let status = request.query["status"], status != "pending" { throw HTTPError.invalid("status", "status is pending.") }
        var onlyThisDevice = false
        if let text = request.query["currentDeviceOnly"] {
            guard text == "true" || text == "false" else { throw HTTPError.invalid("currentDeviceOnly", "currentDeviceOnly is true or false.") }
            onlyThisDevice = text == "true"
        }
        let tenant = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let approvals = try await context.pool.withConnection { conn -> [StoredApproval] in
            guard let device = try await DeviceStore.load(deviceId, tenant: tenant, on: conn), let username = device.username else { return [] }
            return try await StoredApproval.pending(for: username, device: deviceId, onlyThisDevice: onlyThisDevice, tenant: tenant, now: Date(), on: conn)
        }
        return try .json(DeviceApprovalList(approvals: approvals.map(\.resourceForDevice)), headers: [("Cache-Control", "no-store")])
    }

    /// The path's device and approval, when the approval is the device's user's and asked of
    /// this device or of any of the user's; else 404.
    func deviceView(_ ctx: RequestContext) async throws -> (StoredDevice, StoredApproval) {
        let tenant = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let id = ctx.parameter("approvalId")
        let device = try await context.pool.withConnection { try await DeviceStore.load(deviceId, tenant: tenant, on: $0) }
        let approval = try await settled(id, tenant: tenant)
        guard let device, Self.mayAnswer(device, approval) else { throw HTTPError(.approvalNotFound, detail: "No such approval.") }
        return (device, approval)
    }

    static func mayAnswer(_ device: StoredDevice, _ approval: StoredApproval) -> Bool {
        guard let owner = device.username, UsernameRules.identical(owner, approval.username) else { return false }
        return approval.deviceId == nil || approval.deviceId == device.id
    }

    func decide(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let body = try request.decode(ApprovalDecisionRequest.self)
        guard ["ACCEPT", "REJECT"].contains(body.decision) else { throw HTTPError.invalid("decision", "decision is ACCEPT or REJECT.") }
        guard ["deviceKey", "userAuthKey"].contains(body.signedWith) else { throw HTTPError.invalid("signedWith", "signedWith is deviceKey or userAuthKey.") }
        if let number = body.number, !(0...999).contains(number) { throw HTTPError.invalid("number", "number is 0-999.") }
        guard let raw = Base64URL.decode(body.signature), raw.count == 64, let der = ECDSASignature.der(fromRaw: raw) else {
            throw HTTPError.invalid("signature", "signature is a base64url ES256 signature (r‖s, 64 bytes).")
        }
        let tenant = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let id = ctx.parameter("approvalId")
        let now = Date()
        let outcome = try await context.withTransaction { conn -> Outcome in
            guard let device = try await DeviceStore.load(deviceId, tenant: tenant, on: conn),
                var approval = try await StoredApproval.load(id, tenant: tenant, on: conn, forUpdate: true), Self.mayAnswer(device, approval)
            else { throw HTTPError(.approvalNotFound, detail: "No such approval.") }
            if let finished = try await Self.finish(&approval, now: now, subjectKey: context.configuration.subjectKey, on: conn) { return finished }
            // The signature first: nothing changes for a request the device did not sign.
            let keyText = body.signedWith == "deviceKey" ? device.deviceKey : device.userAuthKey
            var proven: ApprovalLevel = body.signedWith == "deviceKey" ? .entry : .essential
            let message = ApprovalSignature.message(approvalId: id, detailsHash: approval.detailsHashText, decision: body.decision, number: body.number)
            guard let keyText, let key = try? JWK(json: keyText).publicKey(), key.verify(signature: der, message: message, algorithm: .es256) else {
                throw HTTPError(.approvalSignatureInvalid, detail: "The signature does not verify with the device's \(body.signedWith).", field: "signature")
            }
            approval.decidedDeviceId = deviceId
            approval.decidedLevel = proven
            approval.decisionSignedWith = body.signedWith
            approval.decisionSignature = body.signature
            approval.decisionNumber = body.number
            if body.decision == "REJECT" {
                try await Self.change(&approval, to: ApprovalStatus.rejected, reason: "user_rejected", now: now, subjectKey: context.configuration.subjectKey, on: conn)
                return .changed(approval)
            }
            if approval.numberMatching, body.number == nil || body.number != approval.number {
                // Against push fatigue: a wrong number ends the approval, and rules see it.
                try await Self.change(&approval, to: ApprovalStatus.rejected, reason: "number_mismatch", now: now, subjectKey: context.configuration.subjectKey, on: conn)
                return .changed(approval)
            }
            if approval.level == .executive, proven == .essential,
                try await IdentityDocumentStore.identityLevel(of: approval.username, tenant: tenant, today: IdentityDocumentRoutes.today(now).description, on: conn)
                    == .executive
            {
                // EXECUTIVE: the user-auth key and a valid identity document of the user.
                proven = .executive
                approval.decidedLevel = proven
            }
            guard proven >= approval.level else {
                if approval.level == .executive, proven == .essential {
                    // Below EXECUTIVE: at the user's highest level only if the RP allowed it;
                    // else refused, and the approval stays in progress (the user may register
                    // a document and answer again).
                    guard approval.allowLowerLevel else {
                        throw HTTPError(.identityDocumentRequired, detail: "EXECUTIVE approvals need a valid identity document of the user.")
                    }
                    try await Self.change(&approval, to: ApprovalStatus.accepted, reason: nil, now: now, subjectKey: context.configuration.subjectKey, on: conn)
                    return .changed(approval)
                }
                throw HTTPError(
                    .approvalSignatureInvalid, detail: "\(approval.level.rawValue) approvals are signed with the user-auth key.", field: "signedWith")
            }
            let status = proven > approval.level ? ApprovalStatus.acceptedAtHigherLevel : ApprovalStatus.accepted
            try await Self.change(&approval, to: status, reason: nil, now: now, subjectKey: context.configuration.subjectKey, on: conn)
            return .changed(approval)
        }
        let approval = try respond(outcome)
        ctx.logger.info("approval decided", metadata: ["signet.approval.id": .string(id), "signet.approval.status": .string(approval.status)])
        return try .json(approval.resourceForDevice, headers: [("Cache-Control", "no-store")])
    }

    // MARK: - State changes

    /// What a transaction did to an approval: changed it, or found it finished (and, for one
    /// past its expiry, marked it expired).
    enum Outcome: Sendable {
        case changed(StoredApproval)
        /// Already finished; `expiredNow` when this transaction marked it expired.
        case finished(StoredApproval, expiredNow: Bool)
    }

    /// The approval after the transaction committed; for one that was already finished, the
    /// error that names how (after the commit, so that an expiry found here is kept).
    func respond(_ outcome: Outcome) throws -> StoredApproval {
        switch outcome {
        case .changed(let approval):
            waiters.notify(approval.id)
            if approval.isFinished { finished(approval) }
            return approval
        case .finished(let approval, let expiredNow):
            if expiredNow {
                waiters.notify(approval.id)
                finished(approval)
            }
            throw Self.alreadyFinished(approval)
        }
    }

    static func alreadyFinished(_ approval: StoredApproval) -> HTTPError {
        switch approval.status {
        case ApprovalStatus.accepted, ApprovalStatus.acceptedAtHigherLevel: HTTPError(.approvalAlreadyAccepted, detail: "The approval was accepted.")
        case ApprovalStatus.rejected: HTTPError(.approvalAlreadyRejected, detail: "The approval was rejected.")
        case ApprovalStatus.cancelled: HTTPError(.approvalAlreadyCancelled, detail: "The approval was cancelled.")
        case ApprovalStatus.expired: HTTPError(.approvalExpired, detail: "The approval expired.")
        default: HTTPError(.approvalInvalid, detail: "The approval can no longer be answered.")
        }
    }

    /// nil when the approval is in progress; else `.finished`, after marking one past its
    /// expiry `EXPIRED` (the caller holds the row's lock).
    static func finish(_ approval: inout StoredApproval, now: Date, subjectKey: SubjectKey, on conn: PostgresConnection) async throws -> Outcome? {
        guard approval.status == ApprovalStatus.inProgress else { return .finished(approval, expiredNow: false) }
        guard approval.expiresAt <= now else { return nil }
        try await change(&approval, to: ApprovalStatus.expired, reason: nil, now: now, subjectKey: subjectKey, on: conn)
        return .finished(approval, expiredNow: true)
    }

    static func change(
        _ approval: inout StoredApproval, to status: String, reason: String?, now: Date, subjectKey: SubjectKey, on conn: PostgresConnection
    ) async throws {
        approval.status = status
        approval.reason = reason
        approval.revision += 1
        approval.updatedAt = now
        try await approval.updateOutcome(on: conn)
        try await Outbox.enqueue(approval.changedEvent(subjectKey), source: .oob, subject: approval.tenant, key: approval.tenant, on: conn)
        // The callback, durably in the same transaction (sent by ApprovalDeliveryWorker).
        if approval.isFinished { try await ApprovalDeliveryStore.enqueueCallback(approval, now: now, on: conn) }
    }

    /// The approval as it stands now: one in progress past its expiry is marked expired first.
    func settled(_ id: String, tenant: String) async throws -> StoredApproval {
        let now = Date()
        let approval = try await context.pool.withConnection { try await StoredApproval.load(id, tenant: tenant, on: $0) }
        guard let approval else { throw HTTPError(.approvalNotFound, detail: "No such approval.") }
        guard approval.status == ApprovalStatus.inProgress, approval.expiresAt <= now else { return approval }
        let (expired, expiredNow) = try await context.withTransaction { conn -> (StoredApproval, Bool) in
            guard var locked = try await StoredApproval.load(id, tenant: tenant, on: conn, forUpdate: true) else {
                throw HTTPError(.approvalNotFound, detail: "No such approval.")
            }
            if case .finished(_, true)? = try await Self.finish(&locked, now: now, subjectKey: context.configuration.subjectKey, on: conn) { return (locked, true) }
            return (locked, false)
        }
        if expiredNow {
            waiters.notify(id)
            finished(expired)
        }
        return expired
    }
}

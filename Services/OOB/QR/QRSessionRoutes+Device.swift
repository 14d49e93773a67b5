import Crypto
import FoundationEssentials
import HTTPServer
import Postgres
import Schema
import ServiceKit
import Tokens

/// The scanning phone's side: claim (once), then accept or reject. Both calls carry the
/// device's `Device-Proof` (a JWS by its device key over method, path, body hash and a fresh
/// nonce), so the decision is signed by the device that claimed the code.
extension QRSessionRoutes {
    /// What a transaction did: changed the session, or found it finished (an expiry found
    /// here is committed before the refusal is answered).
    enum Outcome: Sendable {
        case changed(StoredQRSession)
        case finished(StoredQRSession, expiredNow: Bool)
    }

    func claim(_ ctx: RequestContext) async throws -> HTTPResponse {
        let tenantId = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let id = ctx.parameter("qrSessionId")
        if let seen = try await context.pool.withConnection({ try await StoredQRSession.load(id, on: $0) }), seen.tenant == tenantId,
            seen.purpose == QRSessionPurpose.bless
        {
            return try await claimBless(ctx)
        }
        // A register session's token is asked for before the claim commits (never while a row
        // is locked): a claim whose token could not be had is not made, and the phone may scan
        // again. The transaction checks everything again; a token of a claim refused there is
        // never shown.
        var token: QRRegistrationToken?
        if let seen = try await context.pool.withConnection({ try await StoredQRSession.load(id, on: $0) }), seen.tenant == tenantId,
            seen.purpose == QRSessionPurpose.register, seen.status == QRSessionStatus.pending, seen.expiresAt > Date(), let username = seen.username
        {
            let owner = try await context.pool.withConnection { try await Self.boundUser(deviceId, tenant: tenantId, on: $0) }
            guard UsernameRules.identical(username, owner) else {
                throw HTTPError(.qrSessionDeviceRefused, detail: "This code is for another user's device.")
            }
            token = try await registrationToken(for: seen, username: username)
        }
        let now = Date()
        let outcome = try await context.withTransaction { conn -> Outcome in
            var session = try await Self.lockForDevice(id, tenant: tenantId, on: conn)
            let owner = try await Self.boundUser(deviceId, tenant: tenantId, on: conn)
            if let username = session.username, !UsernameRules.identical(username, owner) {
                throw HTTPError(.qrSessionDeviceRefused, detail: "This code is for another user's device.")
            }
            if try await Self.expireIfDue(&session, now: now, on: conn) { return .finished(session, expiredNow: true) }
            guard session.status == QRSessionStatus.pending else { return .finished(session, expiredNow: false) }
            // The pre-read saw it pending: a register session always has its token here.
            if session.purpose == QRSessionPurpose.register, token == nil {
                throw HTTPError(.qrSessionAlreadyUsed, detail: "The code was used already.")
            }
            session.deviceId = deviceId
            session.claimedUsername = owner
            try await Self.change(&session, to: QRSessionStatus.scanned, now: now, on: conn)
            return .changed(session)
        }
        let session = try respond(outcome)
        ctx.logger.info("qr session claimed", metadata: ["signet.qr.id": .string(id)])
        let tenant = try await context.tenants.find(tenantId)
        var claim = QRSessionClaim(
            qrSessionId: session.id, purpose: session.purpose, status: session.status, tenantName: tenant?.displayName ?? tenantId,
            expiresAt: session.expiresAt)
        if session.purpose == QRSessionPurpose.register, let token {
            // The phone's own user (it is bound to them) and what it registers with.
            claim.username = session.claimedUsername
            claim.registrationToken = token.registrationToken
        }
        return try .json(claim, headers: [("Cache-Control", "no-store")])
    }

    func decide(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let body = try request.decode(QRSessionDecisionRequest.self)
        guard ["ACCEPT", "REJECT"].contains(body.decision) else { throw HTTPError.invalid("decision", "decision is ACCEPT or REJECT.") }
        // The user's signature (a sign-in code's ACCEPT): its shape first, checked against the
        // device's user-auth key in the transaction.
        var signature: [UInt8]?
        if let text = body.signature {
            guard body.decision == "ACCEPT", text.utf8.count <= 128, let raw = Base64URL.decode(text), raw.count == 64, let der = ECDSASignature.der(fromRaw: raw)
            else { throw HTTPError.invalid("signature", "signature is a base64url ES256 signature (r‖s, 64 bytes), sent with a sign-in code's ACCEPT.") }
            signature = der
        }
        let tenantId = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        let id = ctx.parameter("qrSessionId")
        if let seen = try await context.pool.withConnection({ try await StoredQRSession.load(id, on: $0) }), seen.tenant == tenantId,
            seen.purpose == QRSessionPurpose.bless
        {
            return try await decideBless(body, seen: seen, ctx)
        }
        // A register session's ACCEPT names the credential the phone registered; the
        // registration service confirms it before the transaction (no row locked meanwhile).
        var registered: (credentialId: String, confirmed: Bool)?
        if body.decision == "ACCEPT" || body.credentialId != nil,
            let seen = try await context.pool.withConnection({ try await StoredQRSession.load(id, on: $0) }), seen.tenant == tenantId
        {
            if seen.purpose == QRSessionPurpose.register {
                if body.decision == "ACCEPT" {
                    let credentialId = try Self.checkedCredentialID(body.credentialId)
                    // Only the claiming device's answer is worth a call (the transaction checks again).
                    if seen.deviceId == deviceId, seen.status == QRSessionStatus.scanned, let owner = seen.claimedUsername {
                        registered = (credentialId, try await credentialRegistered(credentialId, username: owner, session: seen))
                    }
                }
            } else if body.credentialId != nil {
                throw HTTPError.invalid("credentialId", "Only a register session's ACCEPT names a credential.")
            }
            if seen.purpose != QRSessionPurpose.authenticate, body.signature != nil {
                throw HTTPError.invalid("signature", "Only a sign-in code's ACCEPT is signed with the user-auth key.")
            }
        }
        let now = Date()
        let outcome = try await context.withTransaction { conn -> Outcome in
            var session = try await Self.lockForDevice(id, tenant: tenantId, on: conn)
            let owner = try await Self.boundUser(deviceId, tenant: tenantId, on: conn)
            // Only the device that claimed the code answers it, while still bound to the same user.
            guard session.deviceId == deviceId, let claimed = session.claimedUsername, UsernameRules.identical(claimed, owner) else {
                throw HTTPError(.qrSessionDeviceRefused, detail: "Only the device that scanned the code answers it.")
            }
            if try await Self.expireIfDue(&session, now: now, on: conn) { return .finished(session, expiredNow: true) }
            guard session.status == QRSessionStatus.scanned else { return .finished(session, expiredNow: false) }
            if body.decision == "ACCEPT", session.purpose == QRSessionPurpose.register {
                // Checked against the session as it was read before: the same device and user
                // (above), still SCANNED (it cannot go back to PENDING).
                guard let registered else { throw HTTPError.invalid("credentialId", "Name the registered credential.") }
                if registered.confirmed {
                    session.credentialId = registered.credentialId
                    try await Self.change(&session, to: QRSessionStatus.succeeded, now: now, on: conn)
                } else {
                    try await Self.change(&session, to: QRSessionStatus.failed, reason: "credential_not_registered", now: now, on: conn)
                }
            } else if body.decision == "ACCEPT" {
                // A sign-in: the device key says which phone answers, the user-auth key's
                // signature that its user unlocked it and consented. Nothing changes without it.
                let device = try await DeviceStore.load(deviceId, tenant: tenantId, on: conn)
                let message = QRSignInSignature.message(qrSessionId: id, decision: body.decision)
                guard let signature, let keyText = device?.userAuthKey, let key = try? JWK(json: keyText).publicKey(),
                    key.verify(signature: signature, message: message, algorithm: .es256)
                else {
                    throw HTTPError(
                        .qrSignatureInvalid, detail: "A sign-in code's ACCEPT is signed with the device's user-auth key; the signature is missing or does not verify.",
                        field: "signature")
                }
                try await Self.change(&session, to: QRSessionStatus.succeeded, now: now, on: conn)
            } else {
                try await Self.change(&session, to: QRSessionStatus.failed, reason: "user_rejected", now: now, on: conn)
            }
            return .changed(session)
        }
        let session = try respond(outcome)
        ctx.logger.info("qr session decided", metadata: ["signet.qr.id": .string(id), "signet.qr.status": .string(session.status)])
        return try .json(session.resource, headers: [("Cache-Control", "no-store")])
    }

    /// The session, locked, when it is the path tenant's; another tenant's code is refused
    /// with its own answer (the id is unguessable: telling that it exists elsewhere gives
    /// nothing away, and tells a mis-configured app what went wrong).
    static func lockForDevice(_ id: String, tenant: String, on conn: PostgresConnection) async throws -> StoredQRSession {
        guard let session = try await StoredQRSession.load(id, on: conn, forUpdate: true) else {
            throw HTTPError(.qrSessionNotFound, detail: "No such QR session.")
        }
        guard session.tenant == tenant else { throw HTTPError(.qrSessionOtherTenant, detail: "This code belongs to another tenant.") }
        return session
    }

    /// The user the (active) device is bound to. Only a device with security enabled (a
    /// user-auth key, which needs the user's presence) scans codes: a QR session signs a user
    /// in or registers for them.
    static func boundUser(_ deviceId: String, tenant: String, on conn: PostgresConnection) async throws -> String {
        guard let device = try await DeviceStore.load(deviceId, tenant: tenant, on: conn), device.status == "ACTIVE", let owner = device.username else {
            throw HTTPError(.qrSessionDeviceRefused, detail: "The device is not bound to a user.")
        }
        guard device.securityEnabled else { throw HTTPError(.qrSessionDeviceRefused, detail: "The device has security disabled.") }
        return owner
    }

    /// The session after the transaction committed, its waiters woken; for one found finished,
    /// the error that says how.
    func respond(_ outcome: Outcome) throws -> StoredQRSession {
        switch outcome {
        case .changed(let session):
            waiters.notify(session.id)
            return session
        case .finished(let session, let expiredNow):
            if expiredNow { waiters.notify(session.id) }
            if session.status == QRSessionStatus.expired { throw HTTPError(.qrSessionExpired, detail: "The code expired.") }
            throw HTTPError(.qrSessionAlreadyUsed, detail: "The code was used already.")
        }
    }
}

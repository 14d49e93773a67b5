import Crypto
import FIDO
import FIDOProblems
import FoundationEssentials
import HTTPServer
import Platform
import Postgres
import Schema
import ServiceKit
import Tokens

/// The RP's transactions: create, read, amend while pending, cancel, verify a tcToken, read the
/// evidence; the tcToken verification keys; and, for the authentication service, where a
/// transaction stands with its tcToken (handed to the app that confirmed it, never in Kafka).
struct TransactionRoutes: Sendable {
    let context: ServiceContext
    let keys: TCTokenKeys
    let issuer: String

    static let defaultLifetime = 300
    static let maximumLifetime = 86_400

    func register(on router: inout GuardedRouter) {
        // Creation and amendment carry up to three PNG images besides the details.
        let images = TransactionDetails.maximumImagesContentLength
        router.post("/v1/tenants/{tenant}/transactions", context.relyingParty, extraBodyBytes: images) { request, ctx in try await create(request, ctx) }
        router.get("/v1/tenants/{tenant}/transactions/{transactionId}", context.relyingParty) { request, ctx in
            let tenant = ctx.parameter("tenant")
            return try .json(try await load(ctx.parameter("transactionId"), tenant: tenant).resource(), headers: [("Cache-Control", "no-store")])
        }
        router.patch("/v1/tenants/{tenant}/transactions/{transactionId}", context.relyingParty, extraBodyBytes: images) { request, ctx in
            try await amend(request, ctx)
        }
        router.post("/v1/tenants/{tenant}/transactions/{transactionId}/cancel", context.relyingParty) { request, ctx in
            let tenant = ctx.parameter("tenant")
            let changed = try await change(ctx.parameter("transactionId"), tenant: tenant, to: "CANCELLED")
            return try .json(changed.resource())
        }
        router.post("/v1/tenants/{tenant}/transactions/{transactionId}/tctoken/verify", context.relyingParty) { request, ctx in try await verify(request, ctx) }
        router.get("/v1/tenants/{tenant}/transactions/{transactionId}/evidence", context.relyingParty) { request, ctx in
            let tenant = ctx.parameter("tenant")
            let tx = try await load(ctx.parameter("transactionId"), tenant: tenant)
            guard let evidence = tx.evidence else {
                throw HTTPError(.notConfirmed, detail: "The transaction has no confirmation.")
            }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: Array(evidence.utf8))
        }
        router.get("/.well-known/jwks.json", .open) { _, _ in
            HTTPResponse(
                status: 200, headers: [("Content-Type", "application/jwk-set+json"), ("Cache-Control", "public, max-age=300")],
                body: Array(try await keys.allKeys().utf8))
        }
        router.get("/v1/tenants/{tenant}/.well-known/jwks.json", .open) { _, ctx in
            let tenant = ctx.parameter("tenant")
            guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/jwk-set+json"), ("Cache-Control", "public, max-age=300")],
                body: Array(try await keys.ring(for: tenant).keySet.jsonString.utf8))
        }
        let calls = context.configuration.internalCalls
        router.get("/v1/internal/tenants/{tenant}/transactions/{transactionId}/tctoken", calls.guardInternal) { _, ctx in
            // The authentication service asks for a sign-in that confirmed this transaction and
            // succeeded (its own check): the status as GET reads it, the tcToken once CONFIRMED.
            let tx = try await load(ctx.parameter("transactionId"), tenant: ctx.parameter("tenant")).resource()
            return try .json(
                SignInTransaction(transactionId: tx.transactionId, status: tx.status, tcToken: tx.status == "CONFIRMED" ? tx.tcToken : nil),
                headers: [("Cache-Control", "no-store")])
        }
        router.get("/v1/internal/tenants/{tenant}/transactions/{transactionId}/username", calls.guardInternal) { _, ctx in
            // TransactionChanged names the user by subject reference only: the authentication
            // service asks here when a confirmation starts without a username.
            let tx = try await load(ctx.parameter("transactionId"), tenant: ctx.parameter("tenant"))
            return try .json(TransactionUsername(transactionId: tx.id, username: tx.username), headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/admin/tenants/{tenant}/tctoken-keys/rotate", context.admin) { request, ctx in
            let tenant = ctx.parameter("tenant")
            guard try await context.tenants.find(tenant) != nil else { throw HTTPError(.tenantNotFound) }
            let kid = try await keys.rotate(tenant)
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(#"{"kid":"\#(kid)"}"#.utf8))
        }
    }

    // MARK: - Create, amend, cancel

    func create(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let body = try request.decode(TransactionCreateRequest.self)
        try UsernameRules.require(body.username)
        let details = body.details
        if let v = details.violation() { throw HTTPError.invalid(v.field, v.message) }
        try Self.checkImages(details.images ?? [])
        let lifetime = body.expiresInSeconds ?? Self.defaultLifetime
        guard (5...Self.maximumLifetime).contains(lifetime) else { throw HTTPError.invalid("expiresInSeconds", "expiresInSeconds must be 5-86400.") }
        if let account = body.payerAccount, account.isEmpty || account.count > 64 { throw HTTPError.invalid("payerAccount", "payerAccount must be 1-64 characters.") }
        if let fields = body.customFields {
            guard fields.count <= 20, fields.allSatisfy({ (1...64).contains($0.key.count) && $0.value.count <= 500 }) else {
                throw HTTPError.invalid("customFields", "At most 20 custom fields, names 1-64 and values up to 500 characters.")
            }
        }
        let now = Date()
        let tx = StoredTransaction(
            id: "tx_" + Hex.encode(SecureRandom.bytes(16)), tenant: tenant, username: body.username, details: details, payerAccount: body.payerAccount,
            customFields: body.customFields, status: "PENDING", revision: 1, createdAt: now, expiresAt: now.addingTimeInterval(Double(lifetime)),
            updatedAt: now, tcToken: nil, evidence: nil)
        try await context.withTransaction { conn in
            try await tx.insert(on: conn)
            try await Outbox.enqueue(tx.changedEvent(context.configuration.subjectKey), source: .transaction, subject: tenant, key: tenant, on: conn)
        }
        ctx.logger.info("transaction created")
        return try .json(tx.resource(), status: 201, headers: [("Cache-Control", "no-store")])
    }

    /// Each image must be a PNG a UAF authenticator may show (``FIDO/UAFTransactionPNG``: one
    /// decodable image, no hidden chunks) of the size and pixel format its characteristics
    /// announce, before it is sent to any client.
    ///
    /// - Throws: 400 `uaf_transaction_png_malformed`, `…_unsupported_chunk`, `…_too_large` or
    ///   `…_characteristics_mismatch` with `field` `images[i].content`.
    static func checkImages(_ images: [TransactionImage]) throws {
        for (i, image) in images.enumerated() {
            guard let bytes = Base64URL.decode(image.content), !bytes.isEmpty else {
                throw HTTPError.invalid("images[\(i)].content", "content is the base64url of a PNG file, unpadded.")
            }
            do throws(UAFTransactionPNGError) {
                try UAFTransactionPNG(bytes: bytes).check(image.tcDisplayPNGCharacteristics)
            } catch {
                throw HTTPError(.transactionPNGRefused(error), detail: error.detail, field: "images[\(i)].content")
            }
        }
    }

    func amend(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let body = try request.decode(TransactionAmendRequest.self)
        let id = ctx.parameter("transactionId")
        let now = Date()
        let amended = try await context.withTransaction { conn -> StoredTransaction in
            var tx = try await StoredTransaction.load(id, tenant: tenant, on: conn, forUpdate: true)
            guard tx.status == "PENDING", tx.expiresAt > now else { throw Self.notPending(tx) }
            if let text = body.text { tx.details.text = text }
            if let amount = body.amount { tx.details.amount = amount }
            if let payee = body.payee { tx.details.payee = payee }
            if let images = body.images { tx.details.images = images }
            if let v = tx.details.violation() { throw HTTPError.invalid(v.field, v.message) }
            // New images are checked as at creation, before anything is stored or published.
            if let images = body.images { try Self.checkImages(images) }
            tx.revision += 1
            tx.updatedAt = now
            try await tx.update(on: conn)
            try await Outbox.enqueue(tx.changedEvent(context.configuration.subjectKey), source: .transaction, subject: tenant, key: tenant, on: conn)
            return tx
        }
        return try .json(amended.resource())
    }

    static func notPending(_ tx: StoredTransaction) -> HTTPError {
        HTTPError(
            .transactionNotPending,
            detail: "The transaction is \(tx.status == "PENDING" ? "EXPIRED" : tx.status).")
    }

    func change(_ id: String, tenant: String, to status: String) async throws -> StoredTransaction {
        let now = Date()
        return try await context.withTransaction { conn -> StoredTransaction in
            var tx = try await StoredTransaction.load(id, tenant: tenant, on: conn, forUpdate: true)
            // Past its expiry it is EXPIRED, stored or not: nothing changes it any more.
            guard tx.status == "PENDING", tx.expiresAt > now else { throw Self.notPending(tx) }
            tx.status = status
            tx.revision += 1
            tx.updatedAt = now
            try await tx.update(on: conn)
            try await Outbox.enqueue(tx.changedEvent(context.configuration.subjectKey), source: .transaction, subject: tenant, key: tenant, on: conn)
            return tx
        }
    }

    func load(_ id: String, tenant: String) async throws -> StoredTransaction {
        try await context.pool.withConnection { try await StoredTransaction.load(id, tenant: tenant, on: $0, forUpdate: false) }
    }

    // MARK: - tcToken verification

    /// Verifies a tcToken for the transaction of the path: signature under the tenant's keys,
    /// `iss`, `aud`, expiry, the transaction id, the details hash, and that it is the token
    /// issued for this transaction; the first successful verification consumes it.
    func verify(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let tenant = ctx.parameter("tenant")
        let body = try request.decode(TCTokenVerifyRequest.self)
        let id = ctx.parameter("transactionId")
        // A key another replica added since this one read the ring is read at once.
        let ring = try await keys.ring(for: tenant, holding: (try? JWS(compact: body.tcToken))?.header.keyID)
        let verifier = JWTVerifier(
            keySet: ring.keySet,
            options: JWTValidationOptions(
                issuer: issuer, audience: tenant, maximumLifetime: TransactionDecisions.tokenLifetime, requiredClaims: ["txn", "txn_hash", "jti"],
                expectedType: "tc+jwt"))
        let jwt: JWT
        do {
            jwt = try verifier.verify(body.tcToken, now: Date())
        } catch {
            return try .json(TCTokenVerifyResult(valid: false, reason: error.code.rawValue, alreadyConsumed: false))
        }
        guard jwt.claims[claim: "txn"] == .string(id) else {
            return try .json(TCTokenVerifyResult(valid: false, reason: "transaction_mismatch", alreadyConsumed: false))
        }
        let now = Date()
        let result = try await context.pool.withTransaction { conn -> TCTokenVerifyResult in
            let tx = try await StoredTransaction.load(id, tenant: tenant, on: conn, forUpdate: true)
            guard tx.status == "CONFIRMED", let jti = jwt.claims.id else { return TCTokenVerifyResult(valid: false, reason: "not_confirmed", alreadyConsumed: false) }
            guard jwt.claims[claim: "txn_hash"] == .string(Base64URL.encode(tx.detailsHash)) else {
                return TCTokenVerifyResult(valid: false, reason: "details_mismatch", alreadyConsumed: false)
            }
            switch try await StoredTransaction.consumeTCToken(jti: jti, transaction: id, at: now, on: conn) {
            case .mismatch: return TCTokenVerifyResult(valid: false, reason: "token_mismatch", alreadyConsumed: false)
            case .alreadyConsumed: return TCTokenVerifyResult(valid: true, alreadyConsumed: true)
            case .consumed: return TCTokenVerifyResult(valid: true, alreadyConsumed: false)
            }
        }
        return try .json(result, headers: [("Cache-Control", "no-store")])
    }
}

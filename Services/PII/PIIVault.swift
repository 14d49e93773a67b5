import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Platform
import Postgres
import Schema
import ServiceKit

/// The vault of personal data: phone numbers, e-mail addresses and full names, encrypted with AES-256-GCM
/// under a data key per subject (user), each data key wrapped with the key-encryption key from
/// `SIGNET_PII_KEK`. Other services hold only the opaque reference and the masked form.
/// Every read of a plaintext is recorded (who, which value, when, why). Erasing a subject
/// destroys its data key: its values can no longer be decrypted (crypto-shredding).
struct PIIVault: Sendable {
    let context: ServiceContext
    let kek: SealingKeys
    let calls: InternalCalls

    static let migrations: [Migration] = [
        Migration(
            101, "pii_vault",
            """
            CREATE TABLE subject_keys (
                tenant_id text NOT NULL,
                subject text NOT NULL,
                wrapped_key bytea,
                created_at timestamptz NOT NULL,
                erased_at timestamptz,
                PRIMARY KEY (tenant_id, subject)
            );
            CREATE TABLE pii_values (
                ref text PRIMARY KEY,
                tenant_id text NOT NULL,
                subject text NOT NULL,
                kind text NOT NULL,
                ciphertext bytea NOT NULL,
                masked text NOT NULL,
                created_at timestamptz NOT NULL
            );
            CREATE INDEX pii_values_by_subject ON pii_values (tenant_id, subject);
            -- Who read which plaintext, when and why.
            CREATE TABLE pii_reads (
                id bigserial PRIMARY KEY,
                at timestamptz NOT NULL,
                tenant_id text NOT NULL,
                ref text NOT NULL,
                reader text NOT NULL,
                purpose text NOT NULL
            );
            """),
        Migration(
            102, "pii_withdrawn",
            """
            -- References deleted or withdrawn (a caller's store whose answer it never got):
            -- a store of one of them that arrives later is refused, so that no value outlives
            -- its withdrawal. Kept a day (a store in flight lasts seconds).
            CREATE TABLE pii_withdrawn (
                ref text PRIMARY KEY,
                withdrawn_at timestamptz NOT NULL
            );
            CREATE INDEX pii_withdrawn_by_age ON pii_withdrawn (withdrawn_at);
            """),
    ]

    /// How long a withdrawn reference is remembered: far beyond any store in flight (the
    /// callers give up after seconds).
    static let withdrawalMemory: TimeInterval = 86_400

    func register(on router: inout GuardedRouter) {
        router.post("/v1/internal/tenants/{tenant}/pii", calls.guardInternal) { request, ctx in
            let body = try request.decode(PIIStoreRequest.self)
            let stored = try await store(body, tenant: ctx.parameter("tenant"))
            return try .json(stored, status: 201, headers: [("Cache-Control", "no-store")])
        }
        router.post("/v1/internal/tenants/{tenant}/pii/{ref}/read", calls.guardInternal) { request, ctx in
            guard case .service(let caller) = ctx.principal else { throw HTTPError(.unauthorized) }
            let body = try request.decode(PIIReadRequest.self)
            guard (1...64).contains(body.purpose.utf8.count) else { throw HTTPError.invalid("purpose", "purpose must be 1-64 characters.") }
            let value = try await read(ctx.parameter("ref"), tenant: ctx.parameter("tenant"), reader: caller, purpose: body.purpose)
            return try .json(value, headers: [("Cache-Control", "no-store")])
        }
        router.delete("/v1/internal/tenants/{tenant}/pii/{ref}", calls.guardInternal) { _, ctx in
            try await delete(ctx.parameter("ref"), tenant: ctx.parameter("tenant"))
            return HTTPResponse(status: 204)
        }
        router.delete("/v1/internal/tenants/{tenant}/subjects/{subject}", calls.guardInternal) { request, ctx in
            try await erase(subject: ctx.parameter("subject"), tenant: ctx.parameter("tenant"))
            return HTTPResponse(status: 204)
        }
    }

    func store(_ body: PIIStoreRequest, tenant: String) async throws -> PIIReference {
        guard (1...128).contains(body.subject.utf8.count) else { throw HTTPError.invalid("subject", "subject must be 1-128 characters.") }
        let masked: String
        switch body.kind {
        case "email":
            guard PIIRules.isValidEmail(body.value) else { throw HTTPError.invalid("value", "Not an e-mail address.") }
            masked = PIIRules.maskEmail(body.value)
        case "phone":
            guard PIIRules.isValidPhone(body.value) else { throw HTTPError.invalid("value", "Not an E.164 phone number.") }
            masked = PIIRules.maskPhone(body.value)
        case "name":
            // A person's full name, given at sign-up.
            guard SignUpProfileRules.isValidFullName(body.value) else { throw HTTPError.invalid("value", "Not a full name: 1-200 characters.") }
            masked = SignUpProfileRules.maskName(body.value)
        case "identity_document":
            // The personal data of an identity document the oob service verified (issue #16):
            // a JSON object of strings (names, dates, the document number), never shown masked.
            guard body.value.utf8.count <= 2048, let object = (try? JSONParser.parse(Array(body.value.utf8), maximumDepth: 1))?.objectValue,
                !object.isEmpty, object.values.allSatisfy({ if case .string = $0 { true } else { false } })
            else { throw HTTPError.invalid("value", "Not an identity document: a JSON object of strings, at most 2048 bytes.") }
            masked = "identity document"
        default:
            throw HTTPError.invalid("kind", "kind must be email, phone, name or identity_document.")
        }
        // The caller's own reference, when it names one: it can then withdraw the value
        // without having heard the answer (``withdraw(_:tenant:on:)``).
        if let proposed = body.ref, !PIIReferenceText.isWellFormed(proposed) {
            throw HTTPError.invalid("ref", "ref must be pii_ and 32 lower-case hex digits.")
        }
        let ref = body.ref ?? InternalCalls.newVaultReference()
        let now = Date()
        try await context.withTransaction { conn in
            if body.ref != nil { try await Self.lockReference(ref, on: conn) }
            let dataKey = try await subjectKey(tenant: tenant, subject: body.subject, create: true, on: conn)
            let sealed = try AES256GCM(key: dataKey).seal(Array(body.value.utf8), associatedData: Array("\(tenant)/\(ref)/\(body.kind)".utf8))
            // Under the reference's lock a withdrawal committed before is seen, and one after
            // deletes what this inserts.
            let inserted = try await conn.query(
                """
                INSERT INTO pii_values (ref, tenant_id, subject, kind, ciphertext, masked, created_at)
                SELECT \(ref), \(tenant), \(body.subject), \(body.kind), \(PostgresBytes(sealed)), \(masked), \(now)
                WHERE NOT EXISTS (SELECT 1 FROM pii_withdrawn WHERE ref = \(ref))
                ON CONFLICT (ref) DO NOTHING
                """
            ).affectedRows
            guard inserted == 1 else {
                throw HTTPError(.piiRefUnavailable, detail: "The reference is taken or was withdrawn; store under a new one.", field: "ref")
            }
        }
        return PIIReference(ref: ref, masked: masked)
    }

    /// Deletes one value, which its owner no longer refers to (a sign-up profile's name or
    /// address replaced by the one given again, or a store whose answer the caller never got).
    /// Idempotent: an unknown, malformed, already deleted or other tenant's reference deletes
    /// nothing and answers the same.
    func delete(_ ref: String, tenant: String) async throws {
        guard PIIReferenceText.isWellFormed(ref) else { return }
        try await context.withTransaction { conn in try await Self.withdraw(ref, tenant: tenant, on: conn) }
    }

    /// Deletes the value of `ref` in `tenant`, and remembers the reference for
    /// ``withdrawalMemory``: a store under it that is still in flight (its caller gave up
    /// waiting) is then refused rather than left behind. In `conn`'s transaction.
    static func withdraw(_ ref: String, tenant: String, on conn: PostgresConnection) async throws {
        try await lockReference(ref, on: conn)
        try await conn.query("INSERT INTO pii_withdrawn (ref, withdrawn_at) VALUES (\(ref), \(Date())) ON CONFLICT (ref) DO NOTHING")
        try await conn.query("DELETE FROM pii_values WHERE ref = \(ref) AND tenant_id = \(tenant)")
    }

    /// Serialises a store under a caller's reference with its withdrawal (transaction-scoped).
    private static func lockReference(_ ref: String, on conn: PostgresConnection) async throws {
        try await conn.query("SELECT pg_advisory_xact_lock(hashtextextended(\("pii-ref/" + ref), 0))")
    }

    /// The retention pass: withdrawn references older than ``withdrawalMemory``, in batches.
    /// `conn` must not be inside a transaction.
    static func purgeWithdrawn(now: Date, on conn: PostgresConnection) async throws -> Int {
        try await BatchedDelete.drain(
            on: conn,
            """
            DELETE FROM pii_withdrawn WHERE ref IN
                (SELECT ref FROM pii_withdrawn WHERE withdrawn_at < \(now.addingTimeInterval(-withdrawalMemory)) LIMIT \(BatchedDelete.batchSize))
            """)
    }

    func read(_ ref: String, tenant: String, reader: String, purpose: String) async throws -> PIIValue {
        let notFound = HTTPError(.piiNotFound, detail: "No such value (or it was erased).")
        guard PIIReferenceText.isWellFormed(ref) else { throw notFound }
        return try await context.pool.withTransaction { conn in
            guard let row = try await conn.query(
                "SELECT subject, kind, ciphertext FROM pii_values WHERE ref = \(ref) AND tenant_id = \(tenant)"
            ).first, let subject = row.string("subject"), let kind = row.string("kind"), let sealed = row.bytes("ciphertext")
            else { throw notFound }
            let dataKey = try await subjectKey(tenant: tenant, subject: subject, create: false, on: conn)
            guard let plain = try? AES256GCM(key: dataKey).open(sealed, associatedData: Array("\(tenant)/\(ref)/\(kind)".utf8)) else {
                throw notFound
            }
            // The read and its audit record commit together: no plaintext leaves unrecorded.
            try await conn.query(
                "INSERT INTO pii_reads (at, tenant_id, ref, reader, purpose) VALUES (\(Date()), \(tenant), \(ref), \(reader), \(purpose))")
            return PIIValue(kind: kind, value: String(decoding: plain, as: UTF8.self))
        }
    }

    /// Values that leave the vault by event: a removed method's address or number
    /// (`MethodChanged` with status `DELETED` names the value's reference), and a value another
    /// service asks to withdraw because nothing refers to it (`VaultWithdrawalRequested`, from
    /// its outbox: a store whose answer was lost, a reference it failed to record, a value
    /// replaced). Both are remembered as withdrawn, so a store under the reference still in
    /// flight is refused.
    static var withdrawalHandlers: EventHandlers {
        var h = EventHandlers()
        h.on(MethodChanged.self) { e, _, conn in
            guard e.status == "DELETED", let ref = e.piiRef, PIIReferenceText.isWellFormed(ref) else { return }
            try await withdraw(ref, tenant: e.tenantId, on: conn)
        }
        h.on(VaultWithdrawalRequested.self) { e, _, conn in
            try await withdraw(e.piiRef, tenant: e.tenantId, on: conn)
        }
        return h
    }

    /// Crypto-shredding: the subject's data key is destroyed, its values deleted.
    func erase(subject: String, tenant: String) async throws {
        try await context.pool.withTransaction { conn in
            _ = try await Self.destroyKey(tenant: tenant, subject: subject, on: conn)
            try await conn.query("DELETE FROM pii_values WHERE tenant_id = \(tenant) AND subject = \(subject)")
        }
    }

    /// Destroys the subject's data key and leaves its row as a tombstone (no key, `erased_at`
    /// set) even where it had none yet, so that no later store brings a key back: an erased
    /// user stays erased, whatever another service still sends for it (a method being set up
    /// while the erasure goes round, a consumer that lags). The tombstone is inserted first: a
    /// store creating the key at the same moment is waited for, and its key is then destroyed
    /// by the update (a new statement, which sees it) and its value by the caller's delete.
    /// Returns how many live keys were destroyed (0 or 1).
    static func destroyKey(tenant: String, subject: String, on conn: PostgresConnection) async throws -> Int {
        let now = Date()
        try await conn.query(
            """
            INSERT INTO subject_keys (tenant_id, subject, wrapped_key, created_at, erased_at) VALUES (\(tenant), \(subject), NULL, \(now), \(now))
            ON CONFLICT (tenant_id, subject) DO NOTHING
            """)
        return try await conn.query(
            """
            UPDATE subject_keys SET wrapped_key = NULL, erased_at = \(now)
            WHERE tenant_id = \(tenant) AND subject = \(subject) AND wrapped_key IS NOT NULL
            """
        ).affectedRows
    }

    /// The associated data a subject's data key is wrapped with.
    static func keyBinding(tenant: String, subject: String) -> [UInt8] { Array("\(tenant)/\(subject)".utf8) }

    /// The subject's data key, unwrapped (created on first use when `create`). A subject whose
    /// key was destroyed answers 409 `pii_subject_erased` when storing, 404 when reading.
    func subjectKey(tenant: String, subject: String, create: Bool, on conn: PostgresConnection) async throws -> [UInt8] {
        let aad = Self.keyBinding(tenant: tenant, subject: subject)
        if create {
            let fresh = try kek.seal(SecureRandom.bytes(32), associatedData: aad)
            try await conn.query(
                """
                INSERT INTO subject_keys (tenant_id, subject, wrapped_key, created_at) VALUES (\(tenant), \(subject), \(PostgresBytes(fresh)), \(Date()))
                ON CONFLICT (tenant_id, subject) DO NOTHING
                """)
        }
        let wrapped = try await conn.query(
            "SELECT wrapped_key FROM subject_keys WHERE tenant_id = \(tenant) AND subject = \(subject) FOR SHARE"
        ).first?.bytes("wrapped_key")
        // Storing, the row exists (inserted above if it was not): no key is a destroyed one.
        if create, wrapped == nil { throw HTTPError(.piiSubjectErased, detail: "The subject was erased: nothing more is stored for it.") }
        guard let wrapped, let key = try? kek.open(wrapped, associatedData: aad)
        else { throw HTTPError(.piiNotFound, detail: "The subject's key is gone.") }
        return key
    }
}

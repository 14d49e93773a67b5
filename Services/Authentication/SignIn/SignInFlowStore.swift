import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema

/// Sign-in flows (`signin_flows`) and what a sign-in records of its user (`user_state`: the
/// last sign-in, the answer to a registration suggestion). A flow's sequences and signed
/// evidence are stored as JSON written by the strict JSON module; a stored document that does
/// not read back is an error, never an empty list.
struct SignInFlowStore: Sendable {
    let pool: PostgresPool

    /// A stored flow whose documents do not read: a 500, and the flow is never used.
    struct UnreadableFlow: Error, CustomStringConvertible {
        let column: String
        var description: String { "a stored sign-in flow's \(column) does not read" }
    }

    /// Stores a new flow, in the caller's transaction.
    func insert(_ flow: SignInFlow, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO signin_flows (id, tenant_id, username, status, matched_rule, sequences, completed, used_credentials, revision,
                created_at, expires_at, transaction_id, evidence, signals, context)
            VALUES (\(flow.id), \(flow.tenant), \(flow.username), \(flow.status.rawValue), \(flow.matchedRule), \(try Self.document(flow.sequences)),
                \(PostgresArray(flow.completed)), \(PostgresArray(flow.usedCredentials)), \(flow.revision), \(flow.createdAt), \(flow.expiresAt),
                \(flow.transactionId), \(try Self.document(flow.evidence)), \(try flow.signals.map { try Self.document($0) }),
                \(try flow.context.map { try Self.document($0) }))
            """)
    }

    /// Saves the flow if nobody changed it since it was read (then bumps its revision), in the
    /// caller's transaction. The rule, sequences and expiry are saved too: a step that identifies
    /// the user of a sign-in started without a username decides them again, and forgets the
    /// signals and context it decided on (nil here: erased; never rewritten otherwise).
    ///
    /// - Throws: 409 `signin_conflict` when another step changed it first.
    func save(_ flow: inout SignInFlow, on conn: PostgresConnection) async throws {
        let updated = try await conn.query(
            """
            UPDATE signin_flows SET username = \(flow.username), status = \(flow.status.rawValue), completed = \(PostgresArray(flow.completed)),
                used_credentials = \(PostgresArray(flow.usedCredentials)), pending_method = \(flow.pendingMethod),
                pending_state = \(flow.pendingState.map(PostgresBytes.init)), revision = \(flow.revision + 1),
                evidence = \(try Self.document(flow.evidence)), matched_rule = \(flow.matchedRule), sequences = \(try Self.document(flow.sequences)),
                expires_at = \(flow.expiresAt),
                signals = CASE WHEN \(flow.signals == nil) THEN NULL ELSE signals END,
                context = CASE WHEN \(flow.context == nil) THEN NULL ELSE context END
            WHERE id = \(flow.id) AND revision = \(flow.revision)
            """)
        guard updated.affectedRows == 1 else {
            throw HTTPError(.signInConflict, detail: "Another step of this sign-in ran at the same time; retry.")
        }
        flow.revision += 1
    }

    /// Saves the flow on a connection of its own (a step that failed still used its challenge).
    func save(_ flow: inout SignInFlow) async throws {
        var saved = flow
        try await pool.withConnection { conn in try await save(&saved, on: conn) }
        flow = saved
    }

    /// The flow `id` of `tenant`.
    ///
    /// - Throws: 404 `signin_not_found` (also for another tenant's flow); ``UnreadableFlow``.
    func load(_ id: String, tenant: String) async throws -> SignInFlow {
        let notFound = HTTPError(.signInNotFound, detail: "No such sign-in; start again.")
        guard SignInFlow.isValidID(id) else { throw notFound }
        let row = try await pool.withConnection { conn in
            try await conn.query(
                """
                SELECT id, tenant_id, username, status, matched_rule, sequences, array_to_json(completed)::text AS completed,
                    array_to_json(used_credentials)::text AS used_credentials, pending_method, pending_state, revision, created_at, expires_at,
                    transaction_id, evidence, signals, context
                FROM signin_flows WHERE id = \(id) AND tenant_id = \(tenant)
                """)
        }.first
        guard let row, let status = row.string("status").flatMap(SignInFlow.Status.init(rawValue:)), let rule = row.string("matched_rule"),
            let sequencesText = row.string("sequences"), let revision = row.int("revision"), let created = row.date("created_at"),
            let expires = row.date("expires_at")
        else { throw notFound }
        var flow = SignInFlow(
            id: id, tenant: tenant, username: row.string("username"), status: status, matchedRule: rule,
            sequences: try Self.read([[String]].self, sequencesText, column: "sequences"),
            completed: row.stringArray("completed") ?? [], usedCredentials: row.stringArray("used_credentials") ?? [],
            pendingMethod: row.string("pending_method"), pendingState: row.bytes("pending_state"), revision: revision, createdAt: created,
            expiresAt: expires)
        flow.transactionId = row.string("transaction_id")
        // The column is NOT NULL DEFAULT '[]'.
        flow.evidence = try Self.read([SignedAssertionEvidence].self, row.string("evidence") ?? "[]", column: "evidence")
        flow.signals = try row.string("signals").map { try Self.read([String: AnyJSON].self, $0, column: "signals") }
        flow.context = try row.string("context").map { try Self.read([String: AnyJSON].self, $0, column: "context") }
        return flow
    }

    // MARK: - The user

    /// Records a completed sign-in of the user, in the caller's transaction.
    func recordSignIn(tenant: String, username: String, at now: Date, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO user_state (tenant_id, username, last_signin_at) VALUES (\(tenant), \(username), \(now))
            ON CONFLICT (tenant_id, username) DO UPDATE SET last_signin_at = EXCLUDED.last_signin_at
            """)
    }

    /// Remembers the user's answer (`NOT_NOW`, `NEVER`) to a registration suggestion.
    func rememberRegistrationAnswer(_ answer: String, tenant: String, username: String, at now: Date) async throws {
        try await pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO user_state (tenant_id, username, registration_answer, registration_answered_at)
                VALUES (\(tenant), \(username), \(answer), \(now))
                ON CONFLICT (tenant_id, username) DO UPDATE SET registration_answer = EXCLUDED.registration_answer,
                    registration_answered_at = EXCLUDED.registration_answered_at
                """)
        }
    }

    /// Forgets the user's answer to registration suggestions (the RP resets it).
    func forgetRegistrationAnswer(tenant: String, username: String) async throws {
        try await pool.withConnection { conn in
            try await conn.query(
                """
                UPDATE user_state SET registration_answer = NULL, registration_answered_at = NULL
                WHERE tenant_id = \(tenant) AND username = \(username)
                """)
        }
    }

    // MARK: - Documents

    static func document<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try JSONValueEncoder().encodeToBytes(value), as: UTF8.self)
    }

    static func read<T: Decodable>(_: T.Type, _ text: String, column: String) throws -> T {
        do {
            return try JSONValueDecoder().decode(T.self, from: Array(text.utf8))
        } catch {
            throw UnreadableFlow(column: column)
        }
    }
}

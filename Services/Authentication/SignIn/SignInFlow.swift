import Crypto
import Foundation
import HTTPServer
import Postgres
import Rules
import Schema

/// A sign-in in progress: the sequences the rules left the user, what has been completed, and
/// the method whose challenge is pending. Stored in `signin_flows`; each change checks the
/// revision it read, so two concurrent steps cannot both succeed.
struct SignInFlow: Sendable {
    enum Status: String, Sendable {
        case inProgress = "IN_PROGRESS"
        case succeeded = "SUCCEEDED"
        case failed = "FAILED"
        case denied = "DENIED"
        case rejected = "REJECTED"
    }

    var id: String
    var tenant: String
    /// Nil until the first method identifies the user, for sign-ins without a username.
    var username: String?
    var status: Status
    var matchedRule: String
    var sequences: [[String]]
    var completed: [String]
    /// base64url ids of credentials used by completed steps.
    var usedCredentials: [String]
    var pendingMethod: String?
    var pendingState: [UInt8]?
    var revision: Int
    var createdAt: Date
    var expiresAt: Date
    /// The transaction this sign-in confirms (`context.transactionId`), if any.
    var transactionId: String? = nil
    /// Each fido2 step's signed data, for a transaction confirmation.
    var evidence: [SignedAssertionEvidence] = []

    var progress: SequenceProgress { SequenceProgress(sequences: sequences, completed: completed) }

    static func newID() -> String { "si_" + Hex.encode(SecureRandom.bytes(16)) }

    /// Ids are `si_` and 32 hex digits; anything else is not looked up.
    static func isValidID(_ id: String) -> Bool {
        id.utf8.count == 35 && id.hasPrefix("si_") && id.utf8.dropFirst(3).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    // MARK: - Storage

    func insert(on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO signin_flows (id, tenant_id, username, status, matched_rule, sequences, completed, used_credentials, revision,
                created_at, expires_at, transaction_id, evidence)
            VALUES (\(id), \(tenant), \(username), \(status.rawValue), \(matchedRule), \(Self.encode(sequences)),
                \(PostgresArray(completed)), \(PostgresArray(usedCredentials)), \(revision), \(createdAt), \(expiresAt), \(transactionId),
                \(Self.encode(evidence)))
            """)
    }

    /// Saves the flow if nobody changed it since it was read (then bumps the revision).
    ///
    /// - Throws: 409 `signin_conflict` when another step changed it first.
    mutating func save(on conn: PostgresConnection) async throws {
        let updated = try await conn.query(
            """
            UPDATE signin_flows SET username = \(username), status = \(status.rawValue), completed = \(PostgresArray(completed)),
                used_credentials = \(PostgresArray(usedCredentials)), pending_method = \(pendingMethod),
                pending_state = \(pendingState.map(PostgresBytes.init)), revision = \(revision + 1), evidence = \(Self.encode(evidence))
            WHERE id = \(id) AND revision = \(revision)
            """)
        guard updated.affectedRows == 1 else {
            throw HTTPError(ProblemCode("signin_conflict", status: 409, title: "Sign-in changed"), detail: "Another step of this sign-in ran at the same time; retry.")
        }
        revision += 1
    }

    /// The flow `id` of `tenant`.
    ///
    /// - Throws: 404 `signin_not_found` (also for another tenant's flow).
    static func load(_ id: String, tenant: String, pool: PostgresPool) async throws -> SignInFlow {
        let notFound = HTTPError(ProblemCode("signin_not_found", status: 404, title: "Sign-in not found"), detail: "No such sign-in; start again.")
        guard isValidID(id) else { throw notFound }
        let row = try await pool.withConnection { conn in
            try await conn.query(
                """
                SELECT id, tenant_id, username, status, matched_rule, sequences, array_to_json(completed)::text AS completed,
                    array_to_json(used_credentials)::text AS used_credentials, pending_method, pending_state, revision, created_at, expires_at,
                    transaction_id, evidence
                FROM signin_flows WHERE id = \(id) AND tenant_id = \(tenant)
                """)
        }.first
        guard let row, let status = row.string("status").flatMap(Status.init(rawValue:)), let rule = row.string("matched_rule"),
            let sequences = row.string("sequences").flatMap(decode), let revision = row.int("revision"), let created = row.date("created_at"),
            let expires = row.date("expires_at")
        else { throw notFound }
        var flow = SignInFlow(
            id: id, tenant: tenant, username: row.string("username"), status: status, matchedRule: rule, sequences: sequences,
            completed: row.stringArray("completed") ?? [], usedCredentials: row.stringArray("used_credentials") ?? [],
            pendingMethod: row.string("pending_method"), pendingState: row.bytes("pending_state"), revision: revision, createdAt: created,
            expiresAt: expires)
        flow.transactionId = row.string("transaction_id")
        flow.evidence = row.string("evidence").flatMap { try? JSONDecoder().decode([SignedAssertionEvidence].self, from: Data($0.utf8)) } ?? []
        return flow
    }

    static func encode<T: Encodable>(_ value: T) -> String {
        String(decoding: (try? JSONEncoder().encode(value)) ?? Data("[]".utf8), as: UTF8.self)
    }

    static func decode(_ text: String) -> [[String]]? {
        try? JSONDecoder().decode([[String]].self, from: Data(text.utf8))
    }
}

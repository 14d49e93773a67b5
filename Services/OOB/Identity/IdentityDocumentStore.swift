import FoundationEssentials
import HTTPServer
import Postgres
import Schema

/// A row of `identity_documents`: what the service keeps of a user's verified identity
/// document. The personal data (names, birth date, document number) is in the pii vault only
/// (`pii_ref`); here are the kind of document, who issued it, its last valid day, the level it
/// gives and the SHA-256 of the submitted text.
struct StoredIdentityDocument: Sendable {
    var id: String
    var tenant: String
    var username: String
    var deviceId: String
    /// `DRIVER_LICENSE`, `ID_CARD` or `PASSPORT`.
    var documentType: String
    var issuingCountry: String
    var jurisdiction: String?
    /// ISO 8601 date (`YYYY-MM-DD`): the last valid day.
    var expiresOn: String
    var identityLevel: ApprovalLevel
    /// `MATCHED` or `NOT_CHECKED`.
    var nameCheck: String
    var piiRef: String
    var textHash: [UInt8]
    var createdAt: Date

    var resource: IdentityDocumentResource {
        IdentityDocumentResource(
            documentId: id, documentType: documentType, issuingCountry: issuingCountry, jurisdiction: jurisdiction, expiresOn: expiresOn,
            identityLevel: identityLevel.rawValue, nameCheck: nameCheck, createdAt: createdAt)
    }
}

/// Owns the SQL of `identity_documents`.
enum IdentityDocumentStore {
    static let migration = Migration(
        130, "identity_documents",
        """
        -- Identity documents verified for a user (EXECUTIVE approvals, issue #16). The personal
        -- data is in the pii vault under the user's subject (pii_ref); text_hash is the SHA-256
        -- of the text the device submitted. expires_on is an ISO 8601 date (the last valid day).
        CREATE TABLE identity_documents (
            id text PRIMARY KEY,
            tenant_id text NOT NULL,
            username text NOT NULL,
            device_id text NOT NULL,
            document_type text NOT NULL CHECK (document_type IN ('DRIVER_LICENSE', 'ID_CARD', 'PASSPORT')),
            issuing_country text NOT NULL,
            jurisdiction text,
            expires_on text NOT NULL CHECK (expires_on ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
            identity_level text NOT NULL,
            name_check text NOT NULL,
            pii_ref text NOT NULL,
            text_hash bytea NOT NULL,
            created_at timestamptz NOT NULL
        );
        CREATE INDEX identity_documents_user ON identity_documents (tenant_id, username);
        -- An approval may be accepted at the user's highest level when the RP allowed it.
        ALTER TABLE approvals ADD COLUMN allow_lower_level boolean NOT NULL DEFAULT false;
        """)

    static func insert(_ document: StoredIdentityDocument, on conn: PostgresConnection) async throws {
        try await conn.query(
            """
            INSERT INTO identity_documents (id, tenant_id, username, device_id, document_type, issuing_country, jurisdiction, expires_on,
                identity_level, name_check, pii_ref, text_hash, created_at)
            VALUES (\(document.id), \(document.tenant), \(document.username), \(document.deviceId), \(document.documentType),
                \(document.issuingCountry), \(document.jurisdiction), \(document.expiresOn), \(document.identityLevel.rawValue),
                \(document.nameCheck), \(document.piiRef), \(PostgresBytes(document.textHash)), \(document.createdAt))
            """)
    }

    /// The highest identity level the user's documents give on `today` (an ISO 8601 date): a
    /// document counts through its last valid day. nil when none is valid.
    static func identityLevel(of username: String, tenant: String, today: String, on conn: PostgresConnection) async throws -> ApprovalLevel? {
        let rows = try await conn.query(
            """
            SELECT identity_level, username FROM identity_documents
            WHERE tenant_id = \(tenant) AND username = \(username) AND expires_on >= \(today)
            """)
        return rows.filter { $0.string("username").map { UsernameRules.identical($0, username) } ?? false }
            .compactMap { $0.string("identity_level").flatMap(ApprovalLevel.init(rawValue:)) }.max()
    }
}

import FoundationEssentials

/// A bound device registers the identity document it scanned for its user
/// (`POST /v1/tenants/{tenant}/devices/{deviceId}/identity-documents`, with `Device-Proof`):
/// the text read from the document, and a signature by the device's user-auth key
/// (``IdentityDocumentSignature``), as ESSENTIAL approvals are signed.
public struct IdentityDocumentSubmission: Codable, Sendable, Equatable {
    /// `aamva` (the PDF417 text of a US or Canadian driver's license or identification card)
    /// or `mrz` (the machine readable zone of a passport, TD3, or identity card, TD1; lines
    /// separated by LF).
    public var format: String
    /// The scanned text, at most 2,048 bytes.
    public var text: String
    /// base64url ES256 r‖s by the user-auth key over ``IdentityDocumentSignature/message(deviceId:text:)``.
    public var signature: String

    public init(format: String, text: String, signature: String) {
        self.format = format
        self.text = text
        self.signature = signature
    }

    public static var fullExample: IdentityDocumentSubmission {
        IdentityDocumentSubmission(
            format: "mrz", text: "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10",
            signature: "BwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4_QEFCQ0RFRg")
    }
}

/// The bytes the user-auth key signs to register a document: UTF-8 of
/// `signet-identity-document-v1 LF deviceId LF base64url(SHA-256(text))`.
public enum IdentityDocumentSignature {
    public static func message(deviceId: String, textHash: String) -> [UInt8] {
        Array("signet-identity-document-v1\n\(deviceId)\n\(textHash)".utf8)
    }
}

/// A registered identity document as the device and the user's data see it: what kind, who
/// issued it, until when; never the personal data (kept by the pii vault, `piiRef`).
public struct IdentityDocumentResource: Codable, Sendable, Equatable {
    public var documentId: String
    /// `DRIVER_LICENSE`, `ID_CARD` (AAMVA or TD1) or `PASSPORT`.
    public var documentType: String
    /// The issuing country (ICAO three-letter code; `USA` or `CAN` for AAMVA cards).
    public var issuingCountry: String
    /// The AAMVA issuer identification number (which jurisdiction issued the card); absent for
    /// ICAO documents.
    public var jurisdiction: String?
    /// The last valid day (ISO 8601 date).
    public var expiresOn: String
    /// The identity level the document gives the user: `EXECUTIVE`.
    public var identityLevel: String
    /// `MATCHED` (the document's name matched the user's profile name) or `NOT_CHECKED` (no
    /// profile name known: recorded as given).
    public var nameCheck: String
    public var createdAt: Date

    public init(
        documentId: String, documentType: String, issuingCountry: String, jurisdiction: String?, expiresOn: String, identityLevel: String,
        nameCheck: String, createdAt: Date
    ) {
        self.documentId = documentId
        self.documentType = documentType
        self.issuingCountry = issuingCountry
        self.jurisdiction = jurisdiction
        self.expiresOn = expiresOn
        self.identityLevel = identityLevel
        self.nameCheck = nameCheck
        self.createdAt = createdAt
    }

    public static var fullExample: IdentityDocumentResource {
        IdentityDocumentResource(
            documentId: "id_0f1e2d3c4b5a69788796a5b4c3d2e1f0", documentType: "DRIVER_LICENSE", issuingCountry: "USA", jurisdiction: "636000",
            expiresOn: "2031-12-10", identityLevel: "EXECUTIVE", nameCheck: "MATCHED", createdAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
}

/// What the registration service tells the oob service about a user before a document is
/// vaulted (`GET /v1/internal/tenants/{t}/users/{u}/vault-subject`, internal token): the
/// subject the pii vault keys the user's values by (so the purge shreds the document with the
/// rest) and the reference of the profile's full name, when the user gave one.
public struct UserVaultSubject: Codable, Sendable, Equatable {
    public var subject: String
    public var fullNameRef: String?

    public init(subject: String, fullNameRef: String?) {
        self.subject = subject
        self.fullNameRef = fullNameRef
    }
}

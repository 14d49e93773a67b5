import Crypto
import FoundationEssentials
import HTTPServer
import IdentityDocuments
import JSON
import Platform
import Schema
import ServiceKit
import Tokens

/// Identity documents (EXECUTIVE approvals, issue #16): a bound device submits the text it
/// scanned from its user's driver's license (AAMVA PDF417) or passport / identity card (ICAO
/// MRZ), signed by its user-auth key. The service parses it strictly, refuses an expired
/// document and one whose name is not the user's profile name (when the user gave one), keeps
/// the personal data only in the pii vault (under the user's subject, so that the purge shreds
/// it) and records the document's kind, issuer, expiry, text hash and the level it gives.
///
/// Name check (decided here): when the registration service knows a profile `fullName` for the
/// user, the document's family name components and its first given name must all be words of
/// that name (compared in upper case, diacritics removed, words split at anything that is not a
/// letter); middle names may be left out of the profile, and the order does not matter. Without
/// a profile name the document is recorded as given (`nameCheck: NOT_CHECKED`).
struct IdentityDocumentRoutes: Sendable {
    let context: ServiceContext
    let devices: DeviceStore
    let calls: InternalCalls
    let registrationURL: String
    let piiURL: String

    static let maximumTextBytes = 2048
    /// Why the vault's profile name is read (`pii_reads.purpose`).
    static let readPurpose = "identity_document_check"

    func register(on router: inout GuardedRouter) {
        router.post("/v1/tenants/{tenant}/devices/{deviceId}/identity-documents", context.deviceSigned(devices)) { request, ctx in
            try await submit(request, ctx)
        }
    }

    /// The parsed document, in the form the vault keeps and the checks read.
    struct VerifiedDocument: Sendable {
        var documentType: String
        var issuingCountry: String
        var jurisdiction: String?
        var familyName: String
        var givenNames: String
        var birthDate: CalendarDate
        var expiryDate: CalendarDate
        var documentNumber: String
        var nationality: String?

        /// The vault's value: a JSON object of strings.
        var vaultValue: [String: String] {
            var value = [
                "documentType": documentType, "issuingCountry": issuingCountry, "familyName": familyName, "givenNames": givenNames,
                "birthDate": birthDate.description, "expiresOn": expiryDate.description, "documentNumber": documentNumber,
            ]
            if let jurisdiction { value["jurisdiction"] = jurisdiction }
            if let nationality { value["nationality"] = nationality }
            return value
        }
    }

    /// Today in UTC, the day a document's expiry is compared with.
    static func today(_ now: Date = Date()) -> CalendarDate {
        var calendar = Calendar(identifier: .gregorian)
        // .gmt, not TimeZone(identifier: "UTC"): named zones need FoundationInternationalization.
        calendar.timeZone = .gmt
        let parts = calendar.dateComponents([.year, .month, .day], from: now)
        return CalendarDate(year: parts.year ?? 1970, month: parts.month ?? 1, day: parts.day ?? 1) ?? CalendarDate(year: 1970, month: 1, day: 1)!
    }

    /// Parses `text` as `format`; every refusal is 400 `identity_document_invalid` naming the
    /// parser's code and field (never the document's data).
    static func parse(format: String, text: String, today: CalendarDate) throws -> VerifiedDocument {
        do {
            switch format {
            case "aamva":
                let card = try AAMVADocument.parse(text)
                return VerifiedDocument(
                    documentType: card.kind == .driverLicense ? "DRIVER_LICENSE" : "ID_CARD", issuingCountry: card.country,
                    jurisdiction: card.issuerIdentificationNumber, familyName: card.familyName,
                    givenNames: [card.firstName, card.middleName].compactMap { $0 }.joined(separator: " "), birthDate: card.birthDate,
                    expiryDate: card.expiryDate, documentNumber: card.customerID, nationality: nil)
            case "mrz":
                let mrz = try MachineReadableZone.parse(text, today: today)
                return VerifiedDocument(
                    documentType: mrz.format == .td3 ? "PASSPORT" : "ID_CARD", issuingCountry: mrz.issuingState, jurisdiction: nil,
                    familyName: mrz.primaryIdentifier, givenNames: mrz.secondaryIdentifier, birthDate: mrz.birthDate, expiryDate: mrz.expiryDate,
                    documentNumber: mrz.documentNumber, nationality: mrz.nationality)
            default:
                throw HTTPError.invalid("format", "format is aamva or mrz.")
            }
        } catch let error as IdentityDocumentError {
            throw HTTPError(.identityDocumentInvalid, detail: "The document text was refused: \(error.description).", field: "text")
        }
    }

    /// Upper-case words of `name`, diacritics removed, split at anything that is not a letter.
    static func words(_ name: String) -> [String] {
        TextFolding.folded(name).uppercased()
            .split(whereSeparator: { !$0.isLetter }).map(String.init)
    }

    /// Whether the document names the profile's person (see the type's comment).
    static func nameMatches(profile: String, familyName: String, givenNames: String) -> Bool {
        let profileWords = Set(words(profile))
        let family = words(familyName)
        guard !family.isEmpty, let first = words(givenNames).first else { return false }
        return family.allSatisfy(profileWords.contains) && profileWords.contains(first)
    }

    func submit(_ request: HTTPRequest, _ ctx: RequestContext) async throws -> HTTPResponse {
        let body = try request.decode(IdentityDocumentSubmission.self)
        guard (1...Self.maximumTextBytes).contains(body.text.utf8.count) else {
            throw HTTPError.invalid("text", "text must be 1-\(Self.maximumTextBytes) bytes.")
        }
        guard let raw = Base64URL.decode(body.signature), raw.count == 64, let der = ECDSASignature.der(fromRaw: raw) else {
            throw HTTPError.invalid("signature", "signature is a base64url ES256 signature (r‖s, 64 bytes).")
        }
        let tenant = ctx.parameter("tenant")
        let deviceId = ctx.parameter("deviceId")
        guard let device = try await context.pool.withConnection({ try await DeviceStore.load(deviceId, tenant: tenant, on: $0) }),
            device.status == "ACTIVE", let username = device.username
        else { throw HTTPError(.deviceNotBound, detail: "Only a device bound to a user registers identity documents.") }
        // The user-auth key (user presence), as ESSENTIAL approvals: the device key alone does
        // not register a document.
        let textHash = SHA256.hash(Array(body.text.utf8))
        let message = IdentityDocumentSignature.message(deviceId: deviceId, textHash: Base64URL.encode(textHash))
        guard let keyText = device.userAuthKey, let key = try? JWK(json: keyText).publicKey(), key.verify(signature: der, message: message, algorithm: .es256)
        else {
            throw HTTPError(.identityDocumentSignatureInvalid, detail: "The signature does not verify with the device's user-auth key.", field: "signature")
        }
        let today = Self.today()
        let document = try Self.parse(format: body.format, text: body.text, today: today)
        guard document.expiryDate >= today else { throw HTTPError(.identityDocumentExpired, detail: "The document has expired.") }

        // The user's vault subject and profile name (registration service), then the check.
        let user: UserVaultSubject
        do {
            user = try await calls.get("\(registrationURL)/v1/internal/tenants/\(tenant)/users/\(Self.pathSegment(username))/vault-subject", as: UserVaultSubject.self)
        } catch let error as HTTPError where error.code.status == 404 {
            throw HTTPError(.identitySubjectUnknown, detail: "The user has no account with the registration service.")
        }
        var nameCheck = "NOT_CHECKED"
        if let ref = user.fullNameRef {
            let profile = try await calls.post(
                "\(piiURL)/v1/internal/tenants/\(tenant)/pii/\(ref)/read", PIIReadRequest(purpose: Self.readPurpose), as: PIIValue.self)
            guard Self.nameMatches(profile: profile.value, familyName: document.familyName, givenNames: document.givenNames) else {
                throw HTTPError(.identityDocumentNameMismatch, detail: "The document's name is not the user's profile name.")
            }
            nameCheck = "MATCHED"
        }
        let value = String(decoding: try JSONValueEncoder().encodeToBytes(document.vaultValue), as: UTF8.self)
        // The vault is called outside any transaction (a remote call never holds a row lock). A
        // value stored whose reference is not recorded here (the answer lost, the insert
        // failed) is withdrawn by a request in this service's outbox (durable: the vault
        // unreachable only delays it); only when this database cannot take it either does the
        // value stay under the user's subject, exported with the user's data and shredded with it.
        let stored = try await calls.storeInVault(
            piiURL, tenant: tenant, subject: user.subject, kind: "identity_document", value: value, withdrawingThrough: context, source: .oob)
        let record = StoredIdentityDocument(
            id: "id_" + Hex.encode(SecureRandom.bytes(16)), tenant: tenant, username: username, deviceId: deviceId,
            documentType: document.documentType, issuingCountry: document.issuingCountry, jurisdiction: document.jurisdiction,
            expiresOn: document.expiryDate.description, identityLevel: .executive, nameCheck: nameCheck, piiRef: stored.ref, textHash: textHash,
            createdAt: Date())
        do {
            try await context.pool.withConnection { try await IdentityDocumentStore.insert(record, on: $0) }
        } catch {
            await calls.withdrawFromVault(piiURL, ref: stored.ref, tenant: tenant, through: context, source: .oob) { conn in
                try await !conn.query("SELECT 1 FROM identity_documents WHERE id = \(record.id) AND tenant_id = \(tenant)").isEmpty
            }
            throw error
        }
        ctx.logger.info(
            "identity document registered",
            metadata: ["signet.document.id": .string(record.id), "signet.document.type": .string(record.documentType), "signet.name_check": .string(nameCheck)])
        return try .json(record.resource, status: 201, headers: [("Cache-Control", "no-store")])
    }

    /// `value` percent-encoded as one path segment (usernames may hold any character).
    static func pathSegment(_ value: String) -> String {
        // ASCII letters and digits only: every other byte of the UTF-8 is percent-encoded.
        PercentEncoding.encode(value, allowed: PercentEncoding.isUnreserved)
    }
}

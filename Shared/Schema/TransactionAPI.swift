import FoundationEssentials

/// The details a user is shown and consents to, in the canonical form whose SHA-256 is the
/// transaction's `detailsHash` (dynamic linking, PSD2 RTS art. 5).
///
/// Canonical form: a JSON object with exactly the members below that are present, keys in
/// ascending byte order, no whitespace, strings escaped as RFC 8259 requires (only `"`, `\`
/// and control characters, the latter as `\u00XX`), UTF-8. `amount` is the canonical decimal
/// string (no leading zeros, no `+`, `.` and 1-4 decimals only when the value has them as
/// given); `currency` an ISO 4217 code in capitals; `batch` the list of `{"amount", "payee"}`
/// in the order given; `images` the list of ``TransactionImage`` in the order given, each
/// `{"content", "tcDisplayPNGCharacteristics"}` with the characteristics' members in ascending
/// byte order (integers in decimal, `plte` entries `{"b","g","r"}`). Any change of amount,
/// currency, payee, text, type, batch or an image changes the hash, and so the challenge the
/// authenticator signs.
public struct TransactionDetails: Codable, Sendable, Equatable {
    public struct BatchItem: Codable, Sendable, Equatable {
        public var payee: String
        public var amount: String
        public init(payee: String, amount: String) {
            self.payee = payee
            self.amount = amount
        }
    }

    public var text: String
    public var amount: String
    public var currency: String
    public var payee: String
    public var type: String?
    public var batch: [BatchItem]?
    /// PNG forms of the same transaction, for FIDO UAF authenticators that display images
    /// (`image/png`, UAF Protocol §3.5.2); the text form (``uafDisplayText``) is always offered.
    public var images: [TransactionImage]?

    public init(
        text: String, amount: String, currency: String, payee: String, type: String? = nil, batch: [BatchItem]? = nil, images: [TransactionImage]? = nil
    ) {
        self.text = text
        self.amount = amount
        self.currency = currency
        self.payee = payee
        self.type = type
        self.batch = batch
        self.images = images
    }

    /// Most images of one transaction: with the text form, the four forms a UAF
    /// AuthenticationRequest carries at most.
    public static let maximumImages = 3

    /// The most request-body bytes the images of one transaction take: ``maximumImages`` times
    /// ``TransactionImage/maximumContentLength`` (131,073). Routes that take images declare it
    /// beyond the default body limit, which covers everything else (text, payee, batch, each
    /// image's characteristics with a full palette).
    public static let maximumImagesContentLength = maximumImages * TransactionImage.maximumContentLength

    /// The canonical JSON text (see the type's documentation).
    public var canonicalJSON: String {
        var members: [(String, String)] = [
            ("amount", Self.quote(amount)), ("currency", Self.quote(currency)), ("payee", Self.quote(payee)), ("text", Self.quote(text)),
        ]
        if let type { members.append(("type", Self.quote(type))) }
        if let batch {
            let items = batch.map { "{\"amount\":\(Self.quote($0.amount)),\"payee\":\(Self.quote($0.payee))}" }
            members.append(("batch", "[" + items.joined(separator: ",") + "]"))
        }
        if let images { members.append(("images", "[" + images.map(\.canonicalJSON).joined(separator: ",") + "]")) }
        members.sort { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
        return "{" + members.map { "\(Self.quote($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The `text/plain` content a FIDO UAF authenticator displays and hashes into
    /// TRANSACTION_CONTENT_HASH when the user confirms these details (UAF Protocol §3.5.4): the
    /// text, then one line with the amount, currency and payee, one line per batch payee, and
    /// the type when there is one. Both the authentication service (which sends it) and the
    /// transaction service (which checks the hash again before issuing a tcToken) derive it from
    /// the details, so it is a pure function of them; the details hash itself is bound through
    /// the challenge (dynamic linking), as for WebAuthn.
    public var uafDisplayText: String {
        var lines = [text, "\(amount) \(currency) to \(payee)"]
        for item in batch ?? [] { lines.append("- \(item.amount) \(currency) to \(item.payee)") }
        if let type { lines.append("(\(type))") }
        return lines.joined(separator: "\n")
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\u{00}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// The canonical decimal form of an amount, or nil when it is not one: 1-15 digits,
    /// optionally `.` and 1-4 digits; leading zeros removed.
    public static func canonicalAmount(_ text: String) -> String? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, (1...15).contains(whole.count), whole.allSatisfy(\.isASCIIDigit) else { return nil }
        var integer = String(whole.drop { $0 == "0" })
        if integer.isEmpty { integer = "0" }
        guard parts.count == 2 else { return integer }
        let fraction = parts[1]
        guard (1...4).contains(fraction.count), fraction.allSatisfy(\.isASCIIDigit) else { return nil }
        return integer + "." + fraction
    }

    /// Whether `scalar` may be shown to the user as part of what they confirm: no control
    /// characters (C0, DEL, C1 such as U+0085 NEXT LINE; `\n` in the text only), no line or
    /// paragraph separators, no bidirectional controls (U+202A–202E, U+2066–2069, U+200E/200F,
    /// U+061C) and no invisible characters (U+200B–200D, U+2060, U+FEFF, U+00AD): each of these
    /// can make a display show something other than the bytes the hash binds (a forged line, a
    /// payee read backwards, a hidden difference).
    static func displayable(_ scalar: Unicode.Scalar, newlines: Bool) -> Bool {
        if scalar == "\n" { return newlines }
        switch scalar.value {
        case 0...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C, 0x200B...0x200D, 0x2060, 0xFEFF, 0x00AD:
            return false
        default:
            return true
        }
    }

    /// A field shown to the user: 1…`characters` grapheme clusters, at most 4 UTF-8 bytes
    /// each on average, every scalar ``displayable(_:newlines:)``.
    static func shownField(_ s: String, characters: Int, newlines: Bool = false) -> Bool {
        !s.isEmpty && s.count <= characters && s.utf8.count <= 4 * characters && s.unicodeScalars.allSatisfy { displayable($0, newlines: newlines) }
    }

    /// The first rule the details break, as (field, message).
    public func violation() -> (field: String, message: String)? {
        if !Self.shownField(text, characters: 500, newlines: true) {
            return ("text", "text must be 1-500 characters without control, bidirectional or invisible characters (newlines allowed).")
        }
        if Self.canonicalAmount(amount) != amount { return ("amount", "amount must be a decimal string such as 385.00 (up to 15 digits and 4 decimals, no leading zeros).") }
        if currency.count != 3 || !currency.allSatisfy({ $0.isASCII && $0.isUppercase }) { return ("currency", "currency must be an ISO 4217 code such as EUR.") }
        if !Self.shownField(payee, characters: 200) { return ("payee", "payee must be 1-200 characters without control, bidirectional or invisible characters.") }
        if let type, !Self.shownField(type, characters: 64) { return ("type", "type must be 1-64 characters without control, bidirectional or invisible characters.") }
        if let batch {
            guard (1...100).contains(batch.count) else { return ("batch", "batch has 1-100 payees.") }
            for (i, item) in batch.enumerated() {
                if Self.canonicalAmount(item.amount) != item.amount { return ("batch[\(i)].amount", "amount must be a canonical decimal string.") }
                if !Self.shownField(item.payee, characters: 200) {
                    return ("batch[\(i)].payee", "payee must be 1-200 characters without control, bidirectional or invisible characters.")
                }
            }
        }
        if let images {
            guard (1...Self.maximumImages).contains(images.count) else { return ("images", "images has 1-\(Self.maximumImages) PNG forms.") }
            for (i, image) in images.enumerated() where !image.isWellFormed {
                return ("images[\(i)].content", "content is the base64url of a PNG file of at most \(TransactionImage.maximumBytes) bytes, unpadded.")
            }
        }
        return nil
    }
}

/// An `image/png` form of a transaction (UAF Protocol §3.5.2): the PNG file a FIDO UAF
/// authenticator displays, and the `DisplayPNGCharacteristicsDescriptor` it was made for. Its
/// shape is checked here (base64url, size); the transaction service checks the image itself
/// strictly (`FIDO.UAFTransactionPNG`) when the transaction is created. It is transaction
/// content like the text: it travels with the details in `TransactionChanged`.
public struct TransactionImage: Codable, Sendable, Equatable {
    /// Largest PNG file (`FIDO.UAFTransactionPNG.maximumBytes` is this one).
    public static let maximumBytes = 32 * 1024
    /// Longest `content`: the unpadded base64url of ``maximumBytes`` bytes (43,691 characters).
    public static let maximumContentLength = (maximumBytes * 4 + 2) / 3

    /// base64url of the PNG file, unpadded.
    public var content: String
    public var tcDisplayPNGCharacteristics: UAFDisplayPNGCharacteristics

    public init(content: String, tcDisplayPNGCharacteristics: UAFDisplayPNGCharacteristics) {
        self.content = content
        self.tcDisplayPNGCharacteristics = tcDisplayPNGCharacteristics
    }

    /// base64url (unpadded) of 1…``maximumBytes`` bytes.
    var isWellFormed: Bool {
        let n = content.utf8.count
        return n >= 2 && n <= Self.maximumContentLength && n % 4 != 1
            && content.utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F }
    }

    /// A 1×1 RGBA PNG, for documentation examples.
    public static var example: TransactionImage {
        TransactionImage(
            content: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk-M9QDwADhgGAWjR9awAAAABJRU5ErkJggg",
            tcDisplayPNGCharacteristics: UAFDisplayPNGCharacteristics(width: 1, height: 1, bitDepth: 8, colorType: 6))
    }

    var canonicalJSON: String {
        "{\"content\":\(TransactionDetails.quote(content)),\"tcDisplayPNGCharacteristics\":\(tcDisplayPNGCharacteristics.canonicalJSON)}"
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

/// `POST /v1/tenants/{tenant}/transactions` body.
public struct TransactionCreateRequest: Codable, Sendable, Equatable {
    public var username: String
    public var text: String
    public var amount: String
    public var currency: String
    public var payee: String
    public var type: String?
    public var payerAccount: String?
    /// Several payees under one confirmation: `payee`/`amount` then state the total.
    public var batch: [TransactionDetails.BatchItem]?
    public var expiresInSeconds: Int?
    public var customFields: [String: String]?
    /// PNG forms of the transaction for UAF authenticators that display images (1-3, each at
    /// most 32 KiB, within the HTTP body limit); checked strictly when it is created.
    public var images: [TransactionImage]?

    public init(
        username: String, text: String, amount: String, currency: String, payee: String, type: String? = nil, payerAccount: String? = nil,
        batch: [TransactionDetails.BatchItem]? = nil, expiresInSeconds: Int? = nil, customFields: [String: String]? = nil,
        images: [TransactionImage]? = nil
    ) {
        self.images = images
        self.username = username
        self.text = text
        self.amount = amount
        self.currency = currency
        self.payee = payee
        self.type = type
        self.payerAccount = payerAccount
        self.batch = batch
        self.expiresInSeconds = expiresInSeconds
        self.customFields = customFields
    }

    public var details: TransactionDetails {
        TransactionDetails(text: text, amount: amount, currency: currency, payee: payee, type: type, batch: batch, images: images)
    }

    public static var fullExample: TransactionCreateRequest {
        TransactionCreateRequest(
            username: "user-4711", text: "Pay €385.00 to 2 payees", amount: "385.00", currency: "EUR", payee: "2 payees", type: "batch",
            payerAccount: "DE89••••3000", batch: [.init(payee: "ACME Ltd", amount: "300.00"), .init(payee: "Globex", amount: "85.00")],
            expiresInSeconds: 300, customFields: ["invoice": "INV-2026-0042"], images: [TransactionImage.example])
    }
}

/// `PATCH /v1/tenants/{tenant}/transactions/{id}` body: amended details while PENDING. A
/// confirmation in progress then fails: its challenge committed to the old details.
public struct TransactionAmendRequest: Codable, Sendable, Equatable {
    public var text: String?
    public var amount: String?
    public var payee: String?
    /// Replaces the transaction's PNG forms (1–3, checked as at creation).
    public var images: [TransactionImage]?
    public init(text: String? = nil, amount: String? = nil, payee: String? = nil, images: [TransactionImage]? = nil) {
        self.text = text
        self.amount = amount
        self.payee = payee
        self.images = images
    }
}

/// `GET /v1/internal/tenants/{tenant}/transactions/{transactionId}/username` (transaction
/// service, internal token): who must confirm the transaction. ``TransactionChanged`` names
/// the user by subject reference only; the authentication service asks here when a
/// confirmation starts without a username.
public struct TransactionUsername: Codable, Sendable, Equatable {
    public var transactionId: String
    public var username: String
    public init(transactionId: String, username: String) {
        self.transactionId = transactionId
        self.username = username
    }

    public static var fullExample: TransactionUsername {
        TransactionUsername(transactionId: "tx_0f1e2d3c4b5a69788796a5b4c3d2e1f0", username: "user-4711")
    }
}

/// A transaction as the RP reads it.
public struct TransactionResource: Codable, Sendable, Equatable {
    public var transactionId: String
    /// `PENDING`, `CONFIRMED`, `REJECTED`, `EXPIRED` or `CANCELLED`.
    public var status: String
    /// base64url SHA-256 of the canonical details.
    public var detailsHash: String
    public var username: String
    public var text: String
    public var amount: String
    public var currency: String
    public var payee: String
    public var type: String?
    public var payerAccount: String?
    public var batch: [TransactionDetails.BatchItem]?
    /// The PNG forms given at creation.
    public var images: [TransactionImage]?
    public var customFields: [String: String]?
    public var createdAt: Date
    public var expiresAt: Date
    public var updatedAt: Date
    /// Once CONFIRMED.
    public var tcToken: String?

    public init(
        transactionId: String, status: String, detailsHash: String, username: String, details: TransactionDetails, payerAccount: String?,
        customFields: [String: String]?, createdAt: Date, expiresAt: Date, updatedAt: Date, tcToken: String?
    ) {
        self.transactionId = transactionId
        self.status = status
        self.detailsHash = detailsHash
        self.username = username
        text = details.text
        amount = details.amount
        currency = details.currency
        payee = details.payee
        type = details.type
        batch = details.batch
        images = details.images
        self.payerAccount = payerAccount
        self.customFields = customFields
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.updatedAt = updatedAt
        self.tcToken = tcToken
    }

    public var details: TransactionDetails {
        TransactionDetails(text: text, amount: amount, currency: currency, payee: payee, type: type, batch: batch, images: images)
    }

    public static var fullExample: TransactionResource {
        TransactionResource(
            transactionId: "tx_0f1e2d3c4b5a69788796a5b4c3d2e1f0", status: "CONFIRMED", detailsHash: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U",
            username: "user-4711",
            details: TransactionDetails(
                text: "Pay to several payees", amount: "385.00", currency: "EUR", payee: "2 payees", type: "batch",
                batch: [.init(payee: "ACME Ltd", amount: "300.00"), .init(payee: "Globex", amount: "85.00")], images: [TransactionImage.example]),
            payerAccount: "DE89••••3000", customFields: ["invoice": "INV-2026-0042"], createdAt: Date(timeIntervalSince1970: 1_764_000_000),
            expiresAt: Date(timeIntervalSince1970: 1_764_000_300), updatedAt: Date(timeIntervalSince1970: 1_764_000_060),
            tcToken: "eyJhbGciOiJFUzI1NiJ9.e30.sig")
    }
}

/// `POST /v1/tenants/{tenant}/transactions/{id}/tctoken/verify` body.
public struct TCTokenVerifyRequest: Codable, Sendable, Equatable {
    public var tcToken: String
    public init(tcToken: String) { self.tcToken = tcToken }
    public static var fullExample: TCTokenVerifyRequest { TCTokenVerifyRequest(tcToken: "eyJhbGciOiJFUzI1NiJ9.e30.sig") }
}

/// What the verification of a tcToken found.
public struct TCTokenVerifyResult: Codable, Sendable, Equatable {
    public var valid: Bool
    /// Why not: the JOSE code (`signature_invalid`, `expired`…) or `transaction_mismatch`,
    /// `details_mismatch`, `not_confirmed`, `token_mismatch`.
    public var reason: String?
    /// True when an earlier verification already consumed this token.
    public var alreadyConsumed: Bool

    public init(valid: Bool, reason: String? = nil, alreadyConsumed: Bool) {
        self.valid = valid
        self.reason = reason
        self.alreadyConsumed = alreadyConsumed
    }

    public static var fullExample: TCTokenVerifyResult { TCTokenVerifyResult(valid: false, reason: "transaction_mismatch", alreadyConsumed: false) }
}

/// One signed step of a confirmation, as kept for evidence.
///
/// A WebAuthn step (`format` absent): base64url credential id, authenticator data, client data
/// JSON, signature (DER) and the credential's COSE public key.
///
/// A FIDO UAF step (`format` `uaf`): `credentialId` is the base64url KeyID, `aaid` the
/// authenticator's AAID, `authenticatorData` the base64url `TAG_UAFV1_AUTH_ASSERTION` (its
/// SIGNED_DATA and SIGNATURE), `clientDataJSON` the fcParams exactly as the client sent them
/// (base64url of the FinalChallengeParams JSON), `signature` the assertion's signature and
/// `publicKeyCose` the registered public key in `keyEncoding` (UAF Registry `UAF_ALG_KEY_*`),
/// verified with `signatureAlgorithm` (`UAF_ALG_SIGN_*`). The transaction content the
/// authenticator displayed is ``TransactionDetails/uafDisplayText`` or one of the details' images.
public struct SignedAssertionEvidence: Codable, Sendable, Equatable {
    public var credentialId: String
    public var authenticatorData: String
    public var clientDataJSON: String
    public var signature: String
    public var publicKeyCose: String
    /// base64url 16-byte nonce of the dynamic-linking challenge.
    public var nonce: String
    /// `uaf` for a FIDO UAF step; absent for WebAuthn.
    public var format: String?
    /// UAF only: the AAID, the key encoding and the signature algorithm of the registration.
    public var aaid: String?
    public var keyEncoding: Int?
    public var signatureAlgorithm: Int?

    public init(
        credentialId: String, authenticatorData: String, clientDataJSON: String, signature: String, publicKeyCose: String, nonce: String,
        format: String? = nil, aaid: String? = nil, keyEncoding: Int? = nil, signatureAlgorithm: Int? = nil
    ) {
        self.credentialId = credentialId
        self.authenticatorData = authenticatorData
        self.clientDataJSON = clientDataJSON
        self.signature = signature
        self.publicKeyCose = publicKeyCose
        self.nonce = nonce
        self.format = format
        self.aaid = aaid
        self.keyEncoding = keyEncoding
        self.signatureAlgorithm = signatureAlgorithm
    }

    /// The value of `format` for a FIDO UAF step.
    public static let uafFormat = "uaf"
    /// The value of `format` for an `oob_push` step (a transaction confirmed on the user's
    /// bound device): `credentialId` is the device id, `nonce` the approval id (both as they are,
    /// in base64url's alphabet), `authenticatorData` base64url of the approval's canonical
    /// details (``ApprovalDetails/canonicalJSON``, with the transaction's details hash), `clientDataJSON`
    /// base64url of the message signed (``ApprovalSignature``), `signature` base64url r‖s by
    /// the device's user-auth key, and `publicKeyCose` base64url of that key's JWK thumbprint
    /// (RFC 7638); the transaction service checks the key against its own record of the device.
    public static let oobPushFormat = "oob_push"
}

/// `GET /v1/tenants/{tenant}/transactions/{id}/evidence`: what was displayed, what was
/// signed, and the tcToken — enough to verify the consent again offline.
public struct TransactionEvidence: Codable, Sendable, Equatable {
    public var transactionId: String
    /// The canonical details JSON displayed and hashed.
    public var displayed: String
    public var detailsHash: String
    /// How the challenge was derived from `detailsHash` and each step's nonce.
    public var challengeDerivation: String
    public var assertions: [SignedAssertionEvidence]
    public var amr: [String]
    public var tcToken: String
    public var confirmedAt: Date

    public init(
        transactionId: String, displayed: String, detailsHash: String, assertions: [SignedAssertionEvidence], amr: [String], tcToken: String,
        confirmedAt: Date
    ) {
        self.transactionId = transactionId
        self.displayed = displayed
        self.detailsHash = detailsHash
        challengeDerivation = TransactionEvidence.derivation
        self.assertions = assertions
        self.amr = amr
        self.tcToken = tcToken
        self.confirmedAt = confirmedAt
    }

    public static let derivation = "SHA-256(\"signet-dynamic-link-v1\" || 0x00 || detailsHash (32 bytes) || nonce (16 bytes))"
}

import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema

/// A tenant's push text for approvals in one locale: `{"text"}` with the placeholders
/// `{{action}}`, `{{resource}}` and `{{level}}`, stored by the template admin API as kind `push`
/// (``TemplateStore``) next to the e-mail and SMS templates.
///
/// Parsing is strict (an unclosed `{{` or another placeholder name is refused, so a stored
/// template always renders) and rendering is a single pass: a value that itself contains
/// `{{action}}` is inserted literally.
struct PushTemplate: Sendable, Equatable {
    /// The admin API's document.
    struct Document: Codable, Sendable {
        var text: String
    }

    enum Piece: Sendable, Equatable {
        case literal(String)
        case action
        case resource
        case level
    }

    static let maximumLength = 512
    let pieces: [Piece]

    /// - Throws: 400 `invalid_template` for an empty or too long text, a control character,
    ///   an unclosed `{{` or an unknown placeholder.
    init(_ text: String) throws {
        guard (1...Self.maximumLength).contains(text.count), text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw HTTPError(.invalidTemplate, detail: "A push text is 1-\(Self.maximumLength) characters without control characters.", field: "text")
        }
        var pieces: [Piece] = []
        var rest = Substring(text)
        while let open = rest.firstRange(of: "{{") {
            if open.lowerBound > rest.startIndex { pieces.append(.literal(String(rest[..<open.lowerBound]))) }
            guard let close = rest[open.upperBound...].firstRange(of: "}}") else {
                throw HTTPError(.invalidTemplate, detail: "The push text has an unclosed {{.", field: "text")
            }
            switch rest[open.upperBound..<close.lowerBound] {
            case "action": pieces.append(.action)
            case "resource": pieces.append(.resource)
            case "level": pieces.append(.level)
            default: throw HTTPError(.invalidTemplate, detail: "Push placeholders are {{action}}, {{resource}} and {{level}}.", field: "text")
            }
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { pieces.append(.literal(String(rest))) }
        self.pieces = pieces
    }

    /// The text with the approval's action, resource and level filled in.
    func render(action: String, resource: String, level: String) -> String {
        pieces.map { piece in
            switch piece {
            case .literal(let s): s
            case .action: action
            case .resource: resource
            case .level: level
            }
        }.joined()
    }

    /// The built-in text when the tenant has no push template in any locale of the chain.
    static let builtIn = "Approve or reject the request in the app."

    /// `fr-CA` → `fr-CA`, `fr`, `en`.
    static func fallbackChain(_ locale: String?) -> [String] {
        var chain: [String] = []
        if let locale {
            chain.append(locale)
            if let dash = locale.firstIndex(of: "-") { chain.append(String(locale[..<dash])) }
        }
        if !chain.contains("en") { chain.append("en") }
        return chain
    }

    /// A locale like `en` or `fr-CA` (letters and dashes, 2-16 characters).
    static func isLocale(_ s: String) -> Bool {
        (2...16).contains(s.utf8.count) && s.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D }
    }

    // MARK: - Store

    /// The approval's push locale (`approvals.locale`, set in the transaction that creates it)
    /// and the device's (`devices.locale`, from its create/update request).
    static let migration = Migration(
        170, "push_locales",
        """
        -- The locale of an approval's templated push text: the RP's request, else the device's
        -- (the phone's language), else the default chain. Language tags, not personal data.
        ALTER TABLE approvals ADD COLUMN locale text;
        ALTER TABLE devices ADD COLUMN locale text;
        """)

    static func recordLocale(_ locale: String, approval: String, tenant: String, on conn: PostgresConnection) async throws {
        try await conn.query("UPDATE approvals SET locale = \(locale) WHERE id = \(approval) AND tenant_id = \(tenant)")
    }

    static func recordDeviceLocale(_ locale: String, device: String, tenant: String, on conn: PostgresConnection) async throws {
        try await conn.query("UPDATE devices SET locale = \(locale) WHERE id = \(device) AND tenant_id = \(tenant)")
    }

    /// The push text of `approval` for the device `deviceId`: the RP's own text when it gave
    /// one (the tenant allowed it at creation), else the tenant's push template in the
    /// approval's locale chain (the request's locale, else the device's), else the built-in
    /// text.
    ///
    /// - Throws: when a stored template no longer parses: an error, never a silent fall back.
    static func displayText(_ approval: StoredApproval, deviceId: String?, on conn: PostgresConnection) async throws -> String {
        if let text = approval.text { return text }
        var locale = try await conn.query("SELECT locale FROM approvals WHERE id = \(approval.id) AND tenant_id = \(approval.tenant)").first?.string("locale")
        if locale == nil, let deviceId {
            locale = try await conn.query("SELECT locale FROM devices WHERE id = \(deviceId) AND tenant_id = \(approval.tenant)").first?.string("locale")
        }
        let chain = fallbackChain(locale)
        var documents: [String: String] = [:]
        for row in try await conn.query(
            "SELECT locale, document FROM message_templates WHERE tenant_id = \(approval.tenant) AND kind = 'push' AND locale = ANY(\(PostgresArray(chain))::text[])")
        {
            if let l = row.string("locale"), let d = row.string("document") { documents[l] = d }
        }
        guard let found = chain.lazy.compactMap({ documents[$0] }).first else { return builtIn }
        let document = try JSONValueDecoder().decode(Document.self, from: Array(found.utf8))
        return try PushTemplate(document.text).render(action: approval.action, resource: approval.resource, level: approval.level.rawValue)
    }
}

/// The texts of one kind of message in one locale: an e-mail subject, a plain-text body, an
/// optional HTML body and an SMS text, each with `{{placeholder}}`s.
///
/// Creating one parses every text: an unclosed `{{` or a name that is not a
/// ``TemplatePlaceholder`` is refused, so a registered template always renders. Rendering is a
/// single pass: a value that itself contains `{{code}}` is inserted literally, never expanded.
public struct MessageTemplate: Sendable, Hashable {
    /// The e-mail subject.
    public let emailSubject: String
    /// The plain-text e-mail body.
    public let emailText: String
    /// The HTML e-mail body, if the message has one. Values are HTML-escaped into it.
    public let emailHTML: String?
    /// The SMS text.
    public let smsText: String

    private let parsedSubject: TemplateText
    private let parsedText: TemplateText
    private let parsedHTML: TemplateText?
    private let parsedSMS: TemplateText

    /// A template.
    ///
    /// - Parameters:
    ///   - emailSubject: The subject; placeholders allowed.
    ///   - emailText: The plain-text body.
    ///   - emailHTML: An HTML body, or nil for text-only e-mail.
    ///   - smsText: The SMS text.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/templateInvalid``
    ///   for an unclosed `{{` or an unknown placeholder name,
    ///   ``DeliveryError/Code-swift.struct/headerInjection`` for a line break in the subject.
    public init(emailSubject: String, emailText: String, emailHTML: String? = nil, smsText: String) throws {
        if HeaderText.containsLineBreak(emailSubject) {
            throw DeliveryError(.headerInjection, detail: "line break in a subject template")
        }
        parsedSubject = try TemplateText(emailSubject, part: "emailSubject")
        parsedText = try TemplateText(emailText, part: "emailText")
        parsedHTML = try emailHTML.map { try TemplateText($0, part: "emailHTML") }
        parsedSMS = try TemplateText(smsText, part: "smsText")
        self.emailSubject = emailSubject
        self.emailText = emailText
        self.emailHTML = emailHTML
        self.smsText = smsText
    }

    /// Every placeholder any of the texts uses.
    public var placeholders: Set<TemplatePlaceholder> {
        var all = parsedSubject.placeholders.union(parsedText.placeholders).union(parsedSMS.placeholders)
        if let parsedHTML { all.formUnion(parsedHTML.placeholders) }
        return all
    }

    /// The texts with the values filled in.
    ///
    /// - Parameter values: The values; every placeholder used needs one.
    /// - Returns: Subject, text, HTML and SMS; the HTML with values escaped.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/templateValueMissing``
    ///   when a used placeholder has no value, ``DeliveryError/Code-swift.struct/headerInjection``
    ///   when a value inserted into the subject has a line break.
    func render(_ values: TemplateValues) throws -> (subject: String, text: String, html: String?, sms: String) {
        let subject = try parsedSubject.render(values, escapeHTML: false)
        if HeaderText.containsLineBreak(subject) {
            throw DeliveryError(.headerInjection, detail: "line break in a value used in the subject")
        }
        return (
            subject,
            try parsedText.render(values, escapeHTML: false),
            try parsedHTML?.render(values, escapeHTML: true),
            try parsedSMS.render(values, escapeHTML: false)
        )
    }

    /// Templates are equal when their texts are.
    public static func == (lhs: MessageTemplate, rhs: MessageTemplate) -> Bool {
        lhs.emailSubject == rhs.emailSubject && lhs.emailText == rhs.emailText
            && lhs.emailHTML == rhs.emailHTML && lhs.smsText == rhs.smsText
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(emailSubject)
        hasher.combine(emailText)
        hasher.combine(emailHTML)
        hasher.combine(smsText)
    }
}

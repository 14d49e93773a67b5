/// A template with its values filled in: the e-mail subject and bodies and the SMS text, with
/// where the template came from.
///
/// `description` shows the kind, locale and source only: the texts hold the one-time code.
public struct RenderedMessage: Sendable, Hashable, CustomStringConvertible {
    /// Where a resolved template was registered.
    public enum Source: Sendable, Hashable {
        /// Registered for the tenant.
        case tenant
        /// Registered for every tenant of the deployment.
        case deployment
        /// One of the library's built-in English defaults.
        case builtIn
    }

    /// The kind rendered.
    public let kind: MessageKind
    /// The locale of the template used, after fallback (`fr` for a `fr-CA` request with no
    /// `fr-CA` template), lower-cased.
    public let locale: String
    /// Where the template used was registered.
    public let source: Source
    /// The e-mail subject.
    public let emailSubject: String
    /// The plain-text e-mail body.
    public let emailText: String
    /// The HTML e-mail body, values escaped; nil when the template has none.
    public let emailHTML: String?
    /// The SMS text.
    public let smsText: String

    /// The kind, the locale and the source; never the texts.
    public var description: String {
        "RenderedMessage(kind: \(kind), locale: \(locale), source: \(source))"
    }

    /// An ``EmailMessage`` with this subject and these bodies.
    ///
    /// - Parameters:
    ///   - from: The sender.
    ///   - to: The recipient.
    /// - Throws: ``DeliveryError`` as ``EmailMessage``'s initialiser does (a line break in the
    ///   subject is refused as header injection).
    public func email(from: EmailAddress, to: EmailAddress) throws -> EmailMessage {
        try EmailMessage(from: from, to: to, subject: emailSubject, textBody: emailText, htmlBody: emailHTML)
    }

    /// An ``SMSMessage`` with this text.
    ///
    /// - Parameters:
    ///   - to: The recipient, E.164.
    ///   - sender: An optional sender id.
    /// - Throws: ``DeliveryError`` as ``SMSMessage/init(to:text:sender:)`` does.
    public func sms(to: String, sender: String? = nil) throws -> SMSMessage {
        try SMSMessage(to: to, text: smsText, sender: sender)
    }
}

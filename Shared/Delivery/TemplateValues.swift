/// The values for a template's placeholders.
///
/// Values are inserted as given into subjects, plain text and SMS, and HTML-escaped into HTML
/// bodies. `description` shows which values are set, never the values: the code is a secret.
public struct TemplateValues: Sendable, Hashable, CustomStringConvertible {
    /// `{{code}}`: the one-time code.
    public var code: String
    /// `{{minutes}}`: minutes until the code expires.
    public var minutes: Int?
    /// `{{tenant}}`: the tenant's display name.
    public var tenant: String?
    /// `{{amount}}`: the amount with its currency, already formatted for the locale.
    public var amount: String?
    /// `{{payee}}`: who is paid.
    public var payee: String?

    /// Values for one message.
    ///
    /// - Parameters:
    ///   - code: The one-time code.
    ///   - minutes: Minutes until it expires.
    ///   - tenant: The tenant's display name.
    ///   - amount: The formatted amount, for transaction templates.
    ///   - payee: The payee, for transaction templates.
    public init(code: String, minutes: Int? = nil, tenant: String? = nil, amount: String? = nil, payee: String? = nil) {
        self.code = code
        self.minutes = minutes
        self.tenant = tenant
        self.amount = amount
        self.payee = payee
    }

    /// The value for a placeholder, nil when not set.
    public subscript(placeholder: TemplatePlaceholder) -> String? {
        switch placeholder {
        case .code: code
        case .minutes: minutes.map(String.init)
        case .tenant: tenant
        case .amount: amount
        case .payee: payee
        }
    }

    /// The names of the values that are set, e.g. `TemplateValues(code, minutes, tenant)`.
    public var description: String {
        let set = TemplatePlaceholder.allCases.filter { self[$0] != nil }.map(\.rawValue)
        return "TemplateValues(\(set.joined(separator: ", ")))"
    }
}

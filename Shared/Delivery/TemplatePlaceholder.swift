/// A value a template can insert, written `{{name}}` (white space inside the braces allowed:
/// `{{ code }}`).
public enum TemplatePlaceholder: String, Sendable, Hashable, CaseIterable {
    /// The one-time code.
    case code
    /// The transaction amount with its currency, formatted by the caller (`EUR 120.00`).
    case amount
    /// The transaction's payee, as the tenant names it.
    case payee
    /// Minutes until the code expires.
    case minutes
    /// The tenant's display name.
    case tenant
}

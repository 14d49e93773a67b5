/// The message templates of a deployment: per kind, per locale, for one tenant or for all,
/// with a locale fallback chain and built-in English defaults.
///
/// Resolving `(kind, locale, tenant)` walks the locale's fallback chain (``fallbackChain(for:)``:
/// `fr-CA` → `fr` → `en`) and, at each locale, looks for a template registered for the tenant,
/// then for the whole deployment, then (at `en` only) a built-in default. The locale comes
/// first: a French reader gets the deployment's French text before the tenant's English one.
///
/// A value type, built at start-up and shared read-only:
///
/// ```swift
/// var templates = MessageTemplates()
/// try templates.register(frenchOTP, kind: .otp, locale: "fr")
/// try templates.register(acmeOTP, kind: .otp, locale: "en", tenant: "acme")
/// let message = try templates.render(.otp, locale: "fr-CA", tenant: "acme",
///                                    values: TemplateValues(code: "123456", minutes: 5, tenant: "ACME"))
/// ```
public struct MessageTemplates: Sendable {
    /// A template found by ``resolve(_:locale:tenant:)``, with the locale and source it was
    /// found at.
    public struct Resolution: Sendable, Hashable {
        /// The template.
        public let template: MessageTemplate
        /// The locale it was registered for, lower-cased.
        public let locale: String
        /// Whether it is the tenant's, the deployment's or built in.
        public let source: RenderedMessage.Source
    }

    /// The last locale of every chain, and the built-in defaults' language.
    public static let finalFallbackLocale = "en"

    private struct Key: Hashable {
        var kind: MessageKind
        var locale: String
        var tenant: String?
    }

    private var templates: [Key: MessageTemplate] = [:]
    private let usesBuiltInDefaults: Bool

    /// An empty set of templates.
    ///
    /// - Parameter builtInDefaults: Whether ``builtInDefaults`` answer for `en` when nothing
    ///   registered does; true by default.
    public init(builtInDefaults: Bool = true) {
        usesBuiltInDefaults = builtInDefaults
    }

    // MARK: - Registration

    /// Registers a template, replacing any for the same kind, locale and tenant.
    ///
    /// - Parameters:
    ///   - template: The texts.
    ///   - kind: The kind they are for.
    ///   - locale: A BCP 47 tag (`fr`, `fr-CA`; `fr_CA` is read the same), matched without
    ///     regard to case.
    ///   - tenant: The tenant id, or nil for every tenant.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/templateInvalid``
    ///   when `locale` is not a language tag.
    public mutating func register(_ template: MessageTemplate, kind: MessageKind, locale: String, tenant: String? = nil) throws {
        guard let normalized = Self.normalize(locale) else {
            throw DeliveryError(.templateInvalid, detail: "locale is not a language tag")
        }
        templates[Key(kind: kind, locale: normalized, tenant: tenant)] = template
    }

    // MARK: - Resolution

    /// The template for a kind, locale and tenant, by the fallback rules in the type's
    /// discussion; nil when there is none.
    ///
    /// - Parameters:
    ///   - kind: The kind.
    ///   - locale: The reader's locale; an unusable tag counts as `en`.
    ///   - tenant: The tenant id, or nil for deployment templates only.
    public func resolve(_ kind: MessageKind, locale: String, tenant: String?) -> Resolution? {
        for candidate in Self.fallbackChain(for: locale) {
            if let tenant, let template = templates[Key(kind: kind, locale: candidate, tenant: tenant)] {
                return Resolution(template: template, locale: candidate, source: .tenant)
            }
            if let template = templates[Key(kind: kind, locale: candidate, tenant: nil)] {
                return Resolution(template: template, locale: candidate, source: .deployment)
            }
            if usesBuiltInDefaults, candidate == Self.finalFallbackLocale, let template = Self.builtInDefaults[kind] {
                return Resolution(template: template, locale: candidate, source: .builtIn)
            }
        }
        return nil
    }

    /// Resolves a template and fills in the values.
    ///
    /// - Parameters:
    ///   - kind: The kind.
    ///   - locale: The reader's locale.
    ///   - tenant: The tenant id, or nil.
    ///   - values: The placeholder values.
    /// - Returns: The texts, ready for ``RenderedMessage/email(from:to:)`` or
    ///   ``RenderedMessage/sms(to:sender:)``.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/templateNotFound``
    ///   when nothing resolves, ``DeliveryError/Code-swift.struct/templateValueMissing`` when a
    ///   used placeholder has no value, ``DeliveryError/Code-swift.struct/headerInjection``
    ///   when a value put into the subject has a line break.
    public func render(_ kind: MessageKind, locale: String, tenant: String?, values: TemplateValues) throws -> RenderedMessage {
        guard let resolution = resolve(kind, locale: locale, tenant: tenant) else {
            throw DeliveryError(.templateNotFound, detail: "no template for kind \(kind.rawValue)")
        }
        let texts = try resolution.template.render(values)
        return RenderedMessage(
            kind: kind, locale: resolution.locale, source: resolution.source,
            emailSubject: texts.subject, emailText: texts.text, emailHTML: texts.html, smsText: texts.sms)
    }

    // MARK: - Locales

    /// The locales tried for `locale`, most specific first, ending with `en`: `fr-CA` gives
    /// `fr-ca`, `fr`, `en`; `zh-Hant-TW` gives `zh-hant-tw`, `zh-hant`, `zh`, `en`. POSIX
    /// forms are read too (`fr_CA.UTF-8` is `fr-ca`); an unusable tag gives `en` alone.
    ///
    /// - Parameter locale: A BCP 47 tag or POSIX locale name.
    public static func fallbackChain(for locale: String) -> [String] {
        var chain: [String] = []
        if let normalized = normalize(locale) {
            var subtags = normalized.split(separator: "-").map(String.init)
            while !subtags.isEmpty {
                chain.append(subtags.joined(separator: "-"))
                subtags.removeLast()
            }
        }
        if chain.last != finalFallbackLocale { chain.append(finalFallbackLocale) }
        return chain
    }

    /// The tag lower-cased with `-` separators, without a POSIX encoding (`.UTF-8`) or modifier
    /// (`@euro`); nil unless it is 1–8 letter primary subtag followed by 1–8 alphanumeric
    /// subtags, at most 35 characters (the longest practical BCP 47 tag).
    static func normalize(_ locale: String) -> String? {
        var tag = Substring(locale.trimmingWhiteSpace())
        if let cut = tag.firstIndex(where: { $0 == "." || $0 == "@" }) { tag = tag[..<cut] }
        let lowered = tag.replacing("_", with: "-").lowercased()
        guard !lowered.isEmpty, lowered.count <= 35 else { return nil }
        let subtags = lowered.split(separator: "-", omittingEmptySubsequences: false)
        guard let primary = subtags.first, (1...8).contains(primary.count),
            primary.allSatisfy({ $0.isASCII && $0.isLetter }),
            subtags.dropFirst().allSatisfy({ (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        else { return nil }
        return lowered
    }
}

import Delivery
import HTTPServer
import JSON
import Schema

/// A tenant's e-mail and SMS templates per kind and locale, through the oob service's admin
/// API, and a preview of a template as it would be delivered.
///
/// | console route | role | service route |
/// |---|---|---|
/// | `GET`/`PUT`/`DELETE /console/api/tenants/{t}/templates/{kind}/{locale}` | viewer / administrator / administrator | oob `/v1/admin/tenants/{t}/templates/{kind}/{locale}` |
/// | `POST /console/api/tenants/{t}/templates/{kind}/{locale}/preview` | viewer | none: rendered here |
///
/// The preview renders the posted texts (not what is stored: the editor's text, before it is
/// saved) with the delivery library the oob service renders with (`Delivery.MessageTemplates`,
/// the same parsing, placeholders, HTML escaping and subject check) and sample values, so a
/// template the preview refuses is one the oob service refuses too (400 `invalid_template`).
/// It changes nothing and calls no service, so viewers may use it.
struct TemplateConsoleRoutes: Sendable {
    let upstream: any ConsoleUpstream
    let guards: ConsoleGuards

    static let kinds: Set<String> = ["otp", "transaction_otp"]

    /// The values a preview fills in: the sample an operator reads, never a user's.
    static func sampleValues(tenant: String) -> TemplateValues {
        TemplateValues(code: "123456", minutes: 5, tenant: tenant, amount: "1,250.00 EUR", payee: "Example Payee Ltd")
    }

    func register(on router: inout GuardedRouter) {
        let template = "/console/api/tenants/{tenant}/templates/{kind}/{locale}"
        router.get(template, guards.at(.viewer)) { _, ctx in
            try await upstream.send(.oob, "GET", try Self.path(ctx), credential: .admin, body: nil).asResponse
        }
        router.put(template, guards.at(.administrator)) { request, ctx in
            let path = try Self.path(ctx)
            let body = try request.decode(TemplateDocument.self)
            let answer = try await upstream.send(.oob, "PUT", path, credential: .admin, body: try JSONValueEncoder().encodeToBytes(body))
            TenantConsoleRoutes.audit(ctx, "template changed", answer)
            return answer.asResponse
        }
        router.delete(template, guards.at(.administrator)) { _, ctx in
            let answer = try await upstream.send(.oob, "DELETE", try Self.path(ctx), credential: .admin, body: nil)
            TenantConsoleRoutes.audit(ctx, "template removed", answer)
            return answer.asResponse
        }
        router.post(template + "/preview", guards.at(.viewer)) { request, ctx in
            _ = try Self.path(ctx)
            let preview = try Self.preview(
                try request.decode(TemplateDocument.self), kind: ctx.parameter("kind"), locale: ctx.parameter("locale"), tenant: ctx.parameter("tenant"))
            return try .json(preview, headers: [("Cache-Control", "no-store")])
        }
    }

    /// The oob service's path for the route's tenant, kind and locale.
    ///
    /// - Throws: 404 `not_found` for a kind that is not one, 400 `invalid_field` `locale` for
    ///   a locale that is not `en`, `fr-CA` and the like (ASCII letters and dashes only: it
    ///   becomes part of another URL).
    static func path(_ ctx: RequestContext) throws -> String {
        let kind = ctx.parameter("kind")
        let locale = ctx.parameter("locale")
        guard kinds.contains(kind) else { throw HTTPError(.notFound, detail: "Templates are otp or transaction_otp.") }
        guard (2...16).contains(locale.utf8.count),
            locale.utf8.allSatisfy({ (65...90).contains($0) || (97...122).contains($0) || $0 == UInt8(ascii: "-") })
        else { throw HTTPError.invalid("locale", "A locale like en or fr-CA.") }
        return "/v1/admin/tenants/\(ctx.parameter("tenant"))/templates/\(kind)/\(locale)"
    }

    /// The template rendered with ``sampleValues(tenant:)``.
    ///
    /// - Throws: 400 `invalid_field` for an empty or over-long text (as the oob service),
    ///   400 `invalid_template` naming the delivery library's reason (an unclosed `{{`, an
    ///   unknown placeholder, a line break in the subject).
    static func preview(_ document: TemplateDocument, kind: String, locale: String, tenant: String) throws -> TemplatePreview {
        for (field, text) in [("emailSubject", document.emailSubject), ("emailText", document.emailText), ("smsText", document.smsText)]
        where text.isEmpty || text.count > 10_000 {
            throw HTTPError.invalid(field, "Templates are 1-10000 characters.")
        }
        do {
            var templates = MessageTemplates(builtInDefaults: false)
            try templates.register(
                try MessageTemplate(emailSubject: document.emailSubject, emailText: document.emailText, emailHTML: document.emailHTML, smsText: document.smsText),
                kind: MessageKind(rawValue: kind), locale: locale, tenant: tenant)
            let rendered = try templates.render(MessageKind(rawValue: kind), locale: locale, tenant: tenant, values: sampleValues(tenant: tenant))
            return TemplatePreview(
                locale: rendered.locale, emailSubject: rendered.emailSubject, emailText: rendered.emailText, emailHTML: rendered.emailHTML,
                smsText: rendered.smsText, smsCharacters: rendered.smsText.count)
        } catch let error as DeliveryError {
            throw HTTPError(.invalidTemplate, detail: "The template was refused (\(error.code.rawValue)).")
        }
    }
}

/// A template as the oob service stores it.
struct TemplateDocument: Codable, Sendable {
    let emailSubject: String
    let emailText: String
    let emailHTML: String?
    let smsText: String
}

/// A template rendered with sample values.
struct TemplatePreview: Codable, Sendable, Equatable {
    let locale: String
    let emailSubject: String
    let emailText: String
    let emailHTML: String?
    let smsText: String
    /// The SMS text's length in characters (what the operator weighs against one SMS).
    let smsCharacters: Int
}

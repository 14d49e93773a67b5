import Delivery
import FoundationEssentials
import HTTPServer
import JSON
import Postgres
import Schema
import ServiceKit

/// Message templates per tenant, kind (`otp`, `transaction_otp`, `push`) and locale, set by the
/// admin API and used before the built-in English ones (locale fallback `fr-CA` → `fr` → `en`).
///
/// - `PUT /v1/admin/tenants/{tenant}/templates/{kind}/{locale}` `{"emailSubject","emailText","emailHTML"?,"smsText"}`,
///   or for `push` (approval push text, ``PushTemplate``) `{"text"}`
/// - `GET` the same, `DELETE` to fall back to the defaults.
struct TemplateStore: Sendable {
    let context: ServiceContext

    static let migration = Migration(
        101, "message_templates",
        """
        CREATE TABLE message_templates (
            tenant_id text NOT NULL,
            kind text NOT NULL,
            locale text NOT NULL,
            document text NOT NULL,
            updated_at timestamptz NOT NULL,
            PRIMARY KEY (tenant_id, kind, locale)
        );
        """)

    struct Document: Codable, Sendable {
        var emailSubject: String
        var emailText: String
        var emailHTML: String?
        var smsText: String
    }

    func register(on router: inout GuardedRouter) {
        router.put("/v1/admin/tenants/{tenant}/templates/{kind}/{locale}", context.admin) { request, ctx in
            let (tenant, kind, locale) = try target(ctx)
            if kind == "push" {
                // Approval push text (``PushTemplate``): checked, then stored like the others.
                let body = try request.decode(PushTemplate.Document.self)
                _ = try PushTemplate(body.text)
                try await store(JSONValueEncoder().encodeToBytes(body), tenant: tenant, kind: kind, locale: locale)
                return try .json(body)
            }
            let body = try request.decode(Document.self)
            guard [body.emailSubject, body.emailText, body.smsText].allSatisfy({ !$0.isEmpty && $0.count <= 10_000 }) else {
                throw HTTPError.invalid("emailText", "Templates are 1-10000 characters.")
            }
            do {
                var probe = MessageTemplates(builtInDefaults: false)
                try probe.register(
                    try MessageTemplate(emailSubject: body.emailSubject, emailText: body.emailText, emailHTML: body.emailHTML, smsText: body.smsText),
                    kind: MessageKind(rawValue: kind), locale: locale, tenant: tenant)
            } catch let error as DeliveryError {
                throw HTTPError(.invalidTemplate, detail: "The template was refused (\(error.code.rawValue)).")
            }
            try await store(JSONValueEncoder().encodeToBytes(body), tenant: tenant, kind: kind, locale: locale)
            return try .json(body)
        }
        router.get("/v1/admin/tenants/{tenant}/templates/{kind}/{locale}", context.admin) { request, ctx in
            let (tenant, kind, locale) = try target(ctx)
            guard let text = try await context.pool.withConnection({ conn in
                try await conn.query("SELECT document FROM message_templates WHERE tenant_id = \(tenant) AND kind = \(kind) AND locale = \(locale)")
            }).first?.string("document") else { throw HTTPError(.notFound, detail: "No template of this tenant for this kind and locale.") }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(text.utf8))
        }
        router.delete("/v1/admin/tenants/{tenant}/templates/{kind}/{locale}", context.admin) { request, ctx in
            let (tenant, kind, locale) = try target(ctx)
            try await context.pool.withConnection { conn in
                try await conn.query("DELETE FROM message_templates WHERE tenant_id = \(tenant) AND kind = \(kind) AND locale = \(locale)")
            }
            return HTTPResponse(status: 204)
        }
    }

    private func store(_ document: [UInt8], tenant: String, kind: String, locale: String) async throws {
        let document = String(decoding: document, as: UTF8.self)
        try await context.pool.withConnection { conn in
            try await conn.query(
                """
                INSERT INTO message_templates (tenant_id, kind, locale, document, updated_at) VALUES (\(tenant), \(kind), \(locale), \(document), \(Date()))
                ON CONFLICT (tenant_id, kind, locale) DO UPDATE SET document = EXCLUDED.document, updated_at = EXCLUDED.updated_at
                """)
        }
    }

    private func target(_ ctx: RequestContext) throws -> (String, String, String) {
        let kind = ctx.parameter("kind")
        let locale = ctx.parameter("locale")
        guard ["otp", "transaction_otp", "push"].contains(kind) else { throw HTTPError(.notFound, detail: "Templates are otp, transaction_otp or push.") }
        guard (2...16).contains(locale.utf8.count), locale.allSatisfy({ $0.isLetter || $0 == "-" }) else { throw HTTPError.invalid("locale", "A locale like en or fr-CA.") }
        return (ctx.parameter("tenant"), kind, locale)
    }

    /// The built-in templates plus the tenant's.
    static func templates(for tenant: String, on conn: PostgresConnection) async throws -> MessageTemplates {
        var templates = MessageTemplates()
        for row in try await conn.query("SELECT kind, locale, document FROM message_templates WHERE tenant_id = \(tenant) AND kind <> 'push'") {
            guard let kind = row.string("kind"), let locale = row.string("locale"), let text = row.string("document") else { continue }
            // Stored after the same checks at PUT: a document that no longer reads or renders is
            // an error, never a silent fall back to the built-in template.
            let d = try JSONValueDecoder().decode(Document.self, from: Array(text.utf8))
            let template = try MessageTemplate(emailSubject: d.emailSubject, emailText: d.emailText, emailHTML: d.emailHTML, smsText: d.smsText)
            try templates.register(template, kind: MessageKind(rawValue: kind), locale: locale, tenant: tenant)
        }
        return templates
    }
}

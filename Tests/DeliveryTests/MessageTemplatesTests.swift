import Testing

@testable import Delivery

@Suite struct MessageTemplatesTests {
    static let values = TemplateValues(code: "482913", minutes: 5, tenant: "ACME Bank", amount: "EUR 120.00", payee: "Rent & Co <Ltd>")

    static func template(_ tag: String) throws -> MessageTemplate {
        try MessageTemplate(
            emailSubject: "[\(tag)] {{code}}", emailText: "\(tag) text {{code}}", emailHTML: "<p>\(tag) {{code}}</p>",
            smsText: "\(tag) sms {{code}}")
    }

    // MARK: - Locale chain

    @Test(arguments: [
        ("fr-CA", ["fr-ca", "fr", "en"]),
        ("fr_CA.UTF-8", ["fr-ca", "fr", "en"]),
        ("de_DE@euro", ["de-de", "de", "en"]),
        ("zh-Hant-TW", ["zh-hant-tw", "zh-hant", "zh", "en"]),
        ("EN-gb", ["en-gb", "en"]),
        ("en", ["en"]),
        ("", ["en"]),
        ("not a tag!", ["en"]),
        ("x-verylongsubtag", ["en"]),
    ])
    func buildsTheFallbackChain(locale: String, chain: [String]) {
        #expect(MessageTemplates.fallbackChain(for: locale) == chain)
    }

    // MARK: - Resolution

    @Test func prefersTheMostSpecificLocaleThenTheTenant() throws {
        var templates = MessageTemplates()
        try templates.register(Self.template("deployment-fr"), kind: .otp, locale: "fr")
        try templates.register(Self.template("acme-en"), kind: .otp, locale: "en", tenant: "acme")
        try templates.register(Self.template("acme-fr-ca"), kind: .otp, locale: "fr_CA", tenant: "acme")

        let specific = try #require(templates.resolve(.otp, locale: "fr-CA", tenant: "acme"))
        #expect(specific.source == .tenant && specific.locale == "fr-ca")
        #expect(specific.template == (try Self.template("acme-fr-ca")))

        // Another tenant in fr-CA: no fr-CA template of its own, the deployment's fr.
        let other = try #require(templates.resolve(.otp, locale: "fr-CA", tenant: "globex"))
        #expect(other.source == .deployment && other.locale == "fr")

        // acme in fr-BE: the deployment's French before acme's English.
        let belgian = try #require(templates.resolve(.otp, locale: "fr-BE", tenant: "acme"))
        #expect(belgian.source == .deployment && belgian.locale == "fr")

        // acme in German: falls to en, where acme's own template wins over the built-in.
        let german = try #require(templates.resolve(.otp, locale: "de", tenant: "acme"))
        #expect(german.source == .tenant && german.locale == "en")

        // Another tenant in German: the built-in English default.
        let builtIn = try #require(templates.resolve(.otp, locale: "de", tenant: "globex"))
        #expect(builtIn.source == .builtIn && builtIn.locale == "en")
        #expect(builtIn.template == MessageTemplates.builtInDefaults[.otp])
    }

    @Test func aDeploymentTemplateReplacesTheBuiltInDefault() throws {
        var templates = MessageTemplates()
        try templates.register(Self.template("custom-en"), kind: .otp, locale: "EN")
        let rendered = try templates.render(.otp, locale: "en-US", tenant: nil, values: Self.values)
        #expect(rendered.source == .deployment && rendered.emailSubject == "[custom-en] 482913")
    }

    @Test func withoutDefaultsAnUnknownKindIsNotFound() throws {
        let templates = MessageTemplates(builtInDefaults: false)
        let error = try #require(throws: DeliveryError.self) {
            try templates.render(.otp, locale: "en", tenant: nil, values: Self.values)
        }
        #expect(error.code == .templateNotFound)
        let unknown = try #require(throws: DeliveryError.self) {
            try MessageTemplates().render("password_reset", locale: "en", tenant: nil, values: Self.values)
        }
        #expect(unknown.code == .templateNotFound)
    }

    @Test func refusesAnInvalidLocaleAtRegistration() throws {
        var templates = MessageTemplates()
        let error = try #require(throws: DeliveryError.self) {
            try templates.register(Self.template("x"), kind: .otp, locale: "fr CA")
        }
        #expect(error.code == .templateInvalid)
    }

    // MARK: - Built-in defaults

    @Test func rendersTheBuiltInOTPTemplate() throws {
        let rendered = try MessageTemplates().render(.otp, locale: "en", tenant: "acme", values: Self.values)
        #expect(rendered.source == .builtIn)
        #expect(rendered.emailSubject == "Your ACME Bank verification code")
        #expect(rendered.emailText.hasPrefix("Your ACME Bank verification code is 482913.\n\nIt expires in 5 minutes."))
        #expect(rendered.smsText == "482913 is your ACME Bank verification code. It expires in 5 minutes. Never share it.")
        #expect(try #require(rendered.emailHTML).contains("<strong>482913</strong>"))
    }

    @Test func theTransactionTemplateStatesAmountAndPayee() throws {
        let rendered = try MessageTemplates().render(.transactionOTP, locale: "en", tenant: nil, values: Self.values)
        #expect(rendered.emailSubject == "Confirm your payment of EUR 120.00 to Rent & Co <Ltd>")
        #expect(rendered.emailText.contains("payment of EUR 120.00 to Rent & Co <Ltd> is 482913."))
        #expect(rendered.smsText.contains("EUR 120.00") && rendered.smsText.contains("Rent & Co <Ltd>"))
        // HTML gets the escaped payee, never the raw markup.
        let html = try #require(rendered.emailHTML)
        #expect(html.contains("<strong>Rent &amp; Co &lt;Ltd&gt;</strong>"))
        #expect(!html.contains("<Ltd>"))
    }

    @Test(arguments: [MessageKind.otp, .transactionOTP])
    func builtInDefaultsUseOnlyKnownPlaceholders(kind: MessageKind) throws {
        let template = try #require(MessageTemplates.builtInDefaults[kind])
        #expect(template.placeholders.isSuperset(of: [.code, .minutes, .tenant]))
        if kind == .transactionOTP { #expect(template.placeholders.isSuperset(of: [.amount, .payee])) }
    }

    // MARK: - Placeholders and escaping

    @Test func escapesEveryHTMLSpecialCharacter() {
        #expect(TemplateText.escapingHTML("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;")
    }

    @Test func insertsValuesInOnePassWithoutReexpanding() throws {
        let template = try MessageTemplate(emailSubject: "{{ payee }}", emailText: "{{payee}}/{{code}}", smsText: "{{code}}")
        let values = TemplateValues(code: "1", payee: "{{code}}")
        let rendered = try template.render(values)
        #expect(rendered.subject == "{{code}}" && rendered.text == "{{code}}/1" && rendered.html == nil)
    }

    @Test(arguments: ["{{code", "Hello {{name}}", "{{}}", "{{ code }} and {{CODE}}"])
    func refusesInvalidTemplates(text: String) throws {
        let error = try #require(throws: DeliveryError.self) {
            try MessageTemplate(emailSubject: "s", emailText: text, smsText: "x")
        }
        #expect(error.code == .templateInvalid)
    }

    @Test func keepsLoneBracesAsText() throws {
        let template = try MessageTemplate(emailSubject: "{ } }} {code}", emailText: "t", smsText: "x")
        #expect(try template.render(Self.values).subject == "{ } }} {code}")
    }

    @Test func reportsAMissingValue() throws {
        let error = try #require(throws: DeliveryError.self) {
            try MessageTemplates().render(.transactionOTP, locale: "en", tenant: nil, values: TemplateValues(code: "1", minutes: 5, tenant: "T"))
        }
        #expect(error.code == .templateValueMissing)
        #expect(!error.description.contains("1"))
    }

    @Test func refusesALineBreakInASubjectValue() throws {
        var values = Self.values
        values.payee = "Evil\r\nBcc: x@example.net"
        let error = try #require(throws: DeliveryError.self) {
            try MessageTemplates().render(.transactionOTP, locale: "en", tenant: nil, values: values)
        }
        #expect(error.code == .headerInjection)
    }

    @Test func rendersIntoMessages() throws {
        let rendered = try MessageTemplates().render(.otp, locale: "en", tenant: nil, values: Self.values)
        let email = try rendered.email(from: EmailAddress("no-reply@signet.example"), to: EmailAddress("a@example.com"))
        #expect(email.subject == rendered.emailSubject && email.htmlBody == rendered.emailHTML)
        let sms = try rendered.sms(to: "+15551234567", sender: "ACME")
        #expect(sms.text == rendered.smsText)
        #expect(!rendered.description.contains("482913") && !Self.values.description.contains("482913"))
    }
}

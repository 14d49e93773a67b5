extension MessageTemplates {
    /// The built-in English templates, used at `en` when neither the tenant nor the deployment
    /// registered one: ``MessageKind/otp`` and ``MessageKind/transactionOTP``.
    ///
    /// `otp` uses `{{code}}`, `{{minutes}}` and `{{tenant}}`; `transaction_otp` also states
    /// `{{amount}}` and `{{payee}}`, so that the reader confirms what they see (PSD2's dynamic
    /// linking asks the code to be shown with the amount and the payee).
    public static let builtInDefaults: [MessageKind: MessageTemplate] = [
        .otp: otpTemplate,
        .transactionOTP: transactionOTPTemplate,
    ]

    // The literals below are parsed when first used; MessageTemplatesTests renders both, so
    // a typo fails the tests rather than a send. `try!` cannot fail on them otherwise.

    private static let otpTemplate = try! MessageTemplate(
        emailSubject: "Your {{tenant}} verification code",
        emailText: """
            Your {{tenant}} verification code is {{code}}.

            It expires in {{minutes}} minutes. If you did not ask for it, ignore this message.
            Never share this code with anyone, including someone who says they work for {{tenant}}.
            """,
        emailHTML: """
            <!DOCTYPE html>
            <html><body>
            <p>Your {{tenant}} verification code is <strong>{{code}}</strong>.</p>
            <p>It expires in {{minutes}} minutes. If you did not ask for it, ignore this message.
            Never share this code with anyone, including someone who says they work for {{tenant}}.</p>
            </body></html>
            """,
        smsText: "{{code}} is your {{tenant}} verification code. It expires in {{minutes}} minutes. Never share it."
    )

    private static let transactionOTPTemplate = try! MessageTemplate(
        emailSubject: "Confirm your payment of {{amount}} to {{payee}}",
        emailText: """
            Your {{tenant}} code to confirm the payment of {{amount}} to {{payee}} is {{code}}.

            It expires in {{minutes}} minutes. If you did not start this payment, do not use the
            code and contact {{tenant}}. Never share this code with anyone.
            """,
        emailHTML: """
            <!DOCTYPE html>
            <html><body>
            <p>Your {{tenant}} code to confirm the payment of <strong>{{amount}}</strong> to
            <strong>{{payee}}</strong> is <strong>{{code}}</strong>.</p>
            <p>It expires in {{minutes}} minutes. If you did not start this payment, do not use the
            code and contact {{tenant}}. Never share this code with anyone.</p>
            </body></html>
            """,
        smsText: "{{code}} confirms your payment of {{amount}} to {{payee}} at {{tenant}}. Expires in {{minutes}} min. Never share it."
    )
}

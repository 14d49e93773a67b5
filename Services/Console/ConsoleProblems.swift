import HTTPServer

/// The console's problem codes (stable: the page and the tests read them).
extension ProblemCode {
    /// No live console session: sign in (again).
    public static let consoleSessionRequired = ProblemCode("console_session_required", status: 401, title: "Console session required")
    /// A state-changing call without the session's CSRF token in `X-CSRF-Token`, or with another.
    public static let consoleCSRFInvalid = ProblemCode("console_csrf_invalid", status: 403, title: "CSRF token missing or invalid")
    /// A state-changing call whose `Origin` is not the console's.
    public static let consoleOriginRefused = ProblemCode("console_origin_refused", status: 403, title: "Origin refused")
    /// The operator's role does not allow this call.
    public static let consoleRoleInsufficient = ProblemCode("console_role_insufficient", status: 403, title: "Role insufficient")
    /// The passkey signed in a user of the operators' tenant who is not an operator.
    public static let consoleNotAnOperator = ProblemCode("console_not_an_operator", status: 403, title: "Not an operator")
    /// A sign-in whose authenticator did not verify the user (no PIN or biometric: the session
    /// token's `amr` has no `mfa`).
    public static let consoleUserVerificationRequired = ProblemCode(
        "console_user_verification_required", status: 403, title: "User verification required")
    /// A sign-in with a passkey the registration service has reported suspended or deleted (a
    /// session opened with one ends when the report arrives).
    public static let consoleCredentialInactive = ProblemCode("console_credential_inactive", status: 403, title: "Passkey suspended or deleted")
    /// A change to the operators' tenant's FIDO policy that would not require user
    /// verification: the console keeps `userVerification: required` there.
    public static let consoleOperatorsPolicyProtected = ProblemCode("console_operators_policy_protected", status: 409, title: "Operators' policy protected")
    /// A passkey enrolment refused: wrong or absent enrolment code, not an operator, a passkey
    /// already enrolled, or a ceremony the console did not start.
    public static let consoleEnrolmentRefused = ProblemCode("console_enrolment_refused", status: 403, title: "Enrolment refused")

    /// A template the delivery library refuses, in a preview: the oob service's own code for
    /// the same refusal, so that the page reads one code whether it previews or saves.
    public static let invalidTemplate = ProblemCode("invalid_template", status: 400, title: "Invalid template")

    /// Every console code, for the problem code tests.
    public static let consoleCodes: [ProblemCode] = [
        .consoleSessionRequired, .consoleCSRFInvalid, .consoleOriginRefused, .consoleRoleInsufficient, .consoleNotAnOperator, .consoleEnrolmentRefused,
        .consoleUserVerificationRequired, .consoleCredentialInactive, .consoleOperatorsPolicyProtected,
    ]
}

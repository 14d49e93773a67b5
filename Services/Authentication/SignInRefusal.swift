import HTTPServer

extension HTTPError {
    /// A sign-in step refused: 400 problem+json whose code names the failed check (counted by
    /// anti-hammering when it comes from a method's verification).
    static func signInRefused(_ code: String, _ detail: String) -> HTTPError {
        HTTPError(ProblemCode(code, status: 400, title: "Sign-in refused"), detail: detail)
    }
}

import HTTPServer
import JSON
import Tokens

extension RegistrationTokenKind {
    /// The kind of a verified registration-only token, from its claims: `sign_up` true, and at
    /// most one of `signin` (a string: ``enforcedRegistration``) and `qr` (a string:
    /// ``qrRegistration``); neither is ``signUp``.
    ///
    /// `nil` for anything else (a session, `sign_up` not true, a purpose claim of the wrong
    /// type, or both purpose claims), which no route takes. Every place that takes a
    /// registration-only token decides by this, never by testing one claim itself.
    public init?(claims: JWTClaims) {
        guard claims[claim: "sign_up"] == .bool(true) else { return nil }
        switch (claims[claim: "signin"], claims[claim: "qr"]) {
        case (nil, nil): self = .signUp
        case (.string?, nil): self = .enforcedRegistration
        case (nil, .string?): self = .qrRegistration
        default: return nil
        }
    }
}

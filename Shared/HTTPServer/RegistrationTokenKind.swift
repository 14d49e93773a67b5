/// The kinds of registration-only token (`sign_up` claim, the registration audience) a
/// ``Principal/signingUp(tenant:username:kind:)`` holds. Each route that takes such a token names
/// the kinds it takes (ServiceKit's `relyingPartyOrRegistrant(sessions:accepting:)`), so that a
/// token issued for one purpose reaches only the routes of that purpose.
///
/// | kind | issued by | claims besides `sign_up` | taken by |
/// |---|---|---|---|
/// | `signUp` | `POST …/signups` (RP) | none | every route that registers, lists or suggests; `…/signups/finish` |
/// | `enforcedRegistration` | a sign-in whose rules ENFORCE_REGISTRATION | `signin` | the same registration routes; `…/signins/{id}/session` |
/// | `qrRegistration` | the oob service, for the phone of a `register`/`bless` QR session | `qr` | WebAuthn registration options and finish only |
public enum RegistrationTokenKind: String, Sendable, Hashable, CaseIterable {
    /// A sign-up's token: registers the new user's first methods, then `signups/finish`.
    case signUp
    /// A sign-in's registration-only token (`signin` claim): registers what the rules
    /// enforce, then `signins/{id}/session`.
    case enforcedRegistration
    /// A QR registration's token (`qr` claim): the phone registers a passkey, nothing else,
    /// and it never becomes a session.
    case qrRegistration
}

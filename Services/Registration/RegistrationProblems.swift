import FIDO
import HTTPServer
import Schema

/// The problem codes the registration service answers with, beyond the shared ones
/// (`HTTPServer`'s and `ServiceKit`'s). Every code here is listed in
/// `schemas/openapi/registration.yaml` (checked by `ProblemCodeTests` in SchemaTests), and no
/// other file of the service spells a problem code.
extension ProblemCode {
    // MARK: - WebAuthn registration

    /// The credential `id`/`rawId` the client reports is not the attested credential id.
    static let credentialIDMismatch = ProblemCode("credential_id_mismatch", status: 400, title: "Registration refused")
    /// The credential id is already registered in the tenant.
    static let credentialExists = ProblemCode("credential_exists", status: 409, title: "Credential already registered")

    /// `FIDO.RegistrationVerifier` refused the response (WebAuthn L3 §7.1): the code is the
    /// `WebAuthnError`'s, each listed in the document's RegistrationRefused enum.
    static func registrationRefused(_ error: WebAuthnError) -> ProblemCode {
        ProblemCode(error.code.rawValue, status: 400, title: "Registration refused")
    }

    /// The tenant's FIDO policy refused the credential: the code is the refusal's (`policy_*`).
    static func refusedByPolicy(_ refusal: PolicyRefusal) -> ProblemCode {
        ProblemCode(refusal.code.rawValue, status: 400, title: "Registration refused by policy")
    }

    // MARK: - FIDO UAF registration

    /// `FIDO.UAFRegistrationVerifier` refused the response (UAF Protocol §3.4.6.5): the code is
    /// the `UAFError`'s (`uaf_*`, `policy_uaf_*`), each listed in the document's UAFRefused enum.
    static func uafRegistrationRefused(_ error: UAFError) -> ProblemCode {
        ProblemCode(error.code.rawValue, status: 400, title: "UAF registration refused")
    }
    /// The (AAID, KeyID) is already registered in the tenant.
    static let uafKeyExists = ProblemCode("uaf_key_exists", status: 409, title: "UAF key already registered")

    // MARK: - Registration decision rules

    /// The tenant's registration rules deny registering methods now.
    static let registrationDenied = ProblemCode("registration_denied", status: 403, title: "Registration denied")
    /// Options with `mediation: "conditional"` while the tenant's FIDO policy does not allow
    /// automatic passkey creation (`autoCreatePasskey`).
    static let conditionalCreateNotAllowed = ProblemCode("conditional_create_not_allowed", status: 403, title: "Automatic passkey creation not allowed")
    /// The tenant's registration rules offer other methods now.
    static let methodNotOffered = ProblemCode("method_not_offered", status: 403, title: "Method not offered")

    // MARK: - Other methods

    /// The method is already confirmed.
    static let methodAlreadyConfirmed = ProblemCode("method_already_confirmed", status: 409, title: "Already confirmed")
    /// The confirmation code is wrong.
    static let confirmationCodeMismatch = ProblemCode("code_mismatch", status: 400, title: "Confirmation refused")
    /// The delivered confirmation code expired.
    static let confirmationCodeExpired = ProblemCode("code_expired", status: 400, title: "Confirmation refused")
    /// Too many wrong confirmation codes: the setup must start again.
    static let tooManyConfirmAttempts = ProblemCode("too_many_attempts", status: 400, title: "Confirmation refused")

    // MARK: - Sign-up accounts and profiles

    /// The user already has credentials or methods: a sign-up cannot open the account.
    static let usernameTaken = ProblemCode("username_taken", status: 409, title: "Username taken")
    /// An erasure of the user's data is in progress: nothing is added for the user until it
    /// has completed (``ErasureStore/requireNoErasureInProgress(tenant:username:on:)``).
    static let userErasurePending = ProblemCode("user_erasure_pending", status: 409, title: "Erasure in progress")
    /// A sign-up profile's full name is empty, longer than 200 characters or has control characters.
    static let invalidFullName = ProblemCode("invalid_full_name", status: 400, title: "Invalid profile")
    /// A sign-up profile's e-mail address is not one.
    static let invalidEmail = ProblemCode("invalid_email", status: 400, title: "Invalid profile")
    /// A sign-up profile's phone number is not E.164.
    static let invalidPhone = ProblemCode("invalid_phone", status: 400, title: "Invalid profile")
    /// The problem for a profile member that `SignUpProfile.refusal` names.
    static func profileRefused(_ member: SignUpProfile.Member) -> ProblemCode {
        switch member {
        case .fullName: invalidFullName
        case .email: invalidEmail
        case .phone: invalidPhone
        }
    }
    /// Setting up email_otp or sms_otp methods sent too many codes for the user or to the
    /// destination (``MethodSetupBudget``); `Retry-After` says when to try again.
    static let codeSendLimited = ProblemCode("code_send_limited", status: 429, title: "Too many codes")
    /// The account was opened by a username-less sign-up: it registers passkeys only.
    static let passkeyOnlyAccount = ProblemCode("passkey_only_account", status: 409, title: "Passkey-only account")
    /// A passkey-only account's new passkey is not discoverable (the client reported
    /// `credProps.rk` false): the account signs in without a username, so it could never sign in.
    static let discoverableCredentialRequired = ProblemCode("discoverable_credential_required", status: 400, title: "Registration refused")

    // MARK: - Metadata

    /// No FIDO MDS3 source is configured.
    static let metadataNotConfigured = ProblemCode("metadata_not_configured", status: 409, title: "No metadata source")

    /// A metadata refresh failed; the code names the failed check (`MetadataError`).
    static func metadataRefreshFailed(_ error: MetadataError) -> ProblemCode {
        ProblemCode(error.code.rawValue, status: 502, title: "Metadata refresh failed")
    }
}

import FIDO
import HTTPServer
import Schema
import Tokens

/// The problem codes the authentication service answers with, beyond the shared ones
/// (`HTTPServer`'s and `ServiceKit`'s) and the refused transaction image's (`FIDOProblems`).
/// Every code here and in `FIDOProblems` is listed in `schemas/openapi/authentication.yaml` (checked by
/// `ProblemCodeTests` in SchemaTests), and no other file of the service spells a problem code.
///
/// A step refused by a method's check answers 400 with the title "Sign-in refused"; only those
/// count towards anti-hammering.
extension ProblemCode {
    // MARK: - Sign-in refused (400, counted by anti-hammering when a method's check refuses)

    /// The credential already completed a step of this sign-in.
    static let credentialAlreadyUsed = ProblemCode("credential_already_used", status: 400, title: "Sign-in refused")
    /// The credential is not one of the user signing in.
    static let credentialNotAllowed = ProblemCode("credential_not_allowed", status: 400, title: "Sign-in refused")
    /// The credential is suspended (or flagged as a possible clone).
    static let credentialSuspended = ProblemCode("credential_suspended", status: 400, title: "Sign-in refused")
    /// The credential is not registered in the tenant.
    static let credentialNotFound = ProblemCode("credential_not_found", status: 400, title: "Sign-in refused")
    /// The signature counter did not increase: the authenticator may have been cloned.
    static let signCountNotIncreased = ProblemCode("sign_count_not_increased", status: 400, title: "Sign-in refused")
    /// Quick authentication: the challenge's time is outside the tenant's window.
    static let quickAuthTimeOutOfWindow = ProblemCode("quick_auth_time_out_of_window", status: 400, title: "Sign-in refused")
    /// The tenant's FIDO policy no longer accepts the credential's algorithm.
    static let policyAlgorithmNotAllowed = ProblemCode("policy_algorithm_not_allowed", status: 400, title: "Sign-in refused")
    /// The tenant's FIDO policy does not accept the credential's authenticator model.
    static let policyAAGUIDNotAllowed = ProblemCode("policy_aaguid_not_allowed", status: 400, title: "Sign-in refused")
    /// The tenant's FIDO policy sets a minimum certification level the credential's model does
    /// not have (by the FIDO metadata registration last published).
    static let policyCertificationLevel = ProblemCode("policy_certification_level", status: 400, title: "Sign-in refused")
    /// Secure Payment Confirmation: the browser displayed another total or payee.
    static let paymentDetailsMismatch = ProblemCode("payment_details_mismatch", status: 400, title: "Sign-in refused")
    /// `FIDO.UAFAuthenticationVerifier` refused the response (UAF Protocol §3.5.7.5): the code
    /// is the `UAFError`'s (`uaf_*`, `policy_uaf_*`), each listed in the document's UAFRefused enum.
    static func uafSignInRefused(_ error: UAFError) -> ProblemCode {
        ProblemCode(error.code.rawValue, status: 400, title: "Sign-in refused")
    }
    /// A one-time code expired.
    static let codeExpired = ProblemCode("code_expired", status: 400, title: "Sign-in refused")
    /// A one-time or TOTP code is wrong.
    static let codeMismatch = ProblemCode("code_mismatch", status: 400, title: "Sign-in refused")
    /// A TOTP code (its time step) was already used.
    static let codeReplayed = ProblemCode("code_replayed", status: 400, title: "Sign-in refused")
    /// The method went away between challenge and verification (a removed authenticator app,
    /// the tenant's external method switched off).
    static let methodGone = ProblemCode("method_unavailable", status: 400, title: "Sign-in refused")
    /// An external JWT is for another user.
    static let jwtSubjectMismatch = ProblemCode("jwt_subject_mismatch", status: 400, title: "Sign-in refused")
    /// The relying party refused the password.
    static let passwordInvalid = ProblemCode("password_invalid", status: 400, title: "Sign-in refused")

    /// `FIDO.AssertionVerifier` refused the assertion (WebAuthn L3 §7.2): the code is the
    /// `WebAuthnError`'s, each listed in the document's SignInRefused enum.
    static func signInRefused(_ error: WebAuthnError) -> ProblemCode {
        ProblemCode(error.code.rawValue, status: 400, title: "Sign-in refused")
    }

    /// An external JWT was refused: `jwt_` and the `JOSEError` code.
    static func externalJWTRefused(_ error: JOSEError) -> ProblemCode {
        ProblemCode("jwt_" + error.code.rawValue, status: 400, title: "Sign-in refused")
    }

    // MARK: - Sign-in flows
    /// The tenant switched quick authentication off (`quickAuthEnabled` false).
    static let quickAuthDisabled = ProblemCode("quick_auth_disabled", status: 403, title: "Quick authentication disabled")
    /// The direct sign-in routes (WebAuthn and UAF, one assertion → a session) are closed for
    /// the tenant: it has an authentication ruleset and did not keep them (`directSignIn`
    /// absent), or switched them off (`directSignIn` false).
    static let directSignInDisabled = ProblemCode("direct_sign_in_disabled", status: 403, title: "Direct sign-in disabled")
    /// A sign-in for a transaction whose rule offers only sequences without a step that signs
    /// the transaction's details (OTPs alone): it could never confirm the transaction.
    static let transactionNotConfirmable = ProblemCode("transaction_not_confirmable", status: 409, title: "Transaction cannot be confirmed")

    /// No such sign-in (or another tenant's).
    static let signInNotFound = ProblemCode("signin_not_found", status: 404, title: "Sign-in not found")
    /// The sign-in succeeded, failed, was denied or rejected.
    static let signInFinished = ProblemCode("signin_finished", status: 409, title: "Sign-in finished")
    /// The sign-in outlived its rules' maximum time.
    static let signInExpired = ProblemCode("signin_expired", status: 409, title: "Sign-in expired")
    /// Another step of the sign-in changed it first.
    static let signInConflict = ProblemCode("signin_conflict", status: 409, title: "Sign-in changed")
    /// A registration answer needs a sign-in that succeeded.
    static let signInNotSucceeded = ProblemCode("signin_not_succeeded", status: 409, title: "Sign-in not complete")
    /// No remaining sequence has the method as a next step.
    static let methodNotAllowedNow = ProblemCode("method_not_allowed_now", status: 409, title: "Method not expected")
    /// The user has no such method (or no credential left for the step).
    static let methodUnavailable = ProblemCode("method_unavailable", status: 409, title: "Method unavailable")
    /// `oob_push`: the user's device has not answered the approval yet; poll verify again.
    static let approvalPending = ProblemCode("approval_pending", status: 409, title: "Approval pending")
    /// `oob_push`: the approval was rejected (or the number was wrong), expired or cancelled.
    static let oobPushRejected = ProblemCode("oob_push_rejected", status: 400, title: "Sign-in refused")
    /// `oob_push` for a transaction: the device approved other details than the transaction
    /// has now (amended after the push); start the step again.
    static let transactionDetailsChanged = ProblemCode("transaction_details_changed", status: 400, title: "Sign-in refused")
    /// `qr`: the phone has not scanned or answered the code yet; poll verify again.
    static let qrPending = ProblemCode("qr_pending", status: 409, title: "QR sign-in pending")
    /// `qr`: the phone rejected the sign-in, the code expired, or it is not this flow's.
    static let qrSignInFailed = ProblemCode("qr_sign_in_failed", status: 400, title: "QR sign-in refused")
    /// Verification before the method's challenge.
    static let noPendingChallenge = ProblemCode("no_pending_challenge", status: 409, title: "No challenge")
    /// A reject for a sign-in that confirms no transaction.
    static let notATransaction = ProblemCode("not_a_transaction", status: 409, title: "Nothing to reject")
    /// A reject before the sign-in verified any step: nobody has shown to be the transaction's
    /// user yet (whoever knows a transaction id can start a sign-in for it).
    static let authenticationRequired = ProblemCode("authentication_required", status: 403, title: "Authentication required")

    // MARK: - Anti-hammering and budgets

    /// The method is locked for the user until the relying party unlocks it.
    static let methodLocked = ProblemCode("method_locked", status: 423, title: "Method locked")
    /// The method is on probation (`Retry-After`).
    static let methodProbation = ProblemCode("method_probation", status: 429, title: "Method on probation")
    /// No more one-time codes to this destination for now (`Retry-After` says when).
    static let codeSendLimited = ProblemCode("code_send_limited", status: 429, title: "Too many codes")

    // MARK: - Transactions

    /// No such transaction in this service's read model.
    static let transactionNotFound = ProblemCode("transaction_not_found", status: 404, title: "Transaction not found")
    /// The transaction is confirmed, rejected, cancelled or expired.
    static let transactionNotPending = ProblemCode("transaction_not_pending", status: 409, title: "Transaction not pending")

    // MARK: - Users known by subject reference

    /// A sign-in found a credential or UAF key without a username and the registration service
    /// could not say whose its subject reference is (``SubjectUsernames``): never a guessed user.
    static let userDirectoryUnavailable = ProblemCode("user_directory_unavailable", status: 503, title: "User directory unavailable")

    // MARK: - Sessions and sign-ups

    /// An unknown, expired or revoked session's refresh token.
    static let invalidRefreshToken = ProblemCode("invalid_refresh_token", status: 401, title: "Invalid refresh token")
    /// A retired refresh token came back: the session is revoked.
    static let refreshTokenReused = ProblemCode("refresh_token_reused", status: 401, title: "Refresh token reused")
    /// The user already has credentials or methods.
    static let usernameTaken = ProblemCode("username_taken", status: 409, title: "Username taken")
    /// The registration service's answer when a sign-up opens the account of a user whose
    /// erasure is in progress, passed on as it came (declared here for the catalogue).
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
    /// The sign-up token is invalid or was already used.
    static let invalidSignUpToken = ProblemCode("invalid_sign_up_token", status: 401, title: "Invalid sign-up token")
    /// A sign-up finished before any method was active.
    static let nothingRegistered = ProblemCode("nothing_registered", status: 409, title: "Nothing registered")
    /// The registration-only token of a sign-in (ENFORCE_REGISTRATION) is invalid, was already
    /// exchanged, or is not this sign-in's.
    static let invalidRegistrationToken = ProblemCode("invalid_registration_token", status: 401, title: "Invalid registration token")
    /// The registration decision rules still enforce registering a method before a session.
    static let registrationRequired = ProblemCode("registration_required", status: 409, title: "Registration required")

    // MARK: - Administration

    /// A ruleset that does not validate or compile.
    static let invalidRuleset = ProblemCode("invalid_ruleset", status: 400, title: "Invalid ruleset")
}

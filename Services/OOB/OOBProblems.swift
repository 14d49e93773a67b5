import HTTPServer

/// The problem codes the oob-notification service answers with, beyond the shared ones
/// (`HTTPServer`'s and `ServiceKit`'s). Every code here is listed in `schemas/openapi/oob.yaml`
/// (checked by `ProblemCodeTests` in SchemaTests), and no other file of the service spells a
/// problem code.
extension ProblemCode {
    /// A message template that does not parse or render (`Delivery.DeliveryError`'s code in
    /// the detail).
    static let invalidTemplate = ProblemCode("invalid_template", status: 400, title: "Invalid template")

    // MARK: - Devices

    /// No such device in the tenant (or not the path user's).
    static let deviceNotFound = ProblemCode("device_not_found", status: 404, title: "Device not found")
    /// The device was revoked: it cannot be bound or asked.
    static let deviceRevoked = ProblemCode("device_revoked", status: 409, title: "Device revoked")
    /// The device is bound to another user; that user (or the RP) unbinds it first.
    static let deviceBoundToOtherUser = ProblemCode("device_bound_to_other_user", status: 409, title: "Device bound to another user")
    /// The device identifier JWT does not verify (signature, type, audience, expiry).
    static let deviceTokenInvalid = ProblemCode("device_token_invalid", status: 400, title: "Invalid device token")

    // MARK: - Approvals

    /// No such approval in the tenant (or not one this device may see).
    static let approvalNotFound = ProblemCode("approval_not_found", status: 404, title: "Approval not found")
    /// The user (or the device named) has no bound, active device that can answer at the level.
    static let noCapableDevice = ProblemCode("no_capable_device", status: 409, title: "No device can answer")
    /// The approval was accepted already.
    static let approvalAlreadyAccepted = ProblemCode("approval_already_accepted", status: 409, title: "Approval already accepted")
    /// The approval was rejected already.
    static let approvalAlreadyRejected = ProblemCode("approval_already_rejected", status: 409, title: "Approval already rejected")
    /// The approval was cancelled by the RP.
    static let approvalAlreadyCancelled = ProblemCode("approval_already_cancelled", status: 409, title: "Approval already cancelled")
    /// The approval expired before an answer.
    static let approvalExpired = ProblemCode("approval_expired", status: 409, title: "Approval expired")
    /// The approval failed (it can no longer be answered).
    static let approvalInvalid = ProblemCode("approval_invalid", status: 409, title: "Approval invalid")
    /// The decision's signature does not verify with the key it names, or that key cannot
    /// answer at the approval's level.
    static let approvalSignatureInvalid = ProblemCode("approval_signature_invalid", status: 400, title: "Approval signature invalid")
    /// Internal: the approval has no signed decision yet (or was not decided by the device).
    static let approvalNotDecided = ProblemCode("approval_not_decided", status: 409, title: "Approval not decided")
    /// The approval request carries `text` but the tenant's app settings do not allow dynamic
    /// text (`allowDynamicText`): the push text comes from the tenant's push templates.
    static let dynamicTextNotAllowed = ProblemCode("dynamic_text_not_allowed", status: 403, title: "Dynamic text not allowed")
    /// An EXECUTIVE approval answered by a user without a valid identity document, and the RP
    /// did not allow a lower level (`allowLowerLevel`): the approval stays in progress.
    static let identityDocumentRequired = ProblemCode("identity_document_required", status: 403, title: "Identity document required")

    // MARK: - Identity documents

    /// The device is not bound to a user (or was revoked): it registers no document.
    static let deviceNotBound = ProblemCode("device_not_bound", status: 409, title: "Device not bound")
    /// The document text does not parse or fails a check (the parser's code and field in the
    /// detail; never the data).
    static let identityDocumentInvalid = ProblemCode("identity_document_invalid", status: 400, title: "Invalid identity document")
    /// The document's last valid day has passed.
    static let identityDocumentExpired = ProblemCode("identity_document_expired", status: 400, title: "Identity document expired")
    /// The document's name is not the user's profile name.
    static let identityDocumentNameMismatch = ProblemCode("identity_document_name_mismatch", status: 400, title: "Identity document name mismatch")
    /// The submission's signature does not verify with the device's user-auth key (or the
    /// device has none).
    static let identityDocumentSignatureInvalid = ProblemCode(
        "identity_document_signature_invalid", status: 400, title: "Identity document signature invalid")
    /// The registration service does not know the device's user: there is no vault subject
    /// to keep the document under.
    static let identitySubjectUnknown = ProblemCode("identity_subject_unknown", status: 409, title: "User unknown to the registration service")

    // MARK: - QR sessions

    /// No such QR session (or not one this caller may see).
    static let qrSessionNotFound = ProblemCode("qr_session_not_found", status: 404, title: "QR session not found")
    /// The QR session belongs to another tenant than the scanning device's.
    static let qrSessionOtherTenant = ProblemCode("qr_session_other_tenant", status: 403, title: "QR session of another tenant")
    /// The QR session was scanned already: a code is single-use.
    static let qrSessionAlreadyUsed = ProblemCode("qr_session_already_used", status: 409, title: "QR session already used")
    /// The QR session expired.
    static let qrSessionExpired = ProblemCode("qr_session_expired", status: 410, title: "QR session expired")
    /// The device may not claim or answer the QR session: not bound to a user, bound to
    /// another user than the session's, or not the device that claimed it.
    static let qrSessionDeviceRefused = ProblemCode("qr_session_device_refused", status: 403, title: "Device may not use this QR session")
    /// The purpose is not offered on this route (`bless` sessions are created by a device:
    /// `POST …/devices/{deviceId}/bless-sessions`).
    static let qrPurposeUnavailable = ProblemCode("qr_purpose_unavailable", status: 400, title: "QR purpose unavailable")
    /// The tenant's app settings do not offer QR sessions of this purpose (`qrPurposes`).
    static let qrPurposeNotAllowed = ProblemCode("qr_purpose_not_allowed", status: 403, title: "QR purpose not allowed by the tenant")
    /// A blessing's approval does not verify with the old device's user-auth key.
    static let qrBlessSignatureInvalid = ProblemCode("qr_bless_signature_invalid", status: 400, title: "Blessing signature invalid")
    /// A sign-in code's ACCEPT without the user's signature, or one that does not verify with
    /// the device's user-auth key.
    static let qrSignatureInvalid = ProblemCode("qr_signature_invalid", status: 400, title: "QR sign-in signature invalid")
    /// The new device answered a blessing before the old device's user approved it.
    static let qrBlessNotApproved = ProblemCode("qr_bless_not_approved", status: 409, title: "Blessing not approved yet")

    // MARK: - TruCodes

    /// No such TruCode in the tenant.
    static let truCodeNotFound = ProblemCode("trucode_not_found", status: 404, title: "TruCode not found")
    /// The TruCode belongs to another tenant than the pairing device's.
    static let truCodeOtherTenant = ProblemCode("trucode_other_tenant", status: 403, title: "TruCode of another tenant")
    /// The TruCode was paired (or used) already: a code is single-use.
    static let truCodeAlreadyUsed = ProblemCode("trucode_already_used", status: 409, title: "TruCode already used")
    /// No phone has paired the TruCode yet: there is no user to ask.
    static let truCodeNotPaired = ProblemCode("trucode_not_paired", status: 409, title: "TruCode not paired yet")
    /// The TruCode expired.
    static let truCodeExpired = ProblemCode("trucode_expired", status: 410, title: "TruCode expired")

    // MARK: - App association

    /// The tenant has no app settings (admin API).
    static let appSettingsNotFound = ProblemCode("app_settings_not_found", status: 404, title: "App settings not found")
    /// One of the domains is another tenant's: a host names one tenant's association files.
    static let appDomainTaken = ProblemCode("app_domain_taken", status: 409, title: "Domain taken by another tenant")
    /// No tenant holds the request's host, or it has no app of the file's platform.
    static let appAssociationNotFound = ProblemCode("app_association_not_found", status: 404, title: "No app association for this host")
}

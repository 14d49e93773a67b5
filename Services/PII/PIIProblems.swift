import HTTPServer

/// The problem codes the pii service answers with, beyond the shared ones (`HTTPServer`'s and
/// `ServiceKit`'s). Every code here is listed in `schemas/openapi/pii.yaml` (checked by
/// `ProblemCodeTests` in SchemaTests), and no other file of the service spells a problem code.
extension ProblemCode {
    /// No such value in the vault, it was erased, or its subject's key is gone.
    static let piiNotFound = ProblemCode("pii_not_found", status: 404, title: "Not found")
    /// A value for a subject whose data key was destroyed: an erased user stays erased.
    static let piiSubjectErased = ProblemCode("pii_subject_erased", status: 409, title: "Subject erased")
    /// A store under a reference the caller chose that is taken, or was withdrawn (its caller
    /// gave up waiting for the answer and deleted it): nothing is stored.
    static let piiRefUnavailable = ProblemCode("pii_ref_unavailable", status: 409, title: "Reference unavailable")
}

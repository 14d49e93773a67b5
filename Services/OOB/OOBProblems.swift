import HTTPServer

/// The problem codes the oob-notification service answers with, beyond the shared ones
/// (`HTTPServer`'s and `ServiceKit`'s). Every code here is listed in `schemas/openapi/oob.yaml`
/// (checked by `ProblemCodeTests` in SchemaTests), and no other file of the service spells a
/// problem code.
extension ProblemCode {
    /// A message template that does not parse or render (`Delivery.DeliveryError`'s code in
    /// the detail).
    static let invalidTemplate = ProblemCode("invalid_template", status: 400, title: "Invalid template")
}

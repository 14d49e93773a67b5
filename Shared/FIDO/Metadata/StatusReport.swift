import FoundationEssentials

/// One status report of a metadata entry (FIDO MDS 3.0 §3.1.3, `StatusReport`): the fields
/// Signet uses, decoded strictly; the rest of the report is ignored.
public struct StatusReport: Sendable, Hashable {
    /// The status.
    public let status: AuthenticatorStatus
    /// When the status took effect (midnight UTC); nil when the report does not say.
    public let effectiveDate: Date?
    /// The authenticator version the report applies to (FIDO: "this and lower versions" for
    /// compromises, "this and higher" for certifications).
    public let authenticatorVersion: UInt32?
    /// The certificate number issued by the FIDO Alliance, for display.
    public let certificateNumber: String?
    /// The certified product's name, for display.
    public let certificationDescriptor: String?

    public init(
        status: AuthenticatorStatus, effectiveDate: Date? = nil, authenticatorVersion: UInt32? = nil,
        certificateNumber: String? = nil, certificationDescriptor: String? = nil
    ) {
        self.status = status
        self.effectiveDate = effectiveDate
        self.authenticatorVersion = authenticatorVersion
        self.certificateNumber = certificateNumber
        self.certificationDescriptor = certificationDescriptor
    }

    /// The level granted by ``status``, if it is a certification.
    public var certificationLevel: CertificationLevel? { status.certificationLevel }

    init(json: MetadataJSON) throws(MetadataJSON.Failure) {
        status = AuthenticatorStatus(try json.required("status").string())
        effectiveDate = try json.member("effectiveDate")?.date()
        authenticatorVersion = try json.member("authenticatorVersion").map { j throws(MetadataJSON.Failure) in
            UInt32(try j.integer(in: 0...Int(UInt32.max)))
        }
        certificateNumber = try json.member("certificateNumber")?.string()
        certificationDescriptor = try json.member("certificationDescriptor")?.string()
    }
}

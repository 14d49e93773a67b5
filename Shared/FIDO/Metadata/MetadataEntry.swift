import FoundationEssentials

/// One entry of an MDS3 BLOB (FIDO MDS 3.0 §3.1.1, `MetadataBLOBPayloadEntry`): an
/// authenticator model's identity, its metadata statement and its status history.
///
/// `biometricStatusReports`, `rogueListURL` and `rogueListHash` are ignored.
public struct MetadataEntry: Sendable {
    /// UAF: the AAID.
    public let aaid: String?
    /// FIDO2: the AAGUID.
    public let aaguid: AAGUID?
    /// U2F and some FIDO2 models: attestation certificate key identifiers (lower-case hex).
    public let attestationCertificateKeyIdentifiers: [String]
    /// The metadata statement; nil when the entry has none, or when it did not decode (the
    /// entry's status still counts: see ``MetadataBLOB/issues``).
    public let metadataStatement: MetadataStatement?
    /// The status reports, in BLOB order.
    public let statusReports: [StatusReport]
    /// When the status last changed (midnight UTC).
    public let timeOfLastStatusChange: Date

    public init(
        aaid: String? = nil, aaguid: AAGUID? = nil, attestationCertificateKeyIdentifiers: [String] = [],
        metadataStatement: MetadataStatement? = nil, statusReports: [StatusReport], timeOfLastStatusChange: Date
    ) {
        self.aaid = aaid
        self.aaguid = aaguid
        self.attestationCertificateKeyIdentifiers = attestationCertificateKeyIdentifiers
        self.metadataStatement = metadataStatement
        self.statusReports = statusReports
        self.timeOfLastStatusChange = timeOfLastStatusChange
    }

    // MARK: - Status

    /// The reports in effective-date order (undated ones first, ties in BLOB order).
    public var chronologicalStatusReports: [StatusReport] {
        statusReports.enumerated().sorted { l, r in
            switch (l.element.effectiveDate, r.element.effectiveDate) {
            case (nil, nil): l.offset < r.offset
            case (nil, _): true
            case (_, nil): false
            case (let a?, let b?): a < b || (a == b && l.offset < r.offset)
            }
        }.map(\.element)
    }

    /// The latest status report.
    public var latestStatusReport: StatusReport? { chronologicalStatusReports.last }

    /// Whether any report says revoked or compromised.
    ///
    /// - Important: Any report, not only the latest: a later `UPDATE_AVAILABLE` or a
    ///   re-certification of newer firmware does not make the devices already in users' hands
    ///   safe, and WebAuthn does not tell which firmware a credential was created on.
    public var isRevokedOrCompromised: Bool { statusReports.contains { $0.status.isRevokedOrCompromised } }

    /// The revoked/compromised statuses reported, in chronological order.
    public var compromises: [AuthenticatorStatus] {
        chronologicalStatusReports.map(\.status).filter(\.isRevokedOrCompromised)
    }

    /// The current certification level: the level of the latest certification report, unless
    /// a later NOT_FIDO_CERTIFIED, SELF_ASSERTION_SUBMITTED or REVOKED ended it.
    public var certificationLevel: CertificationLevel? {
        var level: CertificationLevel?
        for report in chronologicalStatusReports {
            if let granted = report.certificationLevel {
                level = granted
            } else if report.status.endsCertification {
                level = nil
            }
        }
        return level
    }

    /// The model's name from the statement.
    public var authenticatorDescription: String? { metadataStatement?.description }

    // MARK: - Decoding

    /// Decodes an entry. The identity and the status reports are strict: an entry whose
    /// identity or statuses cannot be read is unusable and throws. The statement is decoded on
    /// its own: if it fails, the entry is kept without it and the failure is returned, so that
    /// a bad statement never hides a revocation.
    static func decode(_ json: MetadataJSON) throws(MetadataJSON.Failure) -> (
        entry: MetadataEntry, statementFailure: MetadataJSON.Failure?, droppedRoots: [MetadataJSON.Failure]
    ) {
        let aaid = try json.member("aaid")?.string()
        var aaguid: AAGUID?
        if let a = try json.member("aaguid") {
            guard let parsed = AAGUID(try a.string()) else { throw a.fail("not an AAGUID") }
            aaguid = parsed
        }
        let keyIDs = try json.member("attestationCertificateKeyIdentifiers")
            .map { j throws(MetadataJSON.Failure) in try AttestationKeyIdentifier.normalised(j) } ?? []
        guard aaid != nil || aaguid != nil || !keyIDs.isEmpty else {
            throw json.fail("entry has no aaid, aaguid or attestationCertificateKeyIdentifiers")
        }
        var reports: [StatusReport] = []
        for element in try json.required("statusReports").elements() {
            reports.append(try StatusReport(json: element))
        }
        let lastChange = try json.required("timeOfLastStatusChange").date()

        var statement: MetadataStatement?
        var statementFailure: MetadataJSON.Failure?
        var droppedRoots: [MetadataJSON.Failure] = []
        if let s = try json.member("metadataStatement") {
            do throws(MetadataJSON.Failure) {
                let decoded = try MetadataStatement(json: s, droppedRoots: &droppedRoots)
                // The statement must describe the model the entry names.
                if let a = decoded.aaguid, a != aaguid {
                    throw s.fail("statement aaguid differs from the entry's")
                }
                if let a = decoded.aaid, MetadataBLOB.foldAAID(a) != aaid.map(MetadataBLOB.foldAAID) {
                    throw s.fail("statement aaid differs from the entry's")
                }
                statement = decoded
            } catch {
                statementFailure = error
                droppedRoots = []
            }
        }
        let entry = MetadataEntry(
            aaid: aaid, aaguid: aaguid, attestationCertificateKeyIdentifiers: keyIDs, metadataStatement: statement,
            statusReports: reports, timeOfLastStatusChange: lastChange)
        return (entry, statementFailure, droppedRoots)
    }
}

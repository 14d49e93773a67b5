/// What changed when ``MetadataService`` loaded a BLOB: the serial numbers, and the models
/// whose status became revoked or compromised, so that the registration service can flag the
/// credentials already registered with them.
public struct MetadataUpdate: Sendable, Hashable {
    /// `no` of the BLOB replaced; nil on the first load.
    public let previousNumber: Int?
    /// `no` of the BLOB now loaded.
    public let number: Int
    /// FIDO2 models revoked or compromised in the new BLOB and not in the previous one
    /// (on the first load: every revoked or compromised model), sorted.
    public let newlyRevokedAAGUIDs: [AAGUID]
    /// The same for attestation certificate key identifiers (U2F models), sorted.
    public let newlyRevokedKeyIdentifiers: [String]
    /// The same for AAIDs (UAF models), sorted.
    public let newlyRevokedAAIDs: [String]
    /// Entries of the new BLOB that did not decode completely (for logging).
    public let issues: [MetadataBLOB.Issue]
    /// Whether the new BLOB's signing chain was checked for revocation.
    public internal(set) var revocation: RevocationCheck = .notAsked

    /// Whether, and why not, a BLOB's signing chain was checked against its issuers' CRLs.
    public enum RevocationCheck: String, Sendable, Hashable {
        /// Every certificate of the chain is covered by a current CRL of its issuer, and in none.
        case checked
        /// The BLOB is signed by a configured root itself: there is no chain to check.
        case signedByRoot
        /// A certificate of the chain names no CRL distribution point (`http`/`https`).
        case noDistributionPoint
        /// The source fetches no CRLs (a file).
        case sourceFetchesNone
        /// Installed without a source (``MetadataService/load(blob:)``, ``MetadataService/load(jwt:at:)``).
        case notAsked
        /// Installed from the copy kept when the deployment accepted it
        /// (``MetadataService/load(kept:at:)``): checked then, not again.
        case kept
    }

    public init(
        previousNumber: Int?, number: Int, newlyRevokedAAGUIDs: [AAGUID], newlyRevokedKeyIdentifiers: [String],
        newlyRevokedAAIDs: [String], issues: [MetadataBLOB.Issue]
    ) {
        self.previousNumber = previousNumber
        self.number = number
        self.newlyRevokedAAGUIDs = newlyRevokedAAGUIDs
        self.newlyRevokedKeyIdentifiers = newlyRevokedKeyIdentifiers
        self.newlyRevokedAAIDs = newlyRevokedAAIDs
        self.issues = issues
    }

    /// Whether any existing credential may need flagging.
    public var hasNewRevocations: Bool {
        !newlyRevokedAAGUIDs.isEmpty || !newlyRevokedKeyIdentifiers.isEmpty || !newlyRevokedAAIDs.isEmpty
    }

    /// The revocations `blob` brings over `previous`.
    static func between(_ previous: MetadataBLOB?, and blob: MetadataBLOB) -> MetadataUpdate {
        var aaguids = Set<AAGUID>()
        var keyIDs = Set<String>()
        var aaids = Set<String>()
        for entry in blob.entries where entry.isRevokedOrCompromised {
            // Judge each identity through the new BLOB's index (duplicates resolved there) and
            // the previous BLOB's, so a model that merely moved between entries is not "new".
            if let aaguid = entry.aaguid, blob.entry(for: aaguid)?.isRevokedOrCompromised == true,
                previous?.entry(for: aaguid)?.isRevokedOrCompromised != true
            {
                aaguids.insert(aaguid)
            }
            if let aaid = entry.aaid, blob.entry(forAAID: aaid)?.isRevokedOrCompromised == true,
                previous?.entry(forAAID: aaid)?.isRevokedOrCompromised != true
            {
                aaids.insert(aaid)
            }
            for id in entry.attestationCertificateKeyIdentifiers
            where blob.entry(forKeyIdentifier: id)?.isRevokedOrCompromised == true
                && previous?.entry(forKeyIdentifier: id)?.isRevokedOrCompromised != true
            {
                keyIDs.insert(id)
            }
        }
        return MetadataUpdate(
            previousNumber: previous?.number, number: blob.number,
            newlyRevokedAAGUIDs: aaguids.sorted { $0.description < $1.description },
            newlyRevokedKeyIdentifiers: keyIDs.sorted(), newlyRevokedAAIDs: aaids.sorted(), issues: blob.issues)
    }
}

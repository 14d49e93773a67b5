/// A FIDO Authenticator Certification level (FIDO MDS 3.0 `FIDO_CERTIFIED_L1` … `L3plus`),
/// ordered from weakest to strongest.
///
/// The raw values are the MDS status names, which is also how a ``FIDOPolicy`` document
/// writes its minimum level.
public enum CertificationLevel: String, Sendable, Hashable, CaseIterable, Comparable, Codable {
    case l1 = "FIDO_CERTIFIED_L1"
    case l1plus = "FIDO_CERTIFIED_L1plus"
    case l2 = "FIDO_CERTIFIED_L2"
    case l2plus = "FIDO_CERTIFIED_L2plus"
    case l3 = "FIDO_CERTIFIED_L3"
    case l3plus = "FIDO_CERTIFIED_L3plus"

    private var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }

    public static func < (lhs: CertificationLevel, rhs: CertificationLevel) -> Bool { lhs.rank < rhs.rank }
}

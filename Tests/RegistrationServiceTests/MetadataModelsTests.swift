import FIDO
import Foundation
import Schema
import Testing
import TestSupport
@testable import RegistrationService

/// The metadata's models as the admin API lists them for a policy's model picker: name,
/// identifiers, certification level and latest status, by name, a page at a time.
@Suite struct MetadataModelsTests {
    static func entries() throws -> [MetadataEntry] {
        let chain = try MetadataTestPKI.Chain()
        let metadata = MetadataService(configuration: try chain.configuration)
        let blob = try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(
                no: 1,
                entries: [
                    MetadataTestPKI.entry(aaguid: CertifiedModelsTests.l2, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01"), ("FIDO_CERTIFIED_L2", "2024-03-01")],
                        description: "Zeta Key"),
                    MetadataTestPKI.entry(aaguid: CertifiedModelsTests.l3Revoked, statuses: [("FIDO_CERTIFIED_L3", "2024-01-01"), ("REVOKED", "2024-06-01")],
                        description: "Alpha Key"),
                    MetadataTestPKI.entry(keyIdentifiers: [CertifiedModelsTests.u2fKeyID], statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")],
                        description: "alpha U2F"),
                ]),
            chain: chain)
        try metadata.load(jwt: blob, at: MetadataTestPKI.verificationTime)
        return try #require(metadata.blob?.entries)
    }

    @Test func modelsCarryTheirLevelAndLatestStatusInNameOrder() throws {
        let models = MetadataModelsRoutes.models(try Self.entries(), matching: "")
        #expect(models.map(\.name) == ["Alpha Key", "Zeta Key", "alpha U2F"])
        let zeta = try #require(models.first { $0.name == "Zeta Key" })
        #expect(zeta.id == CertifiedModelsTests.l2 && zeta.aaguid == CertifiedModelsTests.l2 && zeta.protocolFamily == "fido2")
        #expect(zeta.certificationLevel == "FIDO_CERTIFIED_L2" && zeta.status == "FIDO_CERTIFIED_L2" && zeta.statusDate == "2024-03-01")
        // A revocation ends the certification: no level, the status says why.
        let alpha = try #require(models.first { $0.name == "Alpha Key" })
        #expect(alpha.certificationLevel == nil && alpha.status == "REVOKED" && alpha.statusDate == "2024-06-01")
        // A U2F model is named by its attestation key identifier.
        let u2f = try #require(models.first { $0.name == "alpha U2F" })
        #expect(u2f.id == CertifiedModelsTests.u2fKeyID && u2f.aaguid == nil && u2f.attestationCertificateKeyIdentifiers == [CertifiedModelsTests.u2fKeyID])
    }

    @Test func aQueryMatchesAPartOfTheNameWithoutCase() throws {
        #expect(MetadataModelsRoutes.models(try Self.entries(), matching: "ALPHA").map(\.name) == ["Alpha Key", "alpha U2F"])
        #expect(MetadataModelsRoutes.models(try Self.entries(), matching: "u2f").map(\.name) == ["alpha U2F"])
        #expect(MetadataModelsRoutes.models(try Self.entries(), matching: "nothing").isEmpty)
    }

    @Test func pagesFollowEachOther() throws {
        let models = MetadataModelsRoutes.models(try Self.entries(), matching: "")
        let first = MetadataModelsRoutes.page(models, after: nil, limit: 2)
        #expect(first.models.map(\.name) == ["Alpha Key", "Zeta Key"] && first.next == CertifiedModelsTests.l2)
        let second = MetadataModelsRoutes.page(models, after: first.next, limit: 2)
        #expect(second.models.map(\.name) == ["alpha U2F"] && second.next == nil)
    }
}

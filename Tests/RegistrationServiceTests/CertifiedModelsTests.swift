import FIDO
import Foundation
import Schema
import Testing
import TestSupport
@testable import RegistrationService

/// The models a FIDO policy's minimum certification level admits at sign-in, as the
/// registration service publishes them with the policy (`FIDOPolicyChanged.certifiedAaguids`):
/// the metadata's models certified at the level or above, revoked ones left out.
@Suite struct CertifiedModelsTests {
    static let l1 = "cb69481e-8ff7-4039-93ec-0a2729a154a8"
    static let l2 = "ee882879-721c-4913-9775-3dfcce97072a"
    static let l3Revoked = "6f7a8b9c-2d3e-4f5a-8b9c-2d3e4f5a6b7c"
    static let u2fKeyID = "7d87f94259e4e23148514b5b63df58415da3aeaf"

    static func metadata() throws -> MetadataService {
        let chain = try MetadataTestPKI.Chain()
        let metadata = MetadataService(configuration: try chain.configuration)
        let blob = try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(
                no: 1,
                entries: [
                    MetadataTestPKI.entry(aaguid: l1, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")]),
                    MetadataTestPKI.entry(aaguid: l2, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01"), ("FIDO_CERTIFIED_L2", "2024-03-01")]),
                    MetadataTestPKI.entry(aaguid: l3Revoked, statuses: [("FIDO_CERTIFIED_L3", "2024-01-01"), ("REVOKED", "2024-06-01")]),
                    MetadataTestPKI.entry(keyIdentifiers: [u2fKeyID], statuses: [("FIDO_CERTIFIED_L3", "2024-01-01")]),
                ]),
            chain: chain)
        try metadata.load(jwt: blob, at: MetadataTestPKI.verificationTime)
        return metadata
    }

    static func policy(_ json: String) throws -> FIDOPolicy { try FIDOPolicy(document: Array(json.utf8)) }

    @Test func theCertifiedModelsAreThoseAtTheLevelOrAboveAndNotRevoked() throws {
        let metadata = try Self.metadata()
        let now = Date()
        let l1 = FIDOPolicyStore.changedEvent(
            try Self.policy(#"{"attestation":{"required":true},"minimumCertificationLevel":"FIDO_CERTIFIED_L1"}"#), tenant: "acme", at: now,
            metadata: metadata)
        #expect(l1.minimumCertificationLevel == "FIDO_CERTIFIED_L1" && l1.certifiedAaguids == [Self.l1, Self.l2].sorted())
        try l1.validate()
        let l1plus = FIDOPolicyStore.changedEvent(
            try Self.policy(#"{"attestation":{"required":true},"minimumCertificationLevel":"FIDO_CERTIFIED_L1plus"}"#), tenant: "acme", at: now,
            metadata: metadata)
        #expect(l1plus.certifiedAaguids == [Self.l2])
        // Without metadata no model is certified; without a minimum nothing is listed.
        let none = FIDOPolicyStore.changedEvent(
            try Self.policy(#"{"attestation":{"required":true},"minimumCertificationLevel":"FIDO_CERTIFIED_L1"}"#), tenant: "acme", at: now, metadata: nil)
        #expect(none.certifiedAaguids == [])
        let open = FIDOPolicyStore.changedEvent(.consumerDefault, tenant: "acme", at: now, metadata: metadata)
        #expect(open.minimumCertificationLevel == nil && open.certifiedAaguids == nil)
        try open.validate()
    }
}

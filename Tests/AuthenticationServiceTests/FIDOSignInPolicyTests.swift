import FIDO
import Foundation
import HTTPServer
import Schema
import Testing
@testable import AuthenticationService

/// What sign-in applies of a tenant's FIDO policy, from the registration service's event: here
/// the minimum certification level, as the models the metadata certifies at it.
@Suite struct FIDOSignInPolicyTests {
    static let certified = "08987058-cadc-4b81-b6e1-30de50dcbe96"
    static let uncertified = "ee882879-721c-4913-9775-3dfcce97072a"

    static func refusal(_ policy: FIDOSignInPolicy, aaguid: String?) -> String? {
        do {
            try policy.check(algorithm: .es256, aaguid: aaguid)
            return nil
        } catch let error as HTTPError {
            return error.code.rawValue
        } catch {
            return "\(error)"
        }
    }

    @Test func aMinimumCertificationLevelAdmitsOnlyTheCertifiedModels() throws {
        var event = FIDOPolicyChanged.fullExample
        event.allowedAaguids = nil
        event.disallowedAaguids = []
        event.minimumCertificationLevel = "FIDO_CERTIFIED_L2"
        event.certifiedAaguids = [Self.certified]
        try event.validate()
        let policy = FIDOSignInPolicy(event)
        #expect(Self.refusal(policy, aaguid: Self.certified) == nil)
        #expect(Self.refusal(policy, aaguid: Self.certified.uppercased()) == nil)
        #expect(Self.refusal(policy, aaguid: Self.uncertified) == "policy_certification_level")
        // No AAGUID (U2F) or the zero AAGUID: no certification is known.
        #expect(Self.refusal(policy, aaguid: nil) == "policy_certification_level")
        // The metadata certifies nothing at the level: every model is refused.
        event.certifiedAaguids = []
        #expect(Self.refusal(FIDOSignInPolicy(event), aaguid: Self.certified) == "policy_certification_level")
        // No minimum: any model the lists accept.
        event.minimumCertificationLevel = nil
        event.certifiedAaguids = nil
        #expect(Self.refusal(FIDOSignInPolicy(event), aaguid: Self.uncertified) == nil)
    }

    @Test func theEventCarriesTheCertifiedModelsOnlyWithAMinimum() throws {
        var event = FIDOPolicyChanged.minimalExample
        event.certifiedAaguids = [Self.certified]
        #expect(throws: EventDecodingError.self) { try event.validate() }
        event.minimumCertificationLevel = "FIDO_CERTIFIED_L9"
        #expect(throws: EventDecodingError.self) { try event.validate() }
        event.minimumCertificationLevel = "FIDO_CERTIFIED_L1plus"
        try event.validate()
        event.certifiedAaguids = [Self.certified.uppercased()]
        #expect(throws: EventDecodingError.self) { try event.validate() }
    }
}

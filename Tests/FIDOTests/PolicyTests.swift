import Crypto
import FIDO
import Foundation
import Testing
import TestSupport

@Suite struct FIDOPolicyTests {
    typealias R = PolicyTestRegistrations
    static let aaguid = AAGUID("cb69481e-8ff7-4039-93ec-0a2729a154a8")!
    static let otherAAGUID = AAGUID("ee882879-721c-4913-9775-3dfcce97072a")!

    /// Basic attestation with a one-certificate trust path.
    static func attested(aaguid: AAGUID = aaguid, leaf: [UInt8]? = nil) throws -> VerifiedRegistration {
        let path = try leaf ?? MetadataTestPKI.issue("Attestation", by: try MetadataTestPKI.root("Attestation Root")).der
        return try R.registration(aaguid: aaguid, attestation: .chain(.basic, [path]))
    }

    static var strict: FIDOPolicy {
        FIDOPolicy(
            attestation: .init(conveyance: .direct, required: true, acceptNone: false, acceptSelf: false),
            minimumCertificationLevel: .l1, userVerification: .required, residentKey: .required)
    }

    func refusal(_ policy: FIDOPolicy, _ registration: VerifiedRegistration, metadata: MetadataService? = nil, rk: Bool? = true) -> PolicyRefusal? {
        policy.evaluate(registration: registration, metadata: metadata, residentKey: rk).refusal
    }

    func metadata(_ entries: [[String: Any]]) throws -> MetadataService {
        let chain = try MetadataTestPKI.Chain()
        let service = MetadataService(configuration: try chain.configuration)
        try service.load(
            jwt: try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: 1, entries: entries), chain: chain),
            at: MetadataTestPKI.verificationTime)
        return service
    }

    // MARK: - The consumer default

    @Test func consumerDefaultAcceptsNoneAndSelfAttestation() throws {
        let policy = FIDOPolicy.consumerDefault
        for registration in [try R.registration(attestation: .none), try R.registration(attestation: .selfSigned), try Self.attested()] {
            #expect(policy.evaluate(registration: registration, metadata: nil).isAccepted, "\(registration.attestationType)")
        }
        let none = try R.registration(attestation: .none)
        #expect(none.attestationType == .none)
        #expect(try R.registration(attestation: .selfSigned).attestationType == .self)
        // UV and discoverability are preferred, not required.
        #expect(policy.evaluate(registration: try R.registration(flags: R.up), metadata: nil, residentKey: false).isAccepted)
        #expect(policy.attestation.conveyance == .none)
        #expect(policy.userVerification == .preferred)
        #expect(policy.allowedAttestationTypes == Set(AttestationType.allCases))
        #expect(!policy.requiresUserVerification)
        #expect(policy.allowedAlgorithms.contains(.es256) && !policy.allowedAlgorithms.contains(.rs1))
        #expect(FIDOPolicy.Requirement.allCases.count == 3)
        try policy.validate()
    }

    // MARK: - One test per rule

    @Test func algorithmRule() throws {
        let policy = FIDOPolicy(allowedAlgorithms: [.eddsa, .rs256])
        let refusal = try #require(refusal(policy, try R.registration()))
        #expect(refusal.code == .algorithmNotAllowed)
        #expect(refusal.code.rawValue == "policy_algorithm_not_allowed")
        #expect(refusal.rule == "/allowedAlgorithms")
    }

    @Test func userVerificationRule() throws {
        let policy = FIDOPolicy(userVerification: .required)
        let refused = try #require(refusal(policy, try R.registration(flags: R.up)))
        #expect(refused.code.rawValue == "policy_user_verification_required")
        #expect(refused.rule == "/userVerification")
        #expect(refusal(policy, try R.registration(flags: R.up | R.uv)) == nil)
        #expect(policy.requiresUserVerification)
    }

    @Test func residentKeyRule() throws {
        let policy = FIDOPolicy(residentKey: .required)
        let registration = try R.registration()
        for rk in [nil, false] as [Bool?] {
            let refused = try #require(refusal(policy, registration, rk: rk))
            #expect(refused.code.rawValue == "policy_resident_key_required")
            #expect(refused.rule == "/residentKey")
        }
        #expect(refusal(policy, registration, rk: true) == nil)
    }

    @Test func attestationRules() throws {
        let none = try R.registration(attestation: .none)
        let selfAttested = try R.registration(attestation: .selfSigned)
        let required = FIDOPolicy(attestation: .init(conveyance: .direct, required: true, acceptNone: false, acceptSelf: false))

        let r1 = try #require(refusal(required, none))
        #expect(r1.code.rawValue == "policy_attestation_required")
        #expect(r1.rule == "/attestation/required")
        let r2 = try #require(refusal(required, selfAttested))
        #expect(r2.code.rawValue == "policy_self_attestation_not_allowed")
        #expect(r2.rule == "/attestation/required")
        #expect(refusal(required, try Self.attested()) == nil)
        #expect(required.allowedAttestationTypes == [.basic, .attCA, .anonCA])

        // Not required, but one of none/self refused.
        let noNone = FIDOPolicy(attestation: .init(acceptNone: false))
        #expect(refusal(noNone, none).map { ($0.code, $0.rule) } ?? (.aaguidNotAllowed, "") == (.attestationRequired, "/attestation/acceptNone"))
        #expect(refusal(noNone, selfAttested) == nil)
        let noSelf = FIDOPolicy(attestation: .init(acceptSelf: false))
        #expect(refusal(noSelf, selfAttested).map { ($0.code, $0.rule) } ?? (.aaguidNotAllowed, "") == (.selfAttestationNotAllowed, "/attestation/acceptSelf"))
        #expect(refusal(noSelf, none) == nil)
        #expect(noSelf.allowedAttestationTypes == [.basic, .attCA, .anonCA, .none])
    }

    @Test func aaguidRules() throws {
        let registration = try R.registration(aaguid: Self.aaguid)
        let disallowed = FIDOPolicy(disallowedAAGUIDs: [Self.aaguid])
        let r1 = try #require(refusal(disallowed, registration))
        #expect(r1.code.rawValue == "policy_aaguid_not_allowed")
        #expect(r1.rule == "/disallowedAAGUIDs")

        let allowList = FIDOPolicy(allowedAAGUIDs: [Self.otherAAGUID])
        let r2 = try #require(refusal(allowList, registration))
        #expect(r2.code == .aaguidNotAllowed)
        #expect(r2.rule == "/allowedAAGUIDs")
        #expect(refusal(FIDOPolicy(allowedAAGUIDs: [Self.aaguid, Self.otherAAGUID]), registration) == nil)
        // An all-zero AAGUID (none attestation from many platforms) is not on an allow list.
        #expect(refusal(allowList, try R.registration(aaguid: .zero))?.code == .aaguidNotAllowed)
    }

    @Test func revokedAuthenticatorsAreRefusedWheneverMetadataKnowsThem() throws {
        let metadata = try metadata([
            MetadataTestPKI.entry(aaguid: Self.aaguid.description, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01"), ("USER_KEY_PHYSICAL_COMPROMISE", "2024-06-01")]),
            MetadataTestPKI.entry(aaguid: Self.otherAAGUID.description, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")]),
        ])
        // Even under the consumer default, and even with none attestation.
        for registration in [try R.registration(aaguid: Self.aaguid), try Self.attested(aaguid: Self.aaguid)] {
            let refused = try #require(refusal(.consumerDefault, registration, metadata: metadata))
            #expect(refused.code.rawValue == "policy_authenticator_revoked")
            #expect(refused.rule == "/metadata/status")
        }
        let decision = FIDOPolicy.consumerDefault.evaluate(registration: try R.registration(aaguid: Self.otherAAGUID), metadata: metadata)
        guard case .accepted(let entry) = decision else {
            Issue.record("refused: \(decision)")
            return
        }
        #expect(entry?.aaguid == Self.otherAAGUID)
        // Unknown models pass (no metadata says anything against them).
        #expect(refusal(.consumerDefault, try R.registration(aaguid: .zero), metadata: metadata) == nil)
    }

    @Test func revokedU2FModelsAreFoundByTheirAttestationCertificate() throws {
        let leaf = try MetadataTestPKI.issue("U2F Attestation", by: try MetadataTestPKI.root("U2F Root"))
        let keyID = try #require(AttestationKeyIdentifier.of(try leaf.certificate))
        let metadata = try metadata([MetadataTestPKI.entry(keyIdentifiers: [keyID], statuses: [("ATTESTATION_KEY_COMPROMISE", "2024-06-01")])])
        let registration = try Self.attested(aaguid: .zero, leaf: leaf.der)
        #expect(refusal(.consumerDefault, registration, metadata: metadata)?.code == .authenticatorRevoked)
    }

    @Test func certificationLevelRule() throws {
        let metadata = try metadata([MetadataTestPKI.entry(aaguid: Self.aaguid.description, statuses: [("FIDO_CERTIFIED_L1plus", "2024-01-01")])])
        var policy = Self.strict
        let registration = try Self.attested()

        policy.minimumCertificationLevel = .l2
        let r1 = try #require(refusal(policy, registration, metadata: metadata))
        #expect(r1.code.rawValue == "policy_certification_level")
        #expect(r1.rule == "/minimumCertificationLevel")
        policy.minimumCertificationLevel = .l1plus
        #expect(refusal(policy, registration, metadata: metadata) == nil)
        policy.minimumCertificationLevel = .l1
        #expect(refusal(policy, registration, metadata: metadata) == nil)
        // Without metadata, or for a model it does not know, no level is established.
        #expect(refusal(policy, registration, metadata: nil)?.code == .certificationLevel)
        #expect(refusal(policy, try Self.attested(aaguid: Self.otherAAGUID), metadata: metadata)?.code == .certificationLevel)
        #expect(CertificationLevel.l3plus > .l3 && CertificationLevel.l1 < .l1plus)
    }

    @Test func everyRefusalCodeIsStable() {
        #expect(
            Set(PolicyRefusal.Code.allCases.map(\.rawValue)) == [
                "policy_aaguid_not_allowed", "policy_attestation_required", "policy_self_attestation_not_allowed",
                "policy_certification_level", "policy_authenticator_revoked", "policy_algorithm_not_allowed",
                "policy_user_verification_required", "policy_resident_key_required",
            ])
        #expect(PolicyRefusal(.certificationLevel, rule: "/minimumCertificationLevel", "x").description == "PolicyRefusal(policy_certification_level, /minimumCertificationLevel)")
    }
}

@Suite struct FIDOPolicyDocumentTests {
    func error(_ json: String) -> FIDOPolicyError? { FIDOPolicy.validate(document: Array(json.utf8)) }

    @Test func roundTrips() throws {
        for policy in [FIDOPolicy.consumerDefault, FIDOPolicyTests.strict, FIDOPolicy(allowedAAGUIDs: [FIDOPolicyTests.aaguid], disallowedAAGUIDs: [FIDOPolicyTests.otherAAGUID])] {
            let document = policy.document()
            #expect(try FIDOPolicy(document: document) == policy)
            #expect(FIDOPolicy.validate(document: document) == nil)
        }
        #expect(try FIDOPolicy(document: Array("{}".utf8)) == .consumerDefault)
        let text = String(decoding: FIDOPolicy.consumerDefault.document(), as: UTF8.self)
        #expect(text.contains(#""attestation":{"acceptNone":true,"acceptSelf":true,"conveyance":"none","required":false}"#))
        #expect(!text.contains(#""allowedAAGUIDs""#))
    }

    @Test func attestationDefaultsFollowRequired() throws {
        let policy = try FIDOPolicy(document: Array(#"{"attestation":{"required":true},"minimumCertificationLevel":"FIDO_CERTIFIED_L2"}"#.utf8))
        #expect(policy.attestation == .init(conveyance: .direct, required: true, acceptNone: false, acceptSelf: false))
        #expect(policy.minimumCertificationLevel == .l2)
    }

    @Test(arguments: [
        (#"{"allowedAAGUIDs":["cb69481e-8ff7-4039-93ec-0a2729a154a8","nope"]}"#, "/allowedAAGUIDs/1", "not an AAGUID"),
        (#"{"allowedAAGUIDs":[]}"#, "/allowedAAGUIDs", nil),
        (
            #"{"allowedAAGUIDs":["cb69481e-8ff7-4039-93ec-0a2729a154a8"],"disallowedAAGUIDs":["ffffffff-8ff7-4039-93ec-0a2729a154a8","cb69481e8ff7403993ec0a2729a154a8"]}"#,
            "/disallowedAAGUIDs/1", "an AAGUID is both allowed and disallowed"
        ),
        (#"{"userVerfication":"required"}"#, "/userVerfication", "unknown member"),
        (#"{"userVerification":"always"}"#, "/userVerification", "invalid value"),
        (#"{"residentKey":5}"#, "/residentKey", "wrong type"),
        (#"{"attestation":{"requird":true}}"#, "/attestation/requird", "unknown member"),
        (#"{"attestation":{"required":true,"acceptNone":true}}"#, "/attestation/acceptNone", nil),
        (#"{"attestation":{"required":true,"acceptSelf":true}}"#, "/attestation/acceptSelf", nil),
        (#"{"attestation":{"required":true,"conveyance":"none"}}"#, "/attestation/conveyance", nil),
        (#"{"attestation":{"conveyance":"sometimes"}}"#, "/attestation/conveyance", "invalid value"),
        (#"{"attestation":"direct"}"#, "/attestation", "wrong type"),
        (#"{"minimumCertificationLevel":"FIDO_CERTIFIED_L2"}"#, "/minimumCertificationLevel", nil),
        (#"{"attestation":{"required":true},"minimumCertificationLevel":"L9"}"#, "/minimumCertificationLevel", "invalid value"),
        (#"{"allowedAlgorithms":[]}"#, "/allowedAlgorithms", nil),
        (#"{"allowedAlgorithms":[-7,-65535]}"#, "/allowedAlgorithms/1", nil),
        (#"{"allowedAlgorithms":[-7,-48]}"#, "/allowedAlgorithms/1", nil),
        (#"{"allowedAlgorithms":[-7,-8,-7]}"#, "/allowedAlgorithms/2", "duplicate algorithm"),
        (#"{"allowedAlgorithms":[-7.5]}"#, "/allowedAlgorithms/0", "wrong type"),
        (#"{"allowedAlgorithms":[-7,"ES256"]}"#, "/allowedAlgorithms/1", "wrong type"),
        (#"{"disallowedAAGUIDs":[7]}"#, "/disallowedAAGUIDs/0", "wrong type"),
        (#"{"allowedAlgorithms":-7}"#, "/allowedAlgorithms", nil),
    ] as [(String, String, String?)])
    func invalidDocumentsNameTheFirstBadMember(json: String, path: String, reason: String?) throws {
        let found = try #require(error(json))
        #expect(found.code == .invalid)
        #expect(found.code.rawValue == "policy_document_invalid")
        #expect(found.path == path)
        if let reason { #expect(found.reason == reason) }
        // Reasons are fixed text: nothing from the document comes back.
        for echoed in ["nope", "always", "sometimes", "L9", "requird"] where found.reason.contains(echoed) {
            Issue.record("reason echoes the document: \(found.reason)")
        }
    }

    @Test(arguments: [
        #"{"userVerification":"required","userVerification":"discouraged"}"#, "[]", "not json", "", #"{"a":1} x"#,
    ])
    func malformedDocuments(json: String) throws {
        let found = try #require(error(json))
        #expect(found.code == .malformed)
        #expect(found.code.rawValue == "policy_document_malformed")
        #expect(found.path == "")
    }

    @Test func theStructValidatesToo() throws {
        var policy = FIDOPolicy.consumerDefault
        policy.minimumCertificationLevel = .l3
        #expect(throws: FIDOPolicyError.self) { try policy.validate() }
        do {
            try policy.validate()
        } catch {
            #expect(error.path == "/minimumCertificationLevel")
        }
        let both = FIDOPolicy(allowedAAGUIDs: [FIDOPolicyTests.aaguid], disallowedAAGUIDs: [FIDOPolicyTests.aaguid])
        do {
            try both.validate()
            Issue.record("an AAGUID both allowed and disallowed validated")
        } catch {
            #expect(error.path == "/disallowedAAGUIDs/0")
            #expect(error.description == "FIDOPolicyError(policy_document_invalid, /disallowedAAGUIDs/0)")
        }
    }

    /// Stored inside a tenant record, errors carry the enclosing path.
    @Test func nestedInAnotherDocument() throws {
        struct Tenant: Codable { var name: String; var policy: FIDOPolicy }
        let tenant = Tenant(name: "demo", policy: .consumerDefault)
        let decoded = try JSONDecoder().decode(Tenant.self, from: try JSONEncoder().encode(tenant))
        #expect(decoded.policy == .consumerDefault)
        do {
            _ = try JSONDecoder().decode(Tenant.self, from: Data(#"{"name":"demo","policy":{"residentKey":"always"}}"#.utf8))
            Issue.record("decoded an invalid policy")
        } catch let DecodingError.dataCorrupted(context) {
            #expect(context.codingPath.map(\.stringValue) == ["policy", "residentKey"])
        }
    }
}

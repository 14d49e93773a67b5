import FIDO
import Foundation
import Schema
import Testing
import TestSupport

/// WebAuthn registration under a FIDO policy that does not require attestation, when the
/// attestation's certificate chain does not verify to the FIDO metadata roots of the model it
/// names: it proves no model, so it is evaluated as `none` (WebAuthn L3 §7.1 steps 23–24 and
/// the step after storing), and stored and listed as `none`, never as `basic`. A registration
/// replica loads an MDS3 BLOB listing the model with its own attestation root (``MetadataReplica``).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct UntrustedAttestationStackTests {
    static let origin = "http://localhost:8080"
    static let model = "8a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d"

    /// A replica whose metadata lists ``model`` with `root` as its attestation root (or
    /// `entries`), a tenant of it with an RP API key, and the tenant's FIDO policy set to
    /// `policy` (nil: the consumer default).
    static func replica(
        port: Int, root: MetadataTestPKI.Issued? = nil, entries: [[String: Any]] = [], policy: String?
    ) async throws -> (replica: MetadataReplica, tenant: String, key: String) {
        var entries = entries
        if let root { entries.append(MetadataTestPKI.entry(aaguid: model, statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")], roots: [root.base64])) }
        let replica = try await MetadataReplica.start(name: "untrusted-att-\(port)", port: port) { [entries] chain in
            try MetadataTestPKI.blob(payload: MetadataTestPKI.payload(no: 1, entries: entries, nextUpdate: "2030-01-01"), chain: chain)
        }
        do {
            let (tenant, key) = try await replica.tenant(prefix: "untrusted", origin: origin)
            if let policy {
                let put = try await TestHTTP.json("PUT", "\(replica.base)/v1/admin/tenants/\(tenant)/fido-policy", token: TestStack.adminToken, json: policy)
                try #require(put.status == 200, "\(put.text)")
            }
            return (replica, tenant, key)
        } catch {
            await replica.stop()
            throw error
        }
    }

    /// Registers a new authenticator of ``model`` for `username` with a packed attestation by
    /// `issuer` (nil: a certificate of its own making): the answer.
    static func register(
        _ replica: MetadataReplica, tenant: String, key: String, username: String, issuer: MetadataTestPKI.Issued?
    ) async throws -> TestHTTP.Response {
        let authenticator = try SoftAuthenticator()
        authenticator.aaguid = try MetadataTestPKI.aaguid(model).bytes
        let attestation = try SoftAuthenticator.PackedAttestation(aaguid: authenticator.aaguid, issuer: issuer)
        return try await register(replica, tenant: tenant, key: key, username: username) {
            try authenticator.create($0, origin: origin, packed: attestation)
        }
    }

    /// Registers for `username` the credential `create` makes from the creation options: the answer.
    static func register(
        _ replica: MetadataReplica, tenant: String, key: String, username: String,
        create: (CreationOptionsJSON) throws -> RegistrationResponseJSON
    ) async throws -> TestHTTP.Response {
        let options = try await TestHTTP.json(
            "POST", "\(replica.base)/v1/tenants/\(tenant)/webauthn/registrations/options", token: key, json: #"{"username":"\#(username)"}"#)
        try #require(options.status == 200, "\(options.text)")
        let o = try JSONDecoder().decode(RegistrationOptionsResponse.self, from: Data(options.body))
        let finish = RegistrationFinishRequest(handle: o.handle, credential: try create(o.publicKey))
        return try await TestHTTP.json(
            "POST", "\(replica.base)/v1/tenants/\(tenant)/webauthn/registrations", token: key,
            json: String(decoding: try JSONEncoder().encode(finish), as: UTF8.self))
    }

    /// The user's credentials as registration lists them.
    static func listed(_ replica: MetadataReplica, tenant: String, key: String, username: String) async throws -> [CredentialResource] {
        let list = try await TestHTTP.send(
            "GET", "\(replica.base)/v1/tenants/\(tenant)/users/\(username)/credentials", headers: ["Authorization": "Bearer \(key)"])
        try #require(list.status == 200, "\(list.text)")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(CredentialList.self, from: Data(list.body)).credentials
    }

    /// `{required: false, acceptNone: false, acceptSelf: false}`: a §8.2.1 certificate of its own
    /// making, naming the listed model, is refused with the policy's none refusal (the old code
    /// only logged the untrusted chain and registered it as `basic`: 201); one issued by the
    /// model's metadata root registers as `basic`.
    @Test func aSelfMadeChainIsRefusedByAPolicyThatAcceptsNeitherNoneNorSelf() async throws {
        try TestStack.require()
        let root = try MetadataTestPKI.root("Soft Authenticator Attestation Root")
        let (replica, tenant, key) = try await Self.replica(
            port: 18187, root: root, policy: #"{"attestation":{"required":false,"acceptNone":false,"acceptSelf":false}}"#)
        defer { Task { await replica.stop() } }

        let refused = try await Self.register(replica, tenant: tenant, key: key, username: "self-made", issuer: nil)
        let problem = try refused.json()
        #expect(refused.status == 400 && problem["code"] as? String == "policy_attestation_required", "\(refused.status) \(refused.text)")
        #expect((problem["detail"] as? String)?.contains("/attestation/acceptNone") == true, "\(refused.text)")
        #expect(try await Self.listed(replica, tenant: tenant, key: key, username: "self-made").isEmpty)

        let genuine = try await Self.register(replica, tenant: tenant, key: key, username: "genuine", issuer: root)
        #expect(genuine.status == 201, "\(genuine.text)")
        let listed = try await Self.listed(replica, tenant: tenant, key: key, username: "genuine")
        #expect(listed.map(\.attestationType) == ["basic"] && listed.map(\.attestationFormat) == ["packed"])
    }

    /// `{required: false, acceptNone: true, acceptSelf: false}`: the self-made chain registers as
    /// `none`, keeping its format, in the answer and in the list (the old code said `basic`).
    @Test func aSelfMadeChainRegistersAsNoneUnderAPolicyThatAcceptsNone() async throws {
        try TestStack.require()
        let root = try MetadataTestPKI.root("Soft Authenticator Attestation Root")
        let (replica, tenant, key) = try await Self.replica(
            port: 18188, root: root, policy: #"{"attestation":{"required":false,"acceptNone":true,"acceptSelf":false}}"#)
        defer { Task { await replica.stop() } }

        let registered = try await Self.register(replica, tenant: tenant, key: key, username: "self-made", issuer: nil)
        let answer = try registered.json()
        #expect(registered.status == 201, "\(registered.text)")
        #expect(answer["attestationType"] as? String == "none" && answer["attestationFormat"] as? String == "packed", "\(registered.text)")
        let listed = try await Self.listed(replica, tenant: tenant, key: key, username: "self-made")
        #expect(listed.map(\.attestationType) == ["none"] && listed.map(\.attestationFormat) == ["packed"])
    }

    /// A U2F authenticator has no attested AAGUID: its attestation certificate chains to the
    /// roots metadata lists for the certificate's key identifier. Under the consumer default, a
    /// certified model registers as `basic`, a revoked one is refused (policy_authenticator_revoked),
    /// and a certificate metadata does not list counts as `none`. (With the anchors looked up
    /// by AAGUID only, every U2F chain was untrusted: `none`, and the revoked model registered.)
    @Test func aU2FChainIsTrustedThroughItsKeyIdentifier() async throws {
        try TestStack.require()
        let certifiedRoot = try MetadataTestPKI.root("U2F Certified Root"), revokedRoot = try MetadataTestPKI.root("U2F Revoked Root")
        let certified = try MetadataTestPKI.issue("U2F Certified", by: certifiedRoot)
        let revoked = try MetadataTestPKI.issue("U2F Revoked", by: revokedRoot)
        let unlisted = try MetadataTestPKI.issue("U2F Unlisted", by: try MetadataTestPKI.root("U2F Unlisted Root"))
        func keyIdentifier(_ issued: MetadataTestPKI.Issued) throws -> String { try #require(AttestationKeyIdentifier.of(try issued.certificate)) }
        let (replica, tenant, key) = try await Self.replica(
            port: 18189,
            entries: [
                MetadataTestPKI.entry(
                    keyIdentifiers: [try keyIdentifier(certified)], statuses: [("FIDO_CERTIFIED_L1", "2024-01-01")], roots: [certifiedRoot.base64]),
                MetadataTestPKI.entry(
                    keyIdentifiers: [try keyIdentifier(revoked)], statuses: [("FIDO_CERTIFIED_L1", "2024-01-01"), ("REVOKED", "2025-01-01")],
                    roots: [revokedRoot.base64]),
            ],
            policy: nil)
        defer { Task { await replica.stop() } }
        func register(_ username: String, _ attestation: MetadataTestPKI.Issued) async throws -> TestHTTP.Response {
            let authenticator = try SoftAuthenticator()
            return try await Self.register(replica, tenant: tenant, key: key, username: username) {
                try authenticator.create($0, origin: Self.origin, u2f: attestation)
            }
        }

        let certifiedAnswer = try await register("u2f-certified", certified)
        #expect(certifiedAnswer.status == 201, "\(certifiedAnswer.text)")
        let listed = try await Self.listed(replica, tenant: tenant, key: key, username: "u2f-certified")
        #expect(listed.map(\.attestationType) == ["basic"] && listed.map(\.attestationFormat) == ["fido-u2f"])

        let revokedAnswer = try await register("u2f-revoked", revoked)
        let revokedCode = try revokedAnswer.json()["code"] as? String
        #expect(revokedAnswer.status == 400 && revokedCode == "policy_authenticator_revoked", "\(revokedAnswer.text)")

        let unlistedAnswer = try await register("u2f-unlisted", unlisted)
        #expect(unlistedAnswer.status == 201, "\(unlistedAnswer.text)")
        let unlistedListed = try await Self.listed(replica, tenant: tenant, key: key, username: "u2f-unlisted")
        #expect(unlistedListed.map(\.attestationType) == ["none"])
    }
}

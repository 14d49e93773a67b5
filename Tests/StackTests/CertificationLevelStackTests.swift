import Crypto
import Foundation
import Schema
import Testing
import TestSupport

/// A FIDO policy's minimum certification level at sign-in, as at registration: a registration
/// replica with an MDS3 BLOB publishes, with the policy, the models the metadata certifies at
/// that level; the stack's authentication service refuses a credential of any other model
/// (`policy_certification_level`). Newer metadata that certifies the model higher publishes the
/// policy again, and the credential signs in. (A replica on a scratch database with its own
/// consumer group: ``MetadataReplica``.)
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct CertificationLevelStackTests {
    static let port = 18183
    static let origin = "http://localhost:8080"
    static let model = "6f7a8b9c-2d3e-4f5a-8b9c-2d3e4f5a6b7c"

    static func blob(no: Int, level: String, chain: MetadataTestPKI.Chain) throws -> String {
        try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(
                no: no, entries: [MetadataTestPKI.entry(aaguid: model, statuses: [(level, "2026-01-0\(no)")])], nextUpdate: "2027-01-01"),
            chain: chain)
    }

    func post<T: Encodable>(_ url: String, _ body: T, key: String? = nil) async throws -> TestHTTP.Response {
        var headers = ["Content-Type": "application/json"]
        if let key { headers["Authorization"] = "Bearer \(key)" }
        return try await TestHTTP.send("POST", url, headers: headers, body: Array(try JSONEncoder().encode(body)))
    }

    @Test func aMinimumCertificationLevelRefusesOtherModelsAtSignInUntilTheMetadataCertifiesThem() async throws {
        try TestStack.require()
        let replica = try await MetadataReplica.start(name: "mds-cert-replica", port: Self.port) {
            try Self.blob(no: 1, level: "FIDO_CERTIFIED_L1", chain: $0)
        }
        defer { Task { await replica.stop() } }
        let base = replica.base
        let (tenant, key) = try await replica.tenant(prefix: "mdscert", origin: Self.origin)

        // A credential of the model (FIDO_CERTIFIED_L1), registered before any minimum.
        let authenticator = try SoftAuthenticator()
        authenticator.aaguid = try MetadataTestPKI.aaguid(Self.model).bytes
        let optionsResponse = try await post("\(base)/v1/tenants/\(tenant)/webauthn/registrations/options", RegistrationOptionsRequest(username: "cert"), key: key)
        let o = try JSONDecoder().decode(RegistrationOptionsResponse.self, from: Data(optionsResponse.body))
        let registered = try await post(
            "\(base)/v1/tenants/\(tenant)/webauthn/registrations",
            RegistrationFinishRequest(handle: o.handle, credential: authenticator.create(o.publicKey, origin: Self.origin)), key: key)
        #expect(registered.status == 201, "\(registered.text)")

        let auth = "http://127.0.0.1:8082/v1/tenants/\(tenant)"
        /// A plain WebAuthn sign-in: its status and problem code (0 until the tenant's and the
        /// credential's events arrived).
        func signIn() async throws -> (Int, String?) {
            let r = try await post("\(auth)/webauthn/authentications/options", AuthenticationOptionsRequest(username: "cert"))
            guard r.status == 200, let o = try? JSONDecoder().decode(AuthenticationOptionsResponse.self, from: Data(r.body)) else { return (0, nil) }
            let done = try await post(
                "\(auth)/webauthn/authentications",
                AuthenticationFinishRequest(handle: o.handle, credential: try authenticator.get(o.publicKey, origin: Self.origin)))
            return (done.status, (try? done.json())?["code"] as? String)
        }
        #expect(await TestStack.eventually { (try? await signIn().0) == 200 })

        // A minimum of L2: the model (L1) no longer signs in.
        let policy = try await TestHTTP.json(
            "PUT", "\(base)/v1/admin/tenants/\(tenant)/fido-policy", token: TestStack.adminToken,
            json: #"{"attestation": {"required": true}, "minimumCertificationLevel": "FIDO_CERTIFIED_L2"}"#)
        #expect(policy.status == 200, "\(policy.text)")
        var last: (Int, String?) = (0, nil)
        #expect(await TestStack.eventually {
            last = (try? await signIn()) ?? (0, nil)
            return last.1 == "policy_certification_level"
        }, "\(last)")
        #expect(last.0 == 400)

        // The metadata now certifies the model at L2: the policy is published again with it,
        // and the credential signs in.
        try replica.writeBlob(Self.blob(no: 2, level: "FIDO_CERTIFIED_L2", chain: replica.chain))
        let refresh = try await TestHTTP.send("POST", "\(base)/v1/admin/metadata/refresh", headers: ["Authorization": "Bearer \(TestStack.adminToken)"])
        let changed = try refresh.json()["changed"] as? Bool
        #expect(refresh.status == 200 && changed == true, "\(refresh.text)")
        #expect(await TestStack.eventually { (try? await signIn().0) == 200 })
    }
}

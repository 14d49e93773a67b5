import Crypto
import Foundation
import Schema
import Testing
import TestSupport

/// FIDO metadata at run time: a registration replica loads an MDS3 BLOB from a file at
/// start-up; a newer BLOB that reports a model revoked suspends the credentials registered
/// with it, and sign-in refuses them once the event arrives. The replica runs on a scratch
/// database with its own consumer group, so it cannot disturb the stack's registration service;
/// its events reach the stack's authentication service like any replica's.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct MetadataStackTests {
    static let port = 18182
    static let origin = "http://localhost:8080"
    static let model = "5e6f7a8b-1c2d-4e3f-9a0b-1c2d3e4f5a6b"

    static func blob(no: Int, status: String, chain: MetadataTestPKI.Chain) throws -> String {
        try MetadataTestPKI.blob(
            payload: MetadataTestPKI.payload(
                no: no, entries: [MetadataTestPKI.entry(aaguid: model, statuses: [(status, "2026-01-0\(no)")])], nextUpdate: "2027-01-01"),
            chain: chain)
    }

    func post<T: Encodable, R: Decodable>(_ url: String, _ body: T, key: String? = nil, as: R.Type) async throws -> (Int, R?, [String: Any]) {
        var headers = ["Content-Type": "application/json"]
        if let key { headers["Authorization"] = "Bearer \(key)" }
        let r = try await TestHTTP.send("POST", url, headers: headers, body: Array(try JSONEncoder().encode(body)))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return (r.status, try? decoder.decode(R.self, from: Data(r.body)), (try? r.json()) ?? [:])
    }

    @Test func aNewerBLOBRevokingAModelSuspendsItsCredentials() async throws {
        try TestStack.require()
        let replica = try await MetadataReplica.start(name: "mds-replica", port: Self.port) { try Self.blob(no: 1, status: "FIDO_CERTIFIED_L1", chain: $0) }
        defer { Task { await replica.stop() } }
        let base = replica.base, chain = replica.chain

        let status = try await TestHTTP.send("GET", "\(base)/v1/admin/metadata", headers: ["Authorization": "Bearer \(TestStack.adminToken)"])
        let statusJSON = try status.json()
        #expect(status.status == 200 && statusJSON["number"] as? Int == 1 && statusJSON["entries"] as? Int == 1, "\(statusJSON)")

        let (tenant, key) = try await replica.tenant(prefix: "mds", origin: Self.origin)

        // A credential of the model, registered while the model is certified.
        let username = "mds-user"
        let authenticator = try SoftAuthenticator()
        authenticator.aaguid = try MetadataTestPKI.aaguid(Self.model).bytes
        let (s1, options, b1) = try await post(
            "\(base)/v1/tenants/\(tenant)/webauthn/registrations/options", RegistrationOptionsRequest(username: username), key: key,
            as: RegistrationOptionsResponse.self)
        let o = try #require(options, "\(s1) \(b1)")
        let (s2, resource, b2) = try await post(
            "\(base)/v1/tenants/\(tenant)/webauthn/registrations",
            RegistrationFinishRequest(
                handle: o.handle, credential: authenticator.create(o.publicKey, origin: Self.origin), deviceName: "Alice's Pixel 8"), key: key,
            as: CredentialResource.self)
        #expect(s2 == 201 && resource?.aaguid == Self.model, "\(b2)")
        // The model as the metadata names it, and the device the SDK named, in the answer and
        // in the list.
        let model = AuthenticatorModel(name: "Test Authenticator", icon: nil, protocolFamily: "fido2")
        #expect(resource?.model == model && resource?.deviceName == "Alice's Pixel 8", "\(b2)")
        let firstList = try await TestHTTP.send("GET", "\(base)/v1/tenants/\(tenant)/users/\(username)/credentials", headers: ["Authorization": "Bearer \(key)"])
        let listDecoder = JSONDecoder()
        listDecoder.dateDecodingStrategy = .iso8601
        let firstListed = try listDecoder.decode(CredentialList.self, from: Data(firstList.body)).credentials
        #expect(firstListed.first?.model == model && firstListed.first?.deviceName == "Alice's Pixel 8", "\(firstList.text)")

        // Sign-in works on the stack's authentication service.
        let auth = "http://127.0.0.1:8082/v1/tenants/\(tenant)"
        func signIn() async throws -> (Int, [String: Any]) {
            let (_, options, _) = try await post(
                "\(auth)/webauthn/authentications/options", AuthenticationOptionsRequest(username: username), as: AuthenticationOptionsResponse.self)
            // Until the tenant's and the credential's events arrive, there are no options.
            guard let o = options else { return (0, [:]) }
            let (status, _, body) = try await post(
                "\(auth)/webauthn/authentications", AuthenticationFinishRequest(handle: o.handle, credential: try authenticator.get(o.publicKey, origin: Self.origin)),
                as: AuthenticationResult.self)
            return (status, body)
        }
        #expect(await TestStack.eventually { (try? await signIn().0) == 200 })

        let admin = ["Authorization": "Bearer \(TestStack.adminToken)"]
        // The same BLOB again: nothing changes.
        let same = try await TestHTTP.send("POST", "\(base)/v1/admin/metadata/refresh", headers: admin)
        let sameJSON = try same.json()
        #expect(same.status == 200 && sameJSON["changed"] as? Bool == false, "\(sameJSON)")

        // A BLOB signed by a chain the replica does not trust is refused; the one in force stays.
        let stranger = try MetadataTestPKI.Chain()
        try replica.writeBlob(Self.blob(no: 5, status: "REVOKED", chain: stranger))
        let refused = try await TestHTTP.send("POST", "\(base)/v1/admin/metadata/refresh", headers: admin)
        let refusedCode = try refused.json()["code"] as? String
        #expect(refused.status == 502 && refusedCode == "metadata_chain_untrusted", "\(refused.text)")

        // BLOB 2 reports the model revoked: its credential is suspended, with the reason.
        try replica.writeBlob(Self.blob(no: 2, status: "REVOKED", chain: chain))
        let refresh = try await TestHTTP.send("POST", "\(base)/v1/admin/metadata/refresh", headers: admin)
        let outcome = try JSONDecoder().decode(MetadataRefreshOutcome.self, from: Data(refresh.body))
        #expect(refresh.status == 200)
        #expect(outcome == MetadataRefreshOutcome(changed: true, number: 2, previousNumber: 1, newlyRevokedAAGUIDs: [Self.model], credentialsSuspended: 1))
        let list = try await TestHTTP.send("GET", "\(base)/v1/tenants/\(tenant)/users/\(username)/credentials", headers: ["Authorization": "Bearer \(key)"])
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let listed = try decoder.decode(CredentialList.self, from: Data(list.body)).credentials
        #expect(listed.map(\.status) == ["suspended"] && listed.map(\.statusReason) == ["authenticator_revoked"])
        #expect(await TestStack.eventually { (try? await signIn().1["code"] as? String) == "credential_suspended" })

        // New registrations of the model are refused by the policy.
        let again = try SoftAuthenticator()
        again.aaguid = authenticator.aaguid
        let (_, options2, _) = try await post(
            "\(base)/v1/tenants/\(tenant)/webauthn/registrations/options", RegistrationOptionsRequest(username: "mds-other"), key: key,
            as: RegistrationOptionsResponse.self)
        let o2 = try #require(options2)
        let (s3, _, b3) = try await post(
            "\(base)/v1/tenants/\(tenant)/webauthn/registrations",
            RegistrationFinishRequest(handle: o2.handle, credential: again.create(o2.publicKey, origin: Self.origin)), key: key,
            as: CredentialResource.self)
        #expect(s3 == 400 && b3["code"] as? String == "policy_authenticator_revoked", "\(b3)")
    }

    /// A replica whose BLOB cannot be loaded when it starts (its source down, its file being
    /// replaced) starts all the same, without metadata, and installs a BLOB once one loads.
    /// Before, the registration service exited at start-up: a third party's outage kept every
    /// new replica down.
    @Test func aReplicaStartsWhenItsBLOBCannotBeLoaded() async throws {
        try TestStack.require()
        let replica = try await MetadataReplica.start(name: "mds-down", port: 18184) { _ in "not a BLOB" }
        defer { Task { await replica.stop() } }
        let admin = ["Authorization": "Bearer \(TestStack.adminToken)"]
        let status = try await TestHTTP.send("GET", "\(replica.base)/v1/admin/metadata", headers: admin)
        let statusJSON = try status.json()
        #expect(status.status == 200 && statusJSON["configured"] as? Bool == true && statusJSON["number"] == nil, "\(statusJSON)")
        let log = (try? String(contentsOfFile: replica.logPath, encoding: .utf8)) ?? ""
        #expect(log.contains("the FIDO metadata could not be loaded at start-up"))

        try replica.writeBlob(Self.blob(no: 1, status: "FIDO_CERTIFIED_L1", chain: replica.chain))
        let refresh = try await TestHTTP.send("POST", "\(replica.base)/v1/admin/metadata/refresh", headers: admin)
        let outcome = try JSONDecoder().decode(MetadataRefreshOutcome.self, from: Data(refresh.body))
        #expect(refresh.status == 200 && outcome.changed && outcome.number == 1, "\(refresh.text)")
    }
}


import Crypto
import FIDO
import Foundation
import HTTPServer
import JSON
import Schema
import ServiceKit
import ServiceTestSupport
import Testing
import TestSupport
@testable import RegistrationService

/// FIDO UAF registration through the registration service's HTTP API over a scratch database,
/// with a software UAF authenticator: request, response, the stored keys and their events, and
/// the refusals (replay, wrong facet, wrong AppID, policy).
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct UAFRegistrationTests {
    typealias Harness = ServiceHarness<RegistrationService>
    static let appID = "http://localhost:8080/registration/v1/tenants/acme/uaf/facets"

    static func request(_ h: Harness, key: String, username: String = "alice") async throws -> UAFRegistrationRequest {
        let response = await h.send("POST", "/v1/tenants/acme/uaf/registrations/requests", bearer: key, json: #"{"username":"\#(username)"}"#)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let envelope = try JSONValueDecoder().decode(UAFRequestEnvelope.self, from: response.body)
        #expect(envelope.uafRequest.count == 2)
        return try JSONValueDecoder().decode(UAFRegistrationRequest.self, from: envelope.uafRequest[0])
    }

    static func finish(_ h: Harness, key: String, _ uafResponse: String) async throws -> (status: Int, body: String) {
        let body = String(decoding: try JSONValueEncoder().encodeToBytes(UAFResponseBody(uafResponse: uafResponse)), as: UTF8.self)
        let response = await h.send("POST", "/v1/tenants/acme/uaf/registrations", bearer: key, json: body)
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    @Test func registersAndRefusesWhatTheRulesRefuse() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        let key = try await CredentialManagementTests.tenantWithKey(h)

        // The facets document: the tenant's origins until settings name its facets.
        let facets = await h.send("GET", "/v1/tenants/acme/uaf/facets")
        #expect(facets.status == 200 && facets.header("content-type") == "application/fido.trusted-apps+json")
        let list = try JSONValueDecoder().decode(UAFTrustedFacetList.self, from: facets.body)
        #expect(list.trustedFacets.first?.ids == ["https://acme.example"])

        let request = try await Self.request(h, key: key)
        #expect(request.header.appID == Self.appID && request.header.op == "Reg" && request.header.upv == .v1_2 && request.username == "alice")
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://acme.example")
        let uafResponse = try authenticator.register(request)
        let created = try await Self.finish(h, key: key, uafResponse)
        #expect(created.status == 201, "\(created.body)")
        #expect(created.body.contains(#""aaid":"ABCD#0001""#) && created.body.contains(#""attestationType":"basic_surrogate""#))
        // The same response again: its challenge is used.
        let replay = try await Self.finish(h, key: key, uafResponse)
        #expect(replay.status == 400 && replay.body.contains("challenge_replayed"), "\(replay.body)")
        let listed = String(decoding: await h.send("GET", "/v1/tenants/acme/users/alice/uaf/registrations", bearer: key).body, as: UTF8.self)
        #expect(listed.contains(Base64URL.encode(authenticator.registrations[0].keyID)))
        let registered = try await h.published().filter { $0.type == UAFAuthenticatorRegistered.eventType }
        #expect(registered.count == 1)
        let event = try EventCoding.decode(UAFAuthenticatorRegistered.self, from: Array(registered[0].data.utf8))
        // Named by subject reference, never by username (#18).
        #expect(event.subjectRef == h.context.configuration.subjectKey.ref(tenant: "acme", username: "alice") && !registered[0].data.contains("alice"))
        #expect(event.aaid == "ABCD#0001" && event.keyEncoding == 0x100 && event.signatureAlgorithm == 1)
        // Registered without a metadata statement: no metadata characteristics for sign-in.
        #expect(event.userVerificationDetails == nil && event.keyProtection == nil)

        // Beside passkeys and other methods in the user's methods.
        let methods = String(decoding: await h.send("GET", "/v1/tenants/acme/users/alice/methods", bearer: key).body, as: UTF8.self)
        #expect(methods.contains(#""type":"uaf""#) && methods.contains("ABCD#0001:"), "\(methods)")

        // A facet the tenant does not trust; an AppID that is not the tenant's.
        let stranger = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: "https://evil.example")
        let wrongFacet = try await Self.finish(h, key: key, try stranger.register(try await Self.request(h, key: key)))
        #expect(wrongFacet.status == 400 && wrongFacet.body.contains("uaf_facet_not_trusted"), "\(wrongFacet.body)")
        let wrongApp = try await Self.finish(
            h, key: key, try authenticator.register(try await Self.request(h, key: key), appID: "https://evil.example/facets"))
        #expect(wrongApp.status == 400 && wrongApp.body.contains("uaf_app_id_mismatch"), "\(wrongApp.body)")
        // serverData that this service did not seal.
        let forged = try await Self.finish(h, key: key, try authenticator.register(try await Self.request(h, key: key)) { $0.header.serverData = "AAAA" })
        #expect(forged.status == 400 && forged.body.contains("invalid_handle"), "\(forged.body)")

        // Settings: an Android facet, and a policy that disallows the vendor ABCD.
        let settings = await h.send(
            "PUT", "/v1/admin/tenants/acme/uaf-settings", bearer: Harness.adminToken,
            json: #"{"facetIds":["https://acme.example","android:apk-key-hash:bE0f1WtRJrZv"],"policy":{"accepted":[[{"assertionSchemes":["UAFV1TLV"]}]],"disallowed":[{"vendorID":["ABCD"]}]}}"#)
        #expect(settings.status == 200, "\(String(decoding: settings.body, as: UTF8.self))")
        let refused = try await Self.finish(h, key: key, try authenticator.register(try await Self.request(h, key: key)))
        #expect(refused.status == 400 && refused.body.contains("policy_uaf_disallowed"), "\(refused.body)")
        let android = SoftUAFAuthenticator(aaid: "EEEE#0001", facetID: "android:apk-key-hash:bE0f1WtRJrZv")
        #expect(try await Self.finish(h, key: key, try android.register(try await Self.request(h, key: key))).status == 201)
        // Metadata that newly revokes the AAID suspends its keys, with their event.
        let refresher = MetadataRefresher(
            metadata: MetadataService(configuration: MetadataBLOB.Configuration(roots: [])), source: MetadataFileSource(path: "/nonexistent"),
            context: h.context, interval: .seconds(3600), initialUpdate: nil)
        let suspendedCount = try await refresher.applyInitial(
            MetadataUpdate(
                previousNumber: 1, number: 2, newlyRevokedAAGUIDs: [], newlyRevokedKeyIdentifiers: [], newlyRevokedAAIDs: ["eeee#0001"], issues: []))
        #expect(suspendedCount == 1)
        let suspended = try #require(try await h.published().last { $0.type == UAFAuthenticatorStatusChanged.eventType })
        #expect(try EventCoding.decode(UAFAuthenticatorStatusChanged.self, from: Array(suspended.data.utf8)).status == "suspended")
        let afterRevocation = String(decoding: await h.send("GET", "/v1/tenants/acme/users/alice/uaf/registrations", bearer: key).body, as: UTF8.self)
        #expect(afterRevocation.contains(#""status":"suspended""#), "\(afterRevocation)")
        let change = try #require(try await h.published().last { $0.type == UAFSettingsChanged.eventType })
        let decoded = try EventCoding.decode(UAFSettingsChanged.self, from: Array(change.data.utf8))
        #expect(decoded.facetIds.count == 2 && decoded.revision == 1)
        // A malformed settings document names its field.
        let bad = await h.send("PUT", "/v1/admin/tenants/acme/uaf-settings", bearer: Harness.adminToken, json: #"{"facetIds":["ftp://x"]}"#)
        #expect(bad.status == 400 && String(decoding: bad.body, as: UTF8.self).contains("facetIds[0]"))
        let badPolicy = await h.send("PUT", "/v1/admin/tenants/acme/uaf-settings", bearer: Harness.adminToken, json: #"{"facetIds":[],"policy":{"accepted":[]}}"#)
        #expect(badPolicy.status == 400 && String(decoding: badPolicy.body, as: UTF8.self).contains(#""field":"policy""#))
        // Deregistration: the key goes, the answer is the DeregistrationRequest for the client.
        let keyID = Base64URL.encode(authenticator.registrations[0].keyID)
        let path = "/v1/tenants/acme/users/alice/uaf/registrations/ABCD%230001/\(keyID)"
        #expect(await h.send("DELETE", "/v1/tenants/acme/users/bob/uaf/registrations/ABCD%230001/\(keyID)", bearer: key).status == 404)
        #expect(await h.send("DELETE", "/v1/tenants/acme/users/alice/uaf/registrations/ABCD0001/\(keyID)", bearer: key).status == 400)
        // Rename, suspend and resume; each status change is an event.
        let renamed = await h.send("PATCH", path, bearer: key, json: #"{"friendlyName":"Phone"}"#)
        #expect(renamed.status == 200 && String(decoding: renamed.body, as: UTF8.self).contains(#""friendlyName":"Phone""#))
        let paused = await h.send("PATCH", path, bearer: key, json: #"{"status":"suspended"}"#)
        #expect(paused.status == 200 && String(decoding: paused.body, as: UTF8.self).contains(#""status":"suspended""#))
        let pausedEvent = try #require(try await h.published().last { $0.type == UAFAuthenticatorStatusChanged.eventType })
        #expect(try EventCoding.decode(UAFAuthenticatorStatusChanged.self, from: Array(pausedEvent.data.utf8)).keyId == keyID)
        #expect(await h.send("PATCH", path, bearer: key, json: #"{"status":"active"}"#).status == 200)
        #expect(await h.send("PATCH", path, bearer: key, json: #"{"status":"deleted"}"#).status == 400)
        let deleted = await h.send("DELETE", path, bearer: key)
        #expect(deleted.status == 200, "\(String(decoding: deleted.body, as: UTF8.self))")
        let dereg = try JSONValueDecoder().decode(UAFDeregistrationResult.self, from: deleted.body)
        let message = try JSONValueDecoder().decode(UAFDeregistrationRequest.self, from: dereg.uafRequest[0])
        #expect(message.header.op == "Dereg" && message.header.appID == Self.appID)
        #expect(message.authenticators == [UAFDeregisterAuthenticator(aaid: "ABCD#0001", keyID: keyID)])
        #expect(await h.send("DELETE", path, bearer: key).status == 404)
        #expect(await h.send("PATCH", path, bearer: key, json: #"{"friendlyName":"Gone"}"#).status == 404)
        let remaining = String(decoding: await h.send("GET", "/v1/tenants/acme/users/alice/uaf/registrations", bearer: key).body, as: UTF8.self)
        #expect(!remaining.contains(keyID))
        let status = try #require(try await h.published().last { $0.type == UAFAuthenticatorStatusChanged.eventType })
        let statusEvent = try EventCoding.decode(UAFAuthenticatorStatusChanged.self, from: Array(status.data.utf8))
        #expect(statusEvent.status == "deleted" && statusEvent.keyId == keyID && statusEvent.aaid == "ABCD#0001")
    }

    /// A secp256k1 authenticator (UAF Registry 0x06, DER signatures) registers through the
    /// service, its key announced with its algorithm; with the gateway's certificate configured
    /// (`SIGNET_UAF_TLS_SERVER_CERTIFICATES`) a registration whose channel binding names another
    /// server's certificate is refused.
    @Test func registersASecp256k1KeyAndChecksChannelBinding() async throws {
        let gateway = try MetadataTestPKI.root("gateway.example.test")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("uaf-gateway-\(UUID().uuidString).pem").path
        let pem = "-----BEGIN CERTIFICATE-----\n" + Data(gateway.der).base64EncodedString(options: .lineLength64Characters) + "\n-----END CERTIFICATE-----\n"
        try Data(pem.utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let h = try await Harness.withDatabase(environment: ["SIGNET_UAF_TLS_SERVER_CERTIFICATES": file])
        defer { Task { await h.close() } }
        let key = try await CredentialManagementTests.tenantWithKey(h)

        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0006", algorithm: .secp256k1ECDSASHA256DER, facetID: "https://acme.example")
        authenticator.channelBinding.tlsServerCertificate = UAFServerCertificate(try MetadataTestPKI.root("proxy.example").certificate).tlsServerCertificate
        let intercepted = try await Self.finish(h, key: key, try authenticator.register(try await Self.request(h, key: key)))
        #expect(intercepted.status == 400 && intercepted.body.contains("uaf_channel_binding_mismatch"), "\(intercepted.body)")

        authenticator.channelBinding = UAFChannelBinding()
        authenticator.channelBinding.serverEndPoint = UAFServerCertificate(try gateway.certificate).serverEndPoint
        let created = try await Self.finish(h, key: key, try authenticator.register(try await Self.request(h, key: key)))
        #expect(created.status == 201 && created.body.contains(#""signatureAlgorithm":6"#), "\(created.body)")
        let registered = try await h.published().filter { $0.type == UAFAuthenticatorRegistered.eventType }
        let event = try EventCoding.decode(UAFAuthenticatorRegistered.self, from: Array(try #require(registered.last).data.utf8))
        #expect(event.aaid == "ABCD#0006" && event.signatureAlgorithm == 6 && event.keyEncoding == 0x100)
    }
}

import Foundation
import HTTPServer
import JSON
import Schema
import ServiceKit
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport
@testable import OOBService

/// The name check of identity documents (no database).
@Suite struct IdentityNameCheckTests {
    @Test func familyNameAndFirstGivenNameMustBeWordsOfTheProfileName() {
        let match = IdentityDocumentRoutes.nameMatches
        #expect(match("Anna Maria Eriksson", "ERIKSSON", "ANNA MARIA"))
        // Middle names may be left out, order and case do not matter, diacritics are folded.
        #expect(match("Eriksson, Anna", "ERIKSSON", "ANNA MARIA"))
        #expect(match("Ånna Erikßon-Eriksson", "ERIKSSON", "ANNA"))
        #expect(match("José Núñez García", "NUNEZ GARCIA", "JOSE"))
        // Another family name, another first name, only part of a compound family name.
        #expect(!match("Anna Maria Svensson", "ERIKSSON", "ANNA MARIA"))
        #expect(!match("Maria Eriksson", "ERIKSSON", "ANNA MARIA"))
        #expect(!match("José García", "NUNEZ GARCIA", "JOSE"))
        // A document without a given name never matches.
        #expect(!match("Eriksson", "ERIKSSON", ""))
    }

    @Test func todayIsTheUTCDay() {
        // 2026-12-02T23:30:00Z is the 2nd everywhere the check runs.
        #expect(IdentityDocumentRoutes.today(Date(timeIntervalSince1970: 1_796_254_200)).description == "2026-12-02")
    }
}

/// Identity documents in process, over a scratch database, with a stand-in for the
/// registration service's vault-subject route and the pii vault: a bound phone registers a
/// document (user-auth key), the vault receives the personal data and this service keeps none
/// of it; EXECUTIVE approvals follow the document; refusals have their codes.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct IdentityDocumentTests {
    /// Answers `GET …/users/{u}/vault-subject` for the users it is given, `POST …/pii/{ref}/read`
    /// with the profile name, and `POST …/pii` by recording the value.
    final class PeerStub: Sendable {
        struct State {
            var users: [String: UserVaultSubject] = [:]
            var names: [String: String] = [:]
            var stored: [PIIStoreRequest] = []
            /// 201, or the status of a problem answering a store (after recording it).
            var storeStatus = 201
        }
        let state = Mutex(State())
        let server: HTTPServer

        init() throws {
            let box = Box()
            server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in box.handle(request) }
            try server.start()
            box.stub.withLock { $0 = self }
        }

        /// Lets the handler reach the stub made after the server.
        final class Box: Sendable {
            let stub = Mutex<PeerStub?>(nil)
            func handle(_ request: HTTPRequest) -> HTTPResponse {
                stub.withLock { $0 }?.handle(request) ?? HTTPResponse(status: 503)
            }
        }

        func handle(_ request: HTTPRequest) -> HTTPResponse {
            let parts = request.path.split(separator: "/").map(String.init)
            let notFound = HTTPResponse(
                status: 404, headers: [("Content-Type", "application/problem+json")],
                body: Array(#"{"type":"about:blank","title":"Not found","status":404,"code":"not_found"}"#.utf8))
            func json(_ value: some Encodable, status: Int = 200) -> HTTPResponse {
                HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: (try? JSONValueEncoder().encodeToBytes(value)) ?? [])
            }
            switch (request.method, parts.count) {
            case ("GET", 7) where parts[4] == "users" && parts[6] == "vault-subject":
                let username = parts[5].removingPercentEncoding ?? parts[5]
                return state.withLock { $0.users[username] }.map { json($0) } ?? notFound
            case ("POST", 7) where parts[4] == "pii" && parts[6] == "read":
                return state.withLock { $0.names[parts[5]] }.map { json(PIIValue(kind: "name", value: $0)) } ?? notFound
            case ("POST", 5) where parts[4] == "pii":
                guard let body = try? JSONValueDecoder().decode(PIIStoreRequest.self, from: request.body) else { return notFound }
                let status = state.withLock {
                    $0.stored.append(body)
                    return $0.storeStatus
                }
                guard status == 201 else {
                    return HTTPResponse(
                        status: status, headers: [("Content-Type", "application/problem+json")],
                        body: Array(#"{"type":"about:blank","title":"x","status":\#(status),"code":"internal_error"}"#.utf8))
                }
                return json(PIIReference(ref: body.ref ?? "pii_" + String(repeating: "ab", count: 16), masked: "identity document"), status: 201)
            default:
                return notFound
            }
        }

        var url: String { "http://127.0.0.1:\(server.boundPort)" }
        func user(_ username: String, subject: String, fullName: String?) {
            state.withLock {
                $0.users[username] = UserVaultSubject(subject: subject, fullNameRef: fullName.map { _ in "pii_" + String(repeating: "cd", count: 16) })
                if let fullName { $0.names["pii_" + String(repeating: "cd", count: 16)] = fullName }
            }
        }
        var stored: [PIIStoreRequest] { state.withLock { $0.stored } }
    }

    static func make(_ stub: PeerStub) async throws -> OOBFixture {
        let h = try await ServiceHarness<OOBService>.withDatabase(environment: [
            "SIGNET_OOB_KEY_SEAL": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "SIGNET_REGISTRATION_URL": stub.url, "SIGNET_PII_URL": stub.url,
        ])
        try await h.seedTenant("acme", apiKey: OOBFixture.key, origins: ["http://localhost:8080"])
        return OOBFixture(h: h)
    }

    static let license = IdentityDocumentSamples.driverLicense(
        familyName: "SAMPLE", firstName: "MICHAEL", middleName: "JOHN", number: "T64235789", birth: "06061986", expiry: "12102031")

    func register(_ f: OOBFixture, _ phone: SoftwareDevice, _ device: String, format: String = "aamva", text: String = license) async throws -> HTTPResponse {
        try await f.device(
            phone, "POST", "/v1/tenants/acme/devices/\(device)/identity-documents", json: try phone.identityDocument(format: format, text: text, deviceId: device))
    }

    func ask(_ f: OOBFixture, _ username: String, allowLowerLevel: Bool = false) async throws -> (id: String, hash: String) {
        let r = await f.rp(
            "POST", "/v1/tenants/acme/approvals",
            json: #"{"username":"\#(username)","level":"EXECUTIVE","action":"pay","resource":"r","allowLowerLevel":\#(allowLowerLevel)}"#)
        try #require(r.status == 201, "\(r.text)")
        return (try #require(r.object()["approvalId"] as? String), try #require(r.object()["detailsHash"] as? String))
    }

    func accept(_ f: OOBFixture, _ phone: SoftwareDevice, _ device: String, _ a: (id: String, hash: String)) async throws -> HTTPResponse {
        try await f.device(
            phone, "POST", "/v1/tenants/acme/devices/\(device)/approvals/\(a.id)/decision",
            json: try phone.decision("ACCEPT", approvalId: a.id, detailsHash: a.hash, withUserAuthKey: true))
    }

    @Test func aRegisteredLicenseGivesExecutiveAndTheVaultHoldsItsData() async throws {
        let stub = try PeerStub()
        defer { Task { await stub.server.shutdown() } }
        let f = try await Self.make(stub)
        defer { Task { await f.h.close() } }
        stub.user("alice", subject: "c3ViamVjdA", fullName: "Michael Sample")
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "alice")

        let before = try await ask(f, "alice")
        let refused = try await accept(f, phone, device, before)
        #expect(refused.status == 403 && refused.code == "identity_document_required", "\(refused.text)")

        let registered = try await register(f, phone, device)
        #expect(registered.status == 201, "\(registered.text)")
        let o = registered.object()
        #expect(o["documentType"] as? String == "DRIVER_LICENSE" && o["nameCheck"] as? String == "MATCHED" && o["jurisdiction"] as? String == "636000")
        // The vault got the personal data under the user's subject; this database has none of it.
        let stored = try #require(stub.stored.first)
        #expect(stub.stored.count == 1 && stored.subject == "c3ViamVjdA" && stored.kind == "identity_document")
        let value = try JSONValueDecoder().decode([String: String].self, from: Array(stored.value.utf8))
        #expect(value["familyName"] == "SAMPLE" && value["givenNames"] == "MICHAEL JOHN" && value["documentNumber"] == "T64235789")
        #expect(value["birthDate"] == "1986-06-06" && value["expiresOn"] == "2031-12-10" && value["issuingCountry"] == "USA")
        let rows = try await f.h.context.pool.withConnection { try await $0.query("SELECT * FROM identity_documents") }
        let row = Array(rows)
        try #require(row.count == 1)
        #expect(row[0].string("username") == "alice" && row[0].string("expires_on") == "2031-12-10" && row[0].string("pii_ref") == stored.ref && stored.ref != nil)
        for column in ["document_type", "issuing_country", "jurisdiction", "identity_level", "name_check", "device_id"] {
            let text = row[0].string(column) ?? ""
            #expect(!text.contains("SAMPLE") && !text.contains("T64235789"), "\(column)")
        }

        // The approval refused before is accepted now, at EXECUTIVE.
        let accepted = try await accept(f, phone, device, before)
        #expect(accepted.status == 200, "\(accepted.text)")
        let seen = await f.rp("GET", "/v1/tenants/acme/approvals/\(before.id)")
        #expect(seen.object()["status"] as? String == "ACCEPTED" && seen.object()["decidedLevel"] as? String == "EXECUTIVE", "\(seen.text)")

        // The user's data lists it; the erasure deletes it.
        let store = OOBUserData()
        let user = UserDataSubject(tenant: "acme", username: "alice", subject: "c3ViamVjdA", key: f.h.context.configuration.subjectKey)
        let exported = try await f.h.context.pool.withConnection { try await store.export(user, reader: "test", on: $0) }
        #expect(exported.objectValue?["identityDocuments"]?.arrayValue?.count == 1)
        let tallies = try await f.h.context.pool.withConnection { try await store.erase(user, on: $0) }
        #expect(tallies["identityDocuments"] == 1)
    }

    @Test func refusals() async throws {
        let stub = try PeerStub()
        defer { Task { await stub.server.shutdown() } }
        let f = try await Self.make(stub)
        defer { Task { await f.h.close() } }
        stub.user("bob", subject: "Ym9i", fullName: "Robert Other")
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "bob")

        #expect(try await register(f, phone, device).code == "identity_document_name_mismatch")
        #expect(try await register(f, phone, device, format: "pdf").code == "invalid_field")
        let broken = try await register(f, phone, device, text: Self.license.replacingOccurrences(of: "DBA12102031", with: "DBA13102031"))
        #expect(broken.code == "identity_document_invalid" && !broken.text.contains("SAMPLE"), "\(broken.text)")
        #expect((broken.object()["detail"] as? String)?.contains("date (DBA)") == true, "\(broken.text)")
        let expired = IdentityDocumentSamples.passport(surname: "OTHER", givenNames: "ROBERT", number: "X1", birth: "900101", expiry: "200101")
        #expect(try await register(f, phone, device, format: "mrz", text: expired).code == "identity_document_expired")
        let tooLong = String(repeating: "A", count: 2049)
        #expect(try await register(f, phone, device, format: "mrz", text: tooLong).code == "invalid_field")
        // The device key does not register a document; a phone without a user-auth key cannot.
        let byDeviceKey = try await f.device(
            phone, "POST", "/v1/tenants/acme/devices/\(device)/identity-documents",
            json: try phone.identityDocument(format: "aamva", text: Self.license, deviceId: device, key: phone.deviceKey))
        #expect(byDeviceKey.code == "identity_document_signature_invalid")
        let plain = try SoftwareDevice()
        let plainDevice = try await f.enrol(plain, as: "bob", security: false)
        #expect(try await register(f, plain, plainDevice).code == "identity_document_signature_invalid")
        // A device bound to nobody; a user the registration service does not know.
        let loose = try SoftwareDevice()
        let created = try await f.device(loose, "POST", "/v1/tenants/acme/devices", json: try loose.upsertBody())
        let looseDevice = try #require(created.object()["deviceId"] as? String)
        #expect(try await register(f, loose, looseDevice).code == "device_not_bound")
        let stranger = try SoftwareDevice()
        let strangerDevice = try await f.enrol(stranger, as: "carol")
        #expect(try await register(f, stranger, strangerDevice).code == "identity_subject_unknown")
        #expect(stub.stored.isEmpty)

        // Without a document: allowLowerLevel accepts at ESSENTIAL.
        let lenient = try await ask(f, "bob", allowLowerLevel: true)
        #expect(try await accept(f, phone, device, lenient).status == 200)
        let seen = await f.rp("GET", "/v1/tenants/acme/approvals/\(lenient.id)")
        #expect(seen.object()["status"] as? String == "ACCEPTED" && seen.object()["decidedLevel"] as? String == "ESSENTIAL", "\(seen.text)")
    }

    /// A value the vault may hold with nothing here referring to it is withdrawn through the
    /// outbox (`VaultWithdrawalRequested`, durable): a store whose answer was lost (a 5xx after
    /// storing), and a stored value whose document could not be recorded (a database fault,
    /// injected as a trigger). A store the vault refused (4xx) withdraws nothing.
    @Test func aValueNothingRefersToIsWithdrawnThroughTheOutbox() async throws {
        let stub = try PeerStub()
        let f = try await Self.make(stub)
        defer { Task { await f.h.close(); await stub.server.shutdown() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "dave")
        stub.user("dave", subject: "c3ViamVjdC1kYXZl", fullName: nil)
        func withdrawals() async throws -> [String] {
            try await f.h.published(VaultWithdrawalRequested.self).map(\.piiRef)
        }
        func documents() async throws -> Int {
            try await f.h.context.pool.withConnection { try await $0.query("SELECT count(*) AS n FROM identity_documents").first?.int("n") ?? -1 }
        }

        stub.state.withLock { $0.storeStatus = 400 }
        #expect(try await register(f, phone, device).status == 400)
        #expect(try await withdrawals().isEmpty)

        stub.state.withLock { $0.storeStatus = 500 }
        let lost = try await register(f, phone, device)
        #expect(lost.status == 503, "\(lost.text)")
        #expect(try await withdrawals() == [stub.stored[1].ref].compactMap { $0 })
        #expect(try await documents() == 0)

        stub.state.withLock { $0.storeStatus = 201 }
        try await f.h.context.pool.withConnection { conn in
            try await conn.query("CREATE FUNCTION refuse_documents() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$")
            try await conn.query("CREATE TRIGGER refuse_documents BEFORE INSERT ON identity_documents FOR EACH ROW EXECUTE FUNCTION refuse_documents()")
        }
        let unrecorded = try await register(f, phone, device)
        #expect(unrecorded.status == 500, "\(unrecorded.text)")
        let sent = stub.stored.compactMap(\.ref)
        #expect(sent.count == 3 && Set(sent).count == 3)
        #expect(try await withdrawals() == [sent[1], sent[2]])
        #expect(try await documents() == 0)
    }

    @Test func theVaultUnreachableIs503AndNothingIsRecorded() async throws {
        let stub = try PeerStub()
        let f = try await Self.make(stub)
        defer { Task { await f.h.close() } }
        let phone = try SoftwareDevice()
        let device = try await f.enrol(phone, as: "dave")
        await stub.server.shutdown()
        let r = try await register(f, phone, device)
        #expect(r.status == 503, "\(r.text)")
        let rows = try await f.h.context.pool.withConnection { try await $0.query("SELECT id FROM identity_documents") }
        #expect(rows.isEmpty)
    }
}

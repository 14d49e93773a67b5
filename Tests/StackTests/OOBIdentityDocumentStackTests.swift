import Foundation
import Postgres
import Schema
import Testing
import TestSupport

/// EXECUTIVE approvals through the running stack (issue #16): a user opened by a sign-up with
/// a profile name binds a software phone; an EXECUTIVE approval is refused until the phone
/// registers the user's driver's license (AAMVA text, signed by the user-auth key), then
/// accepted at EXECUTIVE; expired documents and documents of another name are refused; a
/// passport MRZ works for a user without a profile name; `allowLowerLevel` lets a user without
/// a document accept at ESSENTIAL. The document's personal data is in the pii vault only: not
/// in the oob database, any topic or any log; the user's data fetch shows it and the purge
/// erases it.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(4)))
struct OOBIdentityDocumentStackTests {
    typealias Adaptive = AdaptiveSignInStackTests
    typealias Data_ = UserDataStackTests
    typealias OOB = OOBApprovalStackTests
    let adaptive = Adaptive()

    static func code(_ r: TestHTTP.Response) -> String? { (try? r.json())?["code"] as? String }

    /// Opens the account by a sign-up with a profile: `fullName` as its name if given, else an
    /// e-mail address only (a sign-up opens the account at once when it carries a profile).
    func signUp(_ t: Adaptive.Tenant, _ username: String, fullName: String?) async throws {
        let profile = fullName.map { #", "profile": {"fullName": "\#($0)"}"# } ?? #", "profile": {"email": "\#(username)@example.org"}"#
        let r = try await TestHTTP.send(
            "POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/signups",
            headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"],
            body: Array(#"{"username": "\#(username)"\#(profile)}"#.utf8))
        try #require(r.status == 201, "\(r.text)")
    }

    func ask(_ t: Adaptive.Tenant, _ username: String, level: String = "EXECUTIVE", allowLowerLevel: Bool? = nil) async throws -> (id: String, hash: String) {
        let allow = allowLowerLevel.map { #","allowLowerLevel":\#($0)"# } ?? ""
        let r = try await TestHTTP.json(
            "POST", "\(OOB.oob)/v1/tenants/\(t.id)/approvals", token: t.key,
            json: #"{"username":"\#(username)","level":"\#(level)","action":"transfer","resource":"payments"\#(allow)}"#)
        try #require(r.status == 201, "\(r.text)")
        return (try #require(try r.json()["approvalId"] as? String), try #require(try r.json()["detailsHash"] as? String))
    }

    func decide(_ t: Adaptive.Tenant, _ phone: SoftwareDevice, _ device: String, _ a: (id: String, hash: String), userAuth: Bool = true) async throws
        -> TestHTTP.Response
    {
        try await OOB.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/approvals/\(a.id)/decision",
            json: try phone.decision("ACCEPT", approvalId: a.id, detailsHash: a.hash, withUserAuthKey: userAuth))
    }

    func register(_ t: Adaptive.Tenant, _ phone: SoftwareDevice, _ device: String, format: String, text: String) async throws -> TestHTTP.Response {
        try await OOB.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/identity-documents",
            json: try phone.identityDocument(format: format, text: text, deviceId: device))
    }

    func status(_ t: Adaptive.Tenant, _ id: String) async throws -> [String: Any] {
        try await TestHTTP.send("GET", "\(OOB.oob)/v1/tenants/\(t.id)/approvals/\(id)", headers: ["Authorization": "Bearer \(t.key)"]).json()
    }

    @Test func anExecutiveApprovalIsAcceptedOnceADriversLicenseIsRegistered() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await OOB().waitForOOBKey(t)
        let marker = UInt32.random(in: 100_000...999_999)
        let username = "exec-\(marker)"
        // Letters only in names (an AAMVA or MRZ name has no digits): the marker is spelled.
        let family = "SAMPLE" + String(String(marker).map { Character(UnicodeScalar(0x41 + Int(String($0))!)!) })
        let number = "T\(marker)89"
        try await signUp(t, username, fullName: "Michael John \(family.capitalized)")
        let phone = try SoftwareDevice(platform: "ios")
        let device = try await OOB.enrol(phone, as: username, tenant: t, appId: "com.example.bank")

        // No document yet: EXECUTIVE is refused, and the approval stays in progress.
        let first = try await ask(t, username)
        let refused = try await decide(t, phone, device, first)
        #expect(refused.status == 403 && Self.code(refused) == "identity_document_required", "\(refused.text)")
        #expect(try await status(t, first.id)["status"] as? String == "IN_PROGRESS")

        // Refused documents: expired, another name, broken text, signed by the device key.
        let expired = IdentityDocumentSamples.driverLicense(familyName: family, firstName: "MICHAEL", number: number, birth: "06061986", expiry: "12102024")
        let r1 = try await register(t, phone, device, format: "aamva", text: expired)
        #expect(r1.status == 400 && Self.code(r1) == "identity_document_expired", "\(r1.text)")
        let other = IdentityDocumentSamples.driverLicense(familyName: "OTHERNAME", firstName: "MICHAEL", number: number, birth: "06061986", expiry: "12102031")
        let r2 = try await register(t, phone, device, format: "aamva", text: other)
        #expect(r2.status == 400 && Self.code(r2) == "identity_document_name_mismatch", "\(r2.text)")
        let valid = IdentityDocumentSamples.driverLicense(familyName: family, firstName: "MICHAEL", number: number, birth: "06061986", expiry: "12102031")
        let r3 = try await register(t, phone, device, format: "aamva", text: valid + "X")
        #expect(r3.status == 400 && Self.code(r3) == "identity_document_invalid", "\(r3.text)")
        #expect(!r3.text.contains(family) && !r3.text.contains(number))
        let byDeviceKey = try await OOB.device(
            phone, "POST", "/v1/tenants/\(t.id)/devices/\(device)/identity-documents",
            json: try phone.identityDocument(format: "aamva", text: valid, deviceId: device, key: phone.deviceKey))
        #expect(byDeviceKey.status == 400 && Self.code(byDeviceKey) == "identity_document_signature_invalid", "\(byDeviceKey.text)")

        // The license: registered, EXECUTIVE.
        let registered = try await register(t, phone, device, format: "aamva", text: valid)
        #expect(registered.status == 201, "\(registered.text)")
        let resource = try registered.json()
        #expect(resource["documentType"] as? String == "DRIVER_LICENSE" && resource["identityLevel"] as? String == "EXECUTIVE")
        #expect(resource["nameCheck"] as? String == "MATCHED" && resource["expiresOn"] as? String == "2031-12-10" && resource["issuingCountry"] as? String == "USA")
        #expect(!registered.text.contains(family) && !registered.text.contains(number))

        // The same approval is now accepted at EXECUTIVE; the device key alone still is not enough.
        let second = try await ask(t, username)
        let byDevice = try await decide(t, phone, device, second, userAuth: false)
        #expect(byDevice.status == 400 && Self.code(byDevice) == "approval_signature_invalid", "\(byDevice.text)")
        let accepted = try await decide(t, phone, device, first)
        #expect(accepted.status == 200, "\(accepted.text)")
        let done = try await status(t, first.id)
        #expect(done["status"] as? String == "ACCEPTED" && done["decidedLevel"] as? String == "EXECUTIVE", "\(done)")
        // ESSENTIAL approvals are unchanged by a document.
        let essential = try await ask(t, username, level: "ESSENTIAL")
        #expect(try await decide(t, phone, device, essential).status == 200)
        #expect(try await status(t, essential.id)["status"] as? String == "ACCEPTED")

        // The personal data is in the vault only.
        let needles = [family, number]
        for database in ["registration", "authentication", "transaction", "oob"] {
            #expect(try await Data_.leaks(in: database, of: needles).isEmpty, "\(database)")
        }
        #expect(try await Data_.count("oob", "SELECT count(*) AS n FROM identity_documents WHERE tenant_id = \(t.id)") == 1)
        #expect(try await Data_.count("pii", "SELECT count(*) AS n FROM pii_values WHERE tenant_id = \(t.id) AND kind = 'identity_document'") == 1)

        // The user's data shows it (the vault decrypts it), the purge erases it.
        let fetched = try await TestHTTP.send(
            "GET", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(username)/data", headers: ["Authorization": "Bearer \(t.key)"])
        try #require(fetched.status == 200, "\(fetched.text)")
        let parts = try #require(try Data_.json(fetched)["parts"] as? [String: [String: Any]])
        let documents = parts["oob"]?["identityDocuments"] as? [[String: Any]] ?? []
        #expect(documents.count == 1 && documents.first?["documentType"] as? String == "DRIVER_LICENSE", "\(fetched.text)")
        let vaulted = (parts["pii"]?["values"] as? [[String: Any]] ?? []).first { $0["kind"] as? String == "identity_document" }
        let value = vaulted?["value"] as? String ?? ""
        #expect(value.contains(family) && value.contains(number) && value.contains("1986-06-06"), "\(fetched.text)")
        let purge = try await TestHTTP.send(
            "DELETE", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(username)", headers: ["Authorization": "Bearer \(t.key)"])
        try #require(purge.status == 202, "\(purge.text)")
        let erasure = try await Data_.erasure(t, try #require(try Data_.json(purge)["erasureId"] as? String), until: Data_.completed)
        try #require(Data_.completed(erasure), "\(erasure)")
        let tallies = Data_.tallies(erasure)
        #expect(tallies["oob"]?["identityDocuments"] == 1 && tallies["pii"]?["values"] == 2, "\(tallies)")
        #expect(try await Data_.count("oob", "SELECT count(*) AS n FROM identity_documents WHERE tenant_id = \(t.id)") == 0)
        #expect(try await Data_.count("pii", "SELECT count(*) AS n FROM pii_values WHERE tenant_id = \(t.id)") == 0)

        // Never in an event, a push or a log line.
        let scan = try await KafkaLeakScan.scan(for: needles)
        #expect(scan.sawRecords > 0 && scan.findings.isEmpty, "\(scan.findings)")
        for service in ServiceName.allCases {
            let log = (try? String(contentsOfFile: "\(TestStack.dataDir)/logs/\(service.rawValue).log", encoding: .utf8)) ?? ""
            #expect(!log.contains(family) && !log.contains(number), "\(service) log")
        }
        let pushes = "\(TestStack.dataDir)/sinks/push"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: pushes)) ?? [] {
            let text = (try? String(contentsOfFile: "\(pushes)/\(name)", encoding: .utf8)) ?? ""
            #expect(!text.contains(family) && !text.contains(number), "push \(name)")
        }
    }

    @Test func aPassportMRZGivesExecutiveToAUserWithoutAProfileName() async throws {
        // The user's profile has an e-mail address and no name: the document is recorded as given.
        try TestStack.require()
        let t = try await adaptive.tenant()
        await OOB().waitForOOBKey(t)
        let marker = UInt32.random(in: 100_000...999_999)
        let username = "pass-\(marker)"
        try await signUp(t, username, fullName: nil)
        let phone = try SoftwareDevice(platform: "android")
        let device = try await OOB.enrol(phone, as: username, tenant: t, appId: "com.example.bank")

        // A broken check digit, then the passport.
        let mrz = IdentityDocumentSamples.passport(surname: "ERIKSSON", givenNames: "ANNA MARIA", number: "L\(marker)C", birth: "740812", expiry: "340415")
        var broken = Array(mrz)
        broken[broken.count - 1] = broken.last == "0" ? "1" : "0"
        let r1 = try await register(t, phone, device, format: "mrz", text: String(broken))
        #expect(r1.status == 400 && Self.code(r1) == "identity_document_invalid" && r1.text.contains("check_digit (composite)"), "\(r1.text)")
        let expired = IdentityDocumentSamples.passport(surname: "ERIKSSON", givenNames: "ANNA MARIA", number: "L\(marker)C", birth: "740812", expiry: "120415")
        let r2 = try await register(t, phone, device, format: "mrz", text: expired)
        #expect(r2.status == 400 && Self.code(r2) == "identity_document_expired", "\(r2.text)")
        let registered = try await register(t, phone, device, format: "mrz", text: mrz)
        #expect(registered.status == 201, "\(registered.text)")
        let resource = try registered.json()
        #expect(resource["documentType"] as? String == "PASSPORT" && resource["nameCheck"] as? String == "NOT_CHECKED", "\(registered.text)")
        #expect(resource["issuingCountry"] as? String == "UTO" && resource["expiresOn"] as? String == "2034-04-15")

        let a = try await ask(t, username)
        let accepted = try await decide(t, phone, device, a)
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(try await status(t, a.id)["decidedLevel"] as? String == "EXECUTIVE")
    }

    @Test func allowLowerLevelLetsAUserWithoutADocumentAcceptAtEssential() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        await OOB().waitForOOBKey(t)
        let username = "low-\(UInt32.random(in: 0...UInt32.max))"
        let phone = try SoftwareDevice(platform: "ios")
        let device = try await OOB.enrol(phone, as: username, tenant: t, appId: "com.example.bank")

        let strict = try await ask(t, username, allowLowerLevel: false)
        let refused = try await decide(t, phone, device, strict)
        #expect(refused.status == 403 && Self.code(refused) == "identity_document_required", "\(refused.text)")
        let lenient = try await ask(t, username, allowLowerLevel: true)
        // The device key is below the user's highest level: still refused.
        let byDevice = try await decide(t, phone, device, lenient, userAuth: false)
        #expect(byDevice.status == 400 && Self.code(byDevice) == "approval_signature_invalid", "\(byDevice.text)")
        let accepted = try await decide(t, phone, device, lenient)
        #expect(accepted.status == 200, "\(accepted.text)")
        let done = try await status(t, lenient.id)
        #expect(done["status"] as? String == "ACCEPTED" && done["decidedLevel"] as? String == "ESSENTIAL", "\(done)")
        // A user the registration service does not know has no vault subject for a document.
        let text = IdentityDocumentSamples.passport(surname: "DOE", givenNames: "JANE", number: "X1", birth: "900101", expiry: "340101")
        let unknown = try await register(t, phone, device, format: "mrz", text: text)
        #expect(unknown.status == 409 && Self.code(unknown) == "identity_subject_unknown", "\(unknown.text)")
    }
}

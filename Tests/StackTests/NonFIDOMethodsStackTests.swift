import Crypto
import Foundation
import HTTPServer
import Kafka
import OTP
import Platform
import Postgres
import Schema
import Testing
import TestSupport
import Tokens

/// Non-FIDO methods through all five services: registration enrols them, pii keeps the address
/// and number, oob delivers codes to the local sinks, authentication checks them in sign-in
/// flows. Then nothing of the user's personal data or codes may be found in plaintext outside
/// the pii service.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(4)))
struct NonFIDOMethodsStackTests {
    static let registration = "http://127.0.0.1:8081"
    static let authentication = "http://127.0.0.1:8082"
    let adaptive = AdaptiveSignInStackTests()

    /// The newest code the e-mail sink received for `address`.
    static func emailedCode(to address: String, after: Date, excluding seen: [String] = []) async -> String? {
        var found: String?
        _ = await TestStack.eventually(timeout: .seconds(30)) {
            let dir = "\(TestStack.dataDir)/sinks/email"
            let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            var newest: (Date, String)?
            for f in files {
                let path = "\(dir)/\(f)"
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: path), let modified = attributes[.modificationDate] as? Date,
                    modified >= after.addingTimeInterval(-1), let text = try? String(contentsOfFile: path, encoding: .utf8), text.contains(address)
                else { continue }
                let unfolded = text.replacingOccurrences(of: "=\r\n", with: "").replacingOccurrences(of: "=\n", with: "")
                guard let r = unfolded.range(of: #"code is [0-9]{6}"#, options: .regularExpression) else { continue }
                let code = String(unfolded[r].suffix(6))
                if seen.contains(code) { continue }
                if newest == nil || modified > newest!.0 { newest = (modified, code) }
            }
            found = newest?.1
            return found != nil
        }
        return found
    }

    func post(_ url: String, _ json: String, token: String) async throws -> TestHTTP.Response {
        try await TestHTTP.send("POST", url, headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"], body: Array(json.utf8))
    }

    /// Setting up methods that send codes has a budget: 5 setups a user and 5 a number per 10
    /// minutes, counted before anything is stored or sent; the sixth answers 429
    /// `code_send_limited` with `Retry-After`. Before, each setup was a new method no budget saw.
    @Test func settingUpCodeMethodsHasASendBudget() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let phone = "+4479\(UInt32.random(in: 10_000_000...99_999_999))"
        func setUp(_ username: String, _ phone: String) async throws -> TestHTTP.Response {
            try await post("\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/methods", #"{"type": "sms_otp", "phone": "\#(phone)"}"#, token: t.key)
        }
        let user = "pumped-\(UInt32.random(in: 0...UInt32.max))"
        for i in 0..<5 {
            let r = try await setUp(user, "+4479\(UInt32.random(in: 10_000_000...99_999_999))")
            #expect(r.status == 201, "setup \(i): \(r.text)")
        }
        let sixth = try await setUp(user, phone)
        #expect(sixth.status == 429 && (try? sixth.json())?["code"] as? String == "code_send_limited", "\(sixth.text)")
        let retry = Int(sixth.headers.first { $0.key.lowercased() == "retry-after" }?.value ?? "") ?? 0
        #expect((1...600).contains(retry), "\(sixth.headers)")
        // Five users setting up the same number: the sixth user is refused for the number.
        for i in 0..<5 {
            #expect(try await setUp("victim-\(i)-\(UInt32.random(in: 0...UInt32.max))", phone).status == 201)
        }
        let sixthUser = try await setUp("victim-6-\(UInt32.random(in: 0...UInt32.max))", phone)
        #expect(sixthUser.status == 429 && (try? sixthUser.json())?["code"] as? String == "code_send_limited", "\(sixthUser.text)")
        // TOTP sends nothing: not counted.
        let totp = try await post("\(Self.registration)/v1/tenants/\(t.id)/users/\(user)/methods", #"{"type": "totp"}"#, token: t.key)
        #expect(totp.status == 201, "\(totp.text)")
    }

    @Test func passkeyAndEmailedCodeCompleteALargeSignInAndNoPlaintextLeaks() async throws {
        try TestStack.require()
        // Logs are scanned from here on: what earlier runs appended (request ids in hex, say)
        // could hold a six-digit code by chance.
        let logOffsets = Self.logNames.reduce(into: [String: UInt64]()) { offsets, log in
            offsets[log] = (try? FileManager.default.attributesOfItem(atPath: "\(TestStack.dataDir)/logs/\(log)")[.size] as? UInt64) ?? 0
        }
        let t = try await adaptive.tenant()
        let username = "jane-\(UInt32.random(in: 0...UInt32.max))"
        let email = "jane.\(UInt32.random(in: 0...UInt32.max))@example.org"
        let phone = "+4479\(UInt32.random(in: 10_000_000...99_999_999))"
        var codes: [String] = []
        let passkey = try await adaptive.register(username, in: t)
        let methods = "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/methods"

        // E-mail OTP: pending until the code sent by e-mail confirms it.
        let started = Date()
        let created = try await post(methods, #"{"type": "email_otp", "email": "\#(email)"}"#, token: t.key)
        try #require(created.status == 201, "\(created.text)")
        let emailMethod = try AdaptiveSignInStackTests.decode(MethodResource.self, created)
        #expect(created.status == 201 && emailMethod.status == "PENDING_CONFIRMATION" && emailMethod.masked == "j•••@example.org", "\(created.text)")
        let confirmCode = try #require(await Self.emailedCode(to: email, after: started), "no confirmation e-mail in the sink")
        codes.append(confirmCode)
        let wrong = try await post("\(methods)/\(emailMethod.methodId)/confirm", #"{"code": "000000"}"#, token: t.key)
        #expect(wrong.status == 400 || confirmCode == "000000")
        let confirmed = try await post("\(methods)/\(emailMethod.methodId)/confirm", #"{"code": "\#(confirmCode)"}"#, token: t.key)
        try #require(confirmed.status == 200, "\(confirmed.text)")
        let confirmedStatus = try AdaptiveSignInStackTests.decode(MethodResource.self, confirmed).status
        #expect(confirmed.status == 200 && confirmedStatus == "ACTIVE", "\(confirmed.text)")

        // An SMS method too (its number must not leak either), and TOTP.
        let sms = try await post(methods, #"{"type": "sms_otp", "phone": "\#(phone)"}"#, token: t.key)
        #expect(sms.status == 201, "\(sms.text)")
        let totpCreated = try await post(methods, #"{"type": "totp"}"#, token: t.key)
        try #require(totpCreated.status == 201, "\(totpCreated.text)")
        let totp = try AdaptiveSignInStackTests.decode(MethodResource.self, totpCreated)
        let uri = try OTPAuthURI(parsing: try #require(totp.otpauthUri))
        let pngText = try #require(totp.qrCodePng)
        let png = try #require(Data(base64Encoded: pngText))
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let generator = try uri.makeTOTP()
        let first = try generator.code(at: Date())
        codes.append(first)
        let totpConfirmed = try await post("\(methods)/\(totp.methodId)/confirm", #"{"code": "\#(first)"}"#, token: t.key)
        #expect(totpConfirmed.status == 200, "\(totpConfirmed.text)")
        let listed = try AdaptiveSignInStackTests.decode(MethodList.self, try await TestHTTP.send("GET", methods, headers: ["Authorization": "Bearer \(t.key)"]))
        #expect(Set(listed.methods.map(\.type)) == ["fido2", "email_otp", "sms_otp", "totp"])
        #expect(!String(decoding: try JSONEncoder().encode(listed), as: UTF8.self).contains(email))

        // Above 1000: a passkey and an e-mailed code.
        #expect(try await adaptive.putRuleset(t, #"""
            {"rules": [{"name": "big", "when": {"fact": "context.transactionAmount", "op": "gt", "value": 1000},
              "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "email_otp"]]},
             {"name": "small", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"], ["totp"]]}]}
            """#).status == 200)
        #expect(await TestStack.eventually {
            (try? await adaptive.start(t, username: username, amount: 5000))?.sequences == [["fido2", "email_otp"]]
        })
        let signin = try await adaptive.start(t, username: username, amount: 5000)
        let firstResponse = try await adaptive.step(t, signin.signinId, with: passkey)
        try #require(firstResponse.status == 200, "\(firstResponse.text)")
        let firstStep = try AdaptiveSignInStackTests.decode(SignInProgress.self, firstResponse)
        #expect(firstStep.status == "IN_PROGRESS")
        let otpBase = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(signin.signinId)/methods/email_otp"
        let asked = Date()
        let challenge = try await TestHTTP.send("POST", "\(otpBase)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
        #expect(challenge.status == 200 && challenge.text.contains("j•••@example.org"), "\(challenge.text)")
        let code = try #require(await Self.emailedCode(to: email, after: asked, excluding: codes), "no sign-in code in the sink")
        codes.append(code)
        // A wrong code counts towards the lock.
        let bad = try await TestHTTP.send("POST", "\(otpBase)/verify", headers: ["Content-Type": "application/json"], body: Array(#"{"code": "\#(code == "111111" ? "222222" : "111111")"}"#.utf8))
        let badCode = try bad.json()["code"] as? String
        #expect(bad.status == 400 && badCode == "code_mismatch")
        let auth = TestStack.pool(database: "signet_authentication", size: 1)
        defer { auth.close() }
        let failures = try await auth.withConnection {
            try await $0.query("SELECT consecutive FROM method_failures WHERE tenant_id = \(t.id) AND username = \(username) AND method = 'email_otp'")
        }.first?.int("consecutive")
        #expect(failures == 1)
        // The mistyped guess did not void the code: the right one still works, without a new
        // challenge; the same code again fails.
        let ok = try await TestHTTP.send("POST", "\(otpBase)/verify", headers: ["Content-Type": "application/json"], body: Array(#"{"code": "\#(code)"}"#.utf8))
        try #require(ok.status == 200, "\(ok.text)")
        let result = try AdaptiveSignInStackTests.decode(SignInProgress.self, ok)
        #expect(result.status == "SUCCEEDED" && result.completedMethods == ["fido2", "email_otp"], "\(ok.text)")
        let reused = try await TestHTTP.send("POST", "\(otpBase)/verify", headers: ["Content-Type": "application/json"], body: Array(#"{"code": "\#(code)"}"#.utf8))
        #expect(reused.status == 409)

        // TOTP in a small sign-in; the same code twice is refused. The authentication service
        // learns of the TOTP method from registration's event: wait until it offers it (the
        // e-mail method being known says nothing of when the later event is consumed).
        #expect(await TestStack.eventually {
            (try? await adaptive.start(t, username: username, amount: 10))?.sequences == [["fido2"], ["totp"]]
        })
        let small = try await adaptive.start(t, username: username, amount: 10)
        let totpBase = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(small.signinId)/methods/totp"
        _ = try await TestHTTP.send("POST", "\(totpBase)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
        var now = try generator.code(at: Date().addingTimeInterval(30))
        codes.append(now)
        let totpOK = try await TestHTTP.send("POST", "\(totpBase)/verify", headers: ["Content-Type": "application/json"], body: Array(#"{"code": "\#(now)"}"#.utf8))
        #expect((try? AdaptiveSignInStackTests.decode(SignInProgress.self, totpOK))?.status == "SUCCEEDED", "\(totpOK.text)")
        let again = try await adaptive.start(t, username: username, amount: 10)
        let againBase = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(again.signinId)/methods/totp"
        _ = try await TestHTTP.send("POST", "\(againBase)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
        let replay = try await TestHTTP.send("POST", "\(againBase)/verify", headers: ["Content-Type": "application/json"], body: Array(#"{"code": "\#(now)"}"#.utf8))
        let replayCode = try replay.json()["code"] as? String
        #expect(replay.status == 400 && replayCode == "code_replayed", "\(replay.text)")
        now = ""

        // A phone bound to the user and an approval pushed to it: the push token is a device
        // secret, held only sealed (the oob database's devices and approvals tables are
        // scanned below with the rest).
        let oob = OOBApprovalStackTests.self
        await OOBApprovalStackTests().waitForOOBKey(t)
        let handset = try SoftwareDevice(platform: "ios")
        let handsetId = try await oob.enrol(handset, as: username, tenant: t, appId: "com.example.bank")
        let approval = try await TestHTTP.json(
            "POST", "\(oob.oob)/v1/tenants/\(t.id)/approvals", token: t.key,
            json: #"{"username":"\#(username)","level":"ENTRY","action":"login","resource":"web","numberMatching":true}"#)
        try #require(approval.status == 201, "\(approval.text)")
        let approvalId = try #require(try approval.json()["approvalId"] as? String)
        #expect(await TestStack.eventually(timeout: .seconds(20)) { oob.push(for: approvalId) != nil })
        let rejected = try await oob.device(
            handset, "POST", "/v1/tenants/\(t.id)/devices/\(handsetId)/approvals/\(approvalId)/decision",
            json: try handset.decision(
                "REJECT", approvalId: approvalId, detailsHash: try #require(try approval.json()["detailsHash"] as? String)))
        #expect(rejected.status == 200, "\(rejected.text)")

        // Nothing in plaintext outside the vault: databases, Kafka, logs.
        try await Task.sleep(for: .seconds(1))
        let secrets = [email, phone, handset.pushToken] + codes
        var leaks: [String] = []
        for database in ["signet_registration", "signet_authentication", "signet_transaction", "signet_oob"] {
            let pool = TestStack.pool(database: database, size: 1)
            defer { pool.close() }
            let columns = try await pool.withConnection { conn in
                try await conn.query(
                    """
                    SELECT table_name, column_name FROM information_schema.columns
                    WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'ARRAY', 'jsonb', 'json')
                    """)
            }
            for column in columns {
                guard let table = column.string("table_name"), let name = column.string("column_name") else { continue }
                for secret in secrets {
                    // Not inside a run of hex digits, as `containsToken` does for logs: a six-digit
                    // code occurs by chance inside a stored hex hash (CI once matched one in
                    // tenant_api_keys.key_hash, replicated to four databases).
                    let pattern = "(^|[^0-9a-f])" + NSRegularExpression.escapedPattern(for: secret) + "([^0-9a-f]|$)"
                    let hits = try await pool.withConnection { conn in
                        try await conn.query(PostgresQuery(unsafeSQL: "SELECT count(*) AS n FROM \"\(table)\" WHERE \"\(name)\"::text ~ $1", binds: [pattern]))
                    }.first?.int("n") ?? 0
                    if hits > 0 { leaks.append("\(database).\(table).\(name)") }
                }
            }
        }
        let consumer = try KafkaConsumer(
            configuration: KafkaConfiguration(brokers: TestStack.brokers, clientID: "leak-scan"), groupID: "leak-scan-\(UUID().uuidString)", topics: Topic.all,
            logger: TestStack.quietLogger)
        let seen = PlainLock<[String]>([])
        let ofThisTenant = PlainLock(0)
        let oobEventsOfThisTenant = PlainLock(0)
        let lastRecord = PlainLock(ContinuousClock.now + .seconds(10))
        let run = Task {
            await consumer.run { record in
                let text = String(decoding: record.value, as: UTF8.self) + record.headers.map { String(decoding: $0.value, as: UTF8.self) }.joined()
                for secret in secrets where Self.containsToken(text, secret) { seen.withLock { $0.append("\(record.topic)") } }
                if text.contains(t.id) { ofThisTenant.withLock { $0 += 1 } }
                if text.contains(t.id), record.topic == Topic.oob, text.contains(handsetId) { oobEventsOfThisTenant.withLock { $0 += 1 } }
                lastRecord.withLock { $0 = .now }
                return true
            }
        }
        _ = await TestStack.eventually(timeout: .seconds(30)) { ContinuousClock.now - lastRecord.withLock { $0 } > .seconds(3) }
        await consumer.shutdown()
        await run.value
        leaks += seen.withLock { $0 }
        // The scans looked where the data is: this tenant's events were read (the oob
        // service's device and approval events among them), and the masked
        // address (which may be stored) is found by the same database query.
        #expect(ofThisTenant.withLock { $0 } >= 5)
        #expect(oobEventsOfThisTenant.withLock { $0 } >= 3)
        let registrationDB = TestStack.pool(database: "signet_registration", size: 1)
        defer { registrationDB.close() }
        let maskedHits = try await registrationDB.withConnection { conn in
            try await conn.query(
                PostgresQuery(unsafeSQL: "SELECT count(*) AS n FROM \"user_methods\" WHERE \"masked\"::text ~ $1", binds: [NSRegularExpression.escapedPattern(for: "j•••@example.org")]))
        }.first?.int("n") ?? 0
        #expect(maskedHits >= 1)
        var scannedLogBytes = 0
        for log in Self.logNames {
            guard let file = FileHandle(forReadingAtPath: "\(TestStack.dataDir)/logs/\(log)") else { continue }
            defer { try? file.close() }
            try file.seek(toOffset: logOffsets[log] ?? 0)
            let text = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
            scannedLogBytes += text.utf8.count
            for secret in secrets where Self.containsToken(text, secret) { leaks.append("log \(log)") }
        }
        #expect(scannedLogBytes > 0, "the services logged nothing during the test")
        #expect(leaks.isEmpty, "plaintext found in: \(leaks)")
        // Every plaintext read from the vault was recorded: the oob service read the address to
        // deliver each code (three: the enrolment's, and two sign-ins' — a mistyped code no
        // longer needs a new one).
        let pii = TestStack.pool(database: "signet_pii", size: 1)
        defer { pii.close() }
        let audited = try await pii.withConnection { conn in
            try await conn.query("SELECT count(*) AS n FROM pii_reads WHERE tenant_id = \(t.id) AND reader = 'oob' AND purpose = 'otp_delivery'")
        }.first?.int("n") ?? 0
        #expect(audited >= 3)
    }

    /// Whether `text` contains `token` not surrounded by digits (nor by hex letters).
    /// Codes past a destination's budget are refused to the client that asked (429 with
    /// Retry-After) instead of answered 200 and dropped by the oob service; and someone asking
    /// for another person's codes from their own address spends their own budget, so the owner
    /// still receives a code and signs in.
    @Test func codeSendLimitsAreToldToTheClientAndLockNobodyOut() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "kim-\(UInt32.random(in: 0...UInt32.max))"
        let email = "kim.\(UInt32.random(in: 0...UInt32.max))@example.org"
        _ = try await adaptive.register(username, in: t)
        let methods = "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/methods"
        let started = Date()
        let created = try await post(methods, #"{"type": "email_otp", "email": "\#(email)"}"#, token: t.key)
        let method = try AdaptiveSignInStackTests.decode(MethodResource.self, created)
        let confirmCode = try #require(await Self.emailedCode(to: email, after: started), "no confirmation e-mail in the sink")
        #expect(try await post("\(methods)/\(method.methodId)/confirm", #"{"code": "\#(confirmCode)"}"#, token: t.key).status == 200)
        #expect(try await adaptive.putRuleset(t, #"{"rules": [{"name": "code", "action": "TRIGGER_AUTHENTICATION", "sequences": [["email_otp"]]}]}"#).status == 200)
        #expect(await TestStack.eventually { (try? await adaptive.start(t, username: username))?.sequences == [["email_otp"]] })

        func challenge(from address: String) async throws -> (TestHTTP.Response, String) {
            let signin = try await adaptive.start(t, username: username, ip: address)
            let base = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(signin.signinId)/methods/email_otp"
            let r = try await TestHTTP.send(
                "POST", "\(base)/challenge", headers: ["Content-Type": "application/json", "X-Forwarded-For": address], body: Array("{}".utf8))
            return (r, base)
        }
        // A stranger asks again and again from one address: the fourth is refused, and told so.
        let strangerStarted = Date()
        for _ in 0..<3 {
            let (ok, _) = try await challenge(from: "198.51.100.23")
            #expect(ok.status == 200, "\(ok.text)")
        }
        // Their three codes are delivered (to the owner's inbox); none of them is the owner's.
        var seen = [confirmCode]
        for _ in 0..<3 {
            seen.append(try #require(await Self.emailedCode(to: email, after: strangerStarted, excluding: seen), "a stranger's code was not delivered"))
        }
        let (refused, _) = try await challenge(from: "198.51.100.23")
        let refusedCode = try refused.json()["code"] as? String
        #expect(refused.status == 429 && refusedCode == "code_send_limited", "\(refused.text)")
        let retryAfter = Int(refused.headers["retry-after"] ?? "") ?? 0
        #expect(retryAfter > 0 && retryAfter <= 600)
        // The owner, from their own address, still gets a code that arrives, and signs in.
        let asked = Date()
        let (own, base) = try await challenge(from: "203.0.113.77")
        #expect(own.status == 200, "\(own.text)")
        let code = try #require(await Self.emailedCode(to: email, after: asked, excluding: seen), "the owner's code was not delivered")
        let verified = try await TestHTTP.send(
            "POST", "\(base)/verify", headers: ["Content-Type": "application/json", "X-Forwarded-For": "203.0.113.77"], body: Array(#"{"code": "\#(code)"}"#.utf8))
        #expect((try? AdaptiveSignInStackTests.decode(SignInProgress.self, verified))?.status == "SUCCEEDED", "\(verified.text)")
    }

    /// The services' and the gateway's log files under the stack's data folder.
    static var logNames: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(TestStack.dataDir)/logs")) ?? []).filter {
            $0.hasPrefix("signet-") || ["registration.log", "authentication.log", "transaction.log", "oob.log", "pii.log", "gateway.log"].contains($0)
        }
    }

    static func containsToken(_ text: String, _ token: String) -> Bool {
        var search = text[...]
        while let r = search.range(of: token) {
            let before = r.lowerBound == text.startIndex ? nil : text[text.index(before: r.lowerBound)]
            let after = r.upperBound == text.endIndex ? nil : text[r.upperBound]
            // Not inside a run of hex digits either: request, trace and span ids on every log
            // line are lower-case hex, where six decimal digits in a row occur by chance.
            let inHex = { (c: Character?) in c.map { $0.isNumber || ("a"..."f").contains($0) } ?? false }
            if !inHex(before), !inHex(after) { return true }
            search = text[r.upperBound...]
        }
        return false
    }
    /// A sequence that names a code method twice needs two of the user's methods: the second
    /// step challenges the authenticator app the first did not use, so one app's next code (the
    /// ±1 step drift accepts it) does not complete both steps.
    @Test func aMethodNamedTwiceNeedsTwoOfTheUsers() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "twice-\(UInt32.random(in: 0...UInt32.max))"
        let methods = "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/methods"
        var generators: [TOTP] = []
        for _ in 0..<2 {
            let created = try await post(methods, #"{"type": "totp"}"#, token: t.key)
            try #require(created.status == 201, "\(created.text)")
            let totp = try AdaptiveSignInStackTests.decode(MethodResource.self, created)
            let generator = try OTPAuthURI(parsing: try #require(totp.otpauthUri)).makeTOTP()
            // Confirmed with the previous step's code (the drift takes it), so that the current
            // step's is still unused for the sign-in.
            let confirmed = try await post(
                "\(methods)/\(totp.methodId)/confirm", #"{"code": "\#(try generator.code(at: Date().addingTimeInterval(-30)))"}"#, token: t.key)
            try #require(confirmed.status == 200, "\(confirmed.text)")
            generators.append(generator)
        }
        #expect(try await adaptive.putRuleset(t, #"{"rules": [{"name": "two-apps", "action": "TRIGGER_AUTHENTICATION", "sequences": [["totp", "totp"]]}]}"#).status == 200)
        var started: SignInStarted?
        #expect(await TestStack.eventually {
            started = try? await adaptive.start(t, username: username)
            return started?.sequences == [["totp", "totp"]]
        })
        let signin = try #require(started).signinId
        func step(_ code: String) async throws -> TestHTTP.Response {
            let url = "\(Self.authentication)/v1/tenants/\(t.id)/signins/\(signin)/methods/totp"
            _ = try await TestHTTP.send("POST", "\(url)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
            return try await TestHTTP.send("POST", "\(url)/verify", headers: ["Content-Type": "application/json"], body: Array(#"{"code": "\#(code)"}"#.utf8))
        }
        // The first step is one app's (the first set up); which one does not matter here.
        var firstApp = 0
        var first = try await step(try generators[0].code(at: Date()))
        if (try? AdaptiveSignInStackTests.decode(SignInProgress.self, first))?.status != "IN_PROGRESS" {
            firstApp = 1
            first = try await step(try generators[1].code(at: Date()))
        }
        #expect((try? AdaptiveSignInStackTests.decode(SignInProgress.self, first))?.status == "IN_PROGRESS", "\(first.text)")
        // The same app's next code: not the app this step asks for.
        let same = try await step(try generators[firstApp].code(at: Date().addingTimeInterval(30)))
        #expect(same.status == 400, "\(same.text)")
        let other = try await step(try generators[1 - firstApp].code(at: Date()))
        #expect((try? AdaptiveSignInStackTests.decode(SignInProgress.self, other))?.status == "SUCCEEDED", "\(other.text)")
    }
}

/// The external methods against a small relying-party stand-in this test starts: its JWKS and
/// its password check.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct ExternalMethodsStackTests {
    let adaptive = AdaptiveSignInStackTests()

    @Test func externalJWTAndPasswordAreCheckedByTheRelyingParty() async throws {
        try TestStack.require()
        let rpKey = try PrivateKey.generateP256()
        let signer = try JWTSigner(privateKey: rpKey, keyID: "rp-key-1")
        let jwks = try JWKSet(keys: [signer.publicJWK]).jsonString
        let passwordCalls = PlainLock(0)
        let server = HTTPServer(configuration: HTTPServerConfiguration(port: 0), logger: TestStack.quietLogger) { request in
            switch (request.method, request.path) {
            case ("GET", "/jwks.json"):
                return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Array(jwks.utf8))
            case ("POST", "/password-check"):
                passwordCalls.withLock { $0 += 1 }
                let body = (try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: String]) ?? [:]
                let authorized = request.header("Authorization") == "Bearer rp-check-secret"
                return HTTPResponse(status: authorized && body["username"] == "kim" && body["password"] == "correct horse \"battery\"" ? 204 : 401)
            default:
                return HTTPResponse(status: 404)
            }
        }
        try server.start()
        defer { Task { await server.shutdown() } }
        let base = "http://127.0.0.1:\(server.boundPort)"

        let t = try await adaptive.tenant()
        let settings = try await TestHTTP.json(
            "PUT", "\(AdaptiveSignInStackTests.authentication)/v1/admin/tenants/\(t.id)/authentication-settings", token: TestStack.adminToken,
            json: """
                {"externalJWT": {"issuer": "https://rp.example", "audience": "signet-\(t.id)", "jwksURL": "\(base)/jwks.json"},
                 "externalPassword": {"verifyURL": "\(base)/password-check", "bearerToken": "rp-check-secret"}}
                """)
        #expect(settings.status == 200, "\(settings.text)")
        #expect(!settings.text.contains("rp-check-secret"))
        #expect(try await adaptive.putRuleset(
            t, #"{"rules": [{"name": "external", "action": "TRIGGER_AUTHENTICATION", "sequences": [["external_password", "external_jwt"]]}]}"#
        ).status == 200)
        var started: SignInStarted?
        #expect(await TestStack.eventually {
            started = try? await adaptive.start(t, username: "kim")
            return started?.sequences == [["external_password", "external_jwt"]]
        })
        let signin = try #require(started).signinId
        func step(_ method: String, _ body: String) async throws -> TestHTTP.Response {
            let url = "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins/\(signin)/methods/\(method)"
            _ = try await TestHTTP.send("POST", "\(url)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
            return try await TestHTTP.send("POST", "\(url)/verify", headers: ["Content-Type": "application/json"], body: Array(body.utf8))
        }
        let wrongPassword = try await step("external_password", #"{"password": "wrong"}"#)
        let wrongCode = try wrongPassword.json()["code"] as? String
        #expect(wrongPassword.status == 400 && wrongCode == "password_invalid", "\(wrongPassword.text)")
        // Two passwords in one body: refused before anything reaches the relying party.
        let twoPasswords = try await step("external_password", #"{"password": "wrong", "password": "correct horse \"battery\""}"#)
        #expect(twoPasswords.status == 400 && (try? twoPasswords.json()["field"] as? String) == "password", "\(twoPasswords.text)")
        let rightPassword = try await step("external_password", #"{"password": "correct horse \"battery\""}"#)
        #expect((try? AdaptiveSignInStackTests.decode(SignInProgress.self, rightPassword))?.status == "IN_PROGRESS", "\(rightPassword.text)")
        #expect(passwordCalls.withLock { $0 } == 2)

        func jwt(subject: String, signer: JWTSigner, audience: String = "signet-\(t.id)") throws -> String {
            let now = Date()
            return try signer.sign(
                JWTClaims(issuer: "https://rp.example", subject: subject, audience: [audience], expiresAt: now.addingTimeInterval(60), issuedAt: now))
        }
        let otherUser = try await step("external_jwt", #"{"jwt": "\#(try jwt(subject: "someone-else", signer: signer))"}"#)
        let otherUserCode = try otherUser.json()["code"] as? String
        #expect(otherUser.status == 400 && otherUserCode == "jwt_subject_mismatch", "\(otherUser.text)")
        let forger = try JWTSigner(privateKey: try PrivateKey.generateP256(), keyID: "rp-key-1")
        let forged = try await step("external_jwt", #"{"jwt": "\#(try jwt(subject: "kim", signer: forger))"}"#)
        let forgedCode = try forged.json()["code"] as? String
        #expect(forged.status == 400 && forgedCode == "jwt_signature_invalid", "\(forged.text)")
        let otherAudience = try await step("external_jwt", #"{"jwt": "\#(try jwt(subject: "kim", signer: signer, audience: "elsewhere"))"}"#)
        let otherAudienceCode = try otherAudience.json()["code"] as? String
        #expect(otherAudience.status == 400 && otherAudienceCode == "jwt_audience_mismatch", "\(otherAudience.text)")
        // alg "none" is never accepted, whatever the token says.
        let none = Base64URL.encode(Array(#"{"alg":"none","kid":"rp-key-1"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"sub":"kim"}"#.utf8)) + "."
        let unsigned = try await step("external_jwt", #"{"jwt": "\#(none)"}"#)
        #expect(unsigned.status == 400, "\(unsigned.text)")
        let token = try jwt(subject: "kim", signer: signer)
        let good = try await step("external_jwt", #"{"jwt": "\#(token)"}"#)
        let done = try AdaptiveSignInStackTests.decode(SignInProgress.self, good)
        #expect(done.status == "SUCCEEDED" && done.completedMethods == ["external_password", "external_jwt"], "\(good.text)")

        // The same token does not complete a step of another sign-in: each is used once.
        let again = try await adaptive.start(t, username: "kim").signinId
        func stepAgain(_ method: String, _ body: String) async throws -> TestHTTP.Response {
            let url = "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signins/\(again)/methods/\(method)"
            _ = try await TestHTTP.send("POST", "\(url)/challenge", headers: ["Content-Type": "application/json"], body: Array("{}".utf8))
            return try await TestHTTP.send("POST", "\(url)/verify", headers: ["Content-Type": "application/json"], body: Array(body.utf8))
        }
        #expect(try await stepAgain("external_password", #"{"password": "correct horse \"battery\""}"#).status == 200)
        let replayed = try await stepAgain("external_jwt", #"{"jwt": "\#(token)"}"#)
        #expect(replayed.status == 400 && (try? replayed.json()["code"] as? String) == "code_replayed", "\(replayed.text)")
        let fresh = try await stepAgain("external_jwt", #"{"jwt": "\#(try jwt(subject: "kim", signer: signer))"}"#)
        #expect((try? AdaptiveSignInStackTests.decode(SignInProgress.self, fresh))?.status == "SUCCEEDED", "\(fresh.text)")
    }

    @Test func aSignUpTokenRegistersMethodsThenBecomesASession() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "new-\(UInt32.random(in: 0...UInt32.max))"
        let base = "\(AdaptiveSignInStackTests.authentication)/v1/tenants/\(t.id)/signups"
        let opened = try await TestHTTP.send(
            "POST", base, headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"], body: Array(#"{"username": "\#(username)"}"#.utf8))
        #expect(opened.status == 201, "\(opened.text)")
        let token = try #require(try opened.json()["signUpToken"] as? String)
        func finish() async throws -> TestHTTP.Response {
            try await TestHTTP.send("POST", "\(base)/finish", headers: ["Content-Type": "application/json"], body: Array(#"{"signUpToken": "\#(token)"}"#.utf8))
        }
        let early = try await finish()
        let earlyCode = try early.json()["code"] as? String
        #expect(early.status == 409 && earlyCode == "nothing_registered")
        // The token registers an authenticator app for its own username…
        let methods = "\(NonFIDOMethodsStackTests.registration)/v1/tenants/\(t.id)/users/\(username)/methods"
        let created = try await TestHTTP.send(
            "POST", methods, headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"], body: Array(#"{"type": "totp"}"#.utf8))
        #expect(created.status == 201, "\(created.text)")
        let totp = try AdaptiveSignInStackTests.decode(MethodResource.self, created)
        let code = try OTPAuthURI(parsing: try #require(totp.otpauthUri)).makeTOTP().code(at: Date())
        let confirmed = try await TestHTTP.send(
            "POST", "\(methods)/\(totp.methodId)/confirm", headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
            body: Array(#"{"code": "\#(code)"}"#.utf8))
        #expect(confirmed.status == 200, "\(confirmed.text)")
        // …and nothing else.
        let removal = try await TestHTTP.send("DELETE", "\(methods)/\(totp.methodId)", headers: ["Authorization": "Bearer \(token)"])
        #expect(removal.status == 403)
        let elsewhere = try await TestHTTP.send("GET", "\(NonFIDOMethodsStackTests.registration)/v1/tenants/\(t.id)/users/someone/methods", headers: ["Authorization": "Bearer \(token)"])
        #expect(elsewhere.status == 403)
        // Once the method is known to sign-in, the sign-up becomes a session, once.
        var finished: TestHTTP.Response?
        #expect(await TestStack.eventually {
            finished = try? await finish()
            return finished?.status == 200
        })
        #expect((try? AdaptiveSignInStackTests.decode(SessionTokens.self, try #require(finished)))?.refreshToken.hasPrefix("rt_") == true)
        #expect(try await finish().status == 401)
        let again = try await TestHTTP.send(
            "POST", base, headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"], body: Array(#"{"username": "\#(username)"}"#.utf8))
        let againCode = try again.json()["code"] as? String
        #expect(again.status == 409 && againCode == "username_taken")
    }

    @Test func registrationDecisionRulesChooseWhichMethodsCanBeRegistered() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "lee-\(UInt32.random(in: 0...UInt32.max))"
        _ = try await adaptive.register(username, in: t)
        let rules = try await TestHTTP.json(
            "PUT", "\(AdaptiveSignInStackTests.authentication)/v1/admin/tenants/\(t.id)/rulesets/registration", token: TestStack.adminToken,
            json: #"""
                {"rules": [{"name": "enough", "when": {"fact": "user.methodCounts.totp", "op": "gte", "value": 1}, "action": "DENY"},
                           {"name": "app-next", "when": {"fact": "user.registeredMethods", "op": "contains", "value": "fido2"},
                            "action": "SUGGEST_REGISTRATION", "methods": ["totp"]}]}
                """#)
        #expect(rules.status == 200, "\(rules.text)")
        let methods = "\(NonFIDOMethodsStackTests.registration)/v1/tenants/\(t.id)/users/\(username)/methods"
        func create(_ json: String) async throws -> TestHTTP.Response {
            try await TestHTTP.send("POST", methods, headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"], body: Array(json.utf8))
        }
        // Offered: an authenticator app; not offered: e-mail codes.
        let email = try await create(#"{"type": "email_otp", "email": "lee@example.org"}"#)
        let emailCode = try email.json()["code"] as? String
        #expect(email.status == 403 && emailCode == "method_not_offered", "\(email.text)")
        let totp = try AdaptiveSignInStackTests.decode(MethodResource.self, try await create(#"{"type": "totp"}"#))
        let code = try OTPAuthURI(parsing: try #require(totp.otpauthUri)).makeTOTP().code(at: Date())
        let confirmed = try await TestHTTP.send(
            "POST", "\(methods)/\(totp.methodId)/confirm", headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"],
            body: Array(#"{"code": "\#(code)"}"#.utf8))
        #expect(confirmed.status == 200)
        // With an app registered, the rules deny further registrations, passkeys included.
        #expect(await TestStack.eventually { (try? await create(#"{"type": "totp"}"#))?.status == 403 })
        let denied = try await create(#"{"type": "totp"}"#)
        let deniedCode = try denied.json()["code"] as? String
        #expect(deniedCode == "registration_denied")
        let passkey = try await TestHTTP.send(
            "POST", "\(NonFIDOMethodsStackTests.registration)/v1/tenants/\(t.id)/webauthn/registrations/options",
            headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"], body: Array(#"{"username": "\#(username)"}"#.utf8))
        #expect(passkey.status == 403)
    }
}

import Crypto
import Foundation
import OTP
import Platform
import Postgres
import Schema
import Testing
import TestSupport
import Tokens

/// A user's data across the five services: fetched (every item with its status, the addresses
/// decrypted), then erased by the purge saga, with a receipt verified against the registration
/// service's JWKS (by PyJWT and by the Swift verifier) and tallies equal to what was created;
/// afterwards no table of any service holds the username or the addresses, and the
/// vault cannot open the user's ciphertext any more. A purge started while the transaction
/// service is down completes once it is back.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(6)))
struct UserDataStackTests {
    static let registration = "http://127.0.0.1:8081"
    static let authentication = "http://127.0.0.1:8082"
    let adaptive = AdaptiveSignInStackTests()
    let transactions = TransactionStackTests()

    static func json(_ r: TestHTTP.Response) throws -> [String: Any] { try r.json() }

    /// Polls the erasure until it is COMPLETED (or the bound passes); its last state.
    static func erasure(_ t: AdaptiveSignInStackTests.Tenant, _ id: String, until done: @escaping ([String: Any]) -> Bool) async throws -> [String: Any] {
        var last: [String: Any] = [:]
        _ = await TestStack.eventually(timeout: .seconds(60), every: .milliseconds(100)) {
            guard let r = try? await TestHTTP.send("GET", "\(registration)/v1/tenants/\(t.id)/erasures/\(id)", headers: ["Authorization": "Bearer \(t.key)"]),
                r.status == 200, let body = try? r.json()
            else { return false }
            last = body
            return done(body)
        }
        return last
    }

    /// The stack's subject key (`SIGNET_SUBJECT_KEY`, which `scripts/stack.sh` exports to the
    /// services and the tests alike).
    static func subjectKey() throws -> SubjectKey {
        let text = try #require(TestStack.environment["SIGNET_SUBJECT_KEY"], "the stack exports SIGNET_SUBJECT_KEY")
        return try SubjectKey(try #require(Base64URL.decode(text)))
    }

    static func completed(_ body: [String: Any]) -> Bool { body["status"] as? String == "COMPLETED" }

    /// The tallies of an erasure, service → kind → count.
    static func tallies(_ body: [String: Any]) -> [String: [String: Int]] {
        var out: [String: [String: Int]] = [:]
        for part in body["parts"] as? [[String: Any]] ?? [] {
            guard let service = part["service"] as? String else { continue }
            out[service] = (part["tallies"] as? [String: Any] ?? [:]).compactMapValues { ($0 as? NSNumber)?.intValue }
        }
        return out
    }

    static func count(_ database: String, _ sql: PostgresQuery) async throws -> Int {
        let pool = TestStack.pool(database: "signet_\(database)", size: 1)
        defer { pool.close() }
        return try await pool.withConnection { try await $0.query(sql) }.first?.int("n") ?? -1
    }

    /// Runs `script` with the stack's Python (PyJWT installed) on `input` (JSON); its stdout.
    static func python(_ script: String, input: [String: Any]) throws -> String {
        let python = TestStack.environment["SIGNET_SINK_PYTHON"] ?? "\(TestStack.dataDir)/venv/bin/python"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        stdin.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: input))
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestStackError("python failed (\(process.terminationStatus))") }
        return String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Tables and text-like columns of a service's database where any of `needles` appears.
    static func leaks(in database: String, of needles: [String]) async throws -> [String] {
        let pool = TestStack.pool(database: "signet_\(database)", size: 1)
        defer { pool.close() }
        let columns = try await pool.withConnection { conn in
            try await conn.query(
                """
                SELECT table_name, column_name FROM information_schema.columns
                WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'ARRAY', 'jsonb', 'json')
                """)
        }
        var found: [String] = []
        for column in columns {
            guard let table = column.string("table_name"), let name = column.string("column_name") else { continue }
            for needle in needles {
                let hits = try await pool.withConnection { conn in
                    try await conn.query(PostgresQuery(unsafeSQL: "SELECT count(*) AS n FROM \"\(table)\" WHERE strpos(\"\(name)\"::text, $1) > 0", binds: [needle]))
                }.first?.int("n") ?? 0
                if hits > 0 { found.append("\(database).\(table).\(name)") }
            }
        }
        return found
    }

    @Test func fetchShowsEverythingThenThePurgeLeavesNothingAndSignsAReceipt() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let n = UInt32.random(in: 0...UInt32.max)
        // A username like an e-mail address: it must not survive the purge anywhere.
        let username = "kim.\(n)@example.net"
        let email = "kim.mail.\(n)@example.org"
        let phone = "+4479\(UInt32.random(in: 10_000_000...99_999_999))"
        let passkey = try await adaptive.register(username, in: t)
        let subjectRef = try Self.subjectKey().ref(tenant: t.id, username: username)
        let methods = "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/methods"
        let rp = ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"]

        // E-mail (confirmed), SMS (left pending), TOTP (confirmed).
        let asked = Date()
        let created = try await TestHTTP.send("POST", methods, headers: rp, body: Array(#"{"type": "email_otp", "email": "\#(email)"}"#.utf8))
        try #require(created.status == 201, "\(created.text)")
        let emailMethod = try AdaptiveSignInStackTests.decode(MethodResource.self, created)
        let code = try #require(await NonFIDOMethodsStackTests.emailedCode(to: email, after: asked))
        #expect(try await TestHTTP.send("POST", "\(methods)/\(emailMethod.methodId)/confirm", headers: rp, body: Array(#"{"code": "\#(code)"}"#.utf8)).status == 200)
        let sms = try await TestHTTP.send("POST", methods, headers: rp, body: Array(#"{"type": "sms_otp", "phone": "\#(phone)"}"#.utf8))
        #expect(sms.status == 201, "\(sms.text)")
        let totpCreated = try await TestHTTP.send("POST", methods, headers: rp, body: Array(#"{"type": "totp"}"#.utf8))
        let totp = try AdaptiveSignInStackTests.decode(MethodResource.self, totpCreated)
        let first = try OTPAuthURI(parsing: try #require(totp.otpauthUri)).makeTOTP().code(at: Date())
        #expect(try await TestHTTP.send("POST", "\(methods)/\(totp.methodId)/confirm", headers: rp, body: Array(#"{"code": "\#(first)"}"#.utf8)).status == 200)

        // Two sign-ins with the passkey, and a transaction confirmed with it (a third).
        var sessionToken = ""
        for _ in 0..<2 {
            let signin = try await adaptive.start(t, username: username)
            let done = try await adaptive.step(t, signin.signinId, with: passkey)
            let progress = try AdaptiveSignInStackTests.decode(SignInProgress.self, done)
            #expect(progress.status == "SUCCEEDED", "\(done.text)")
            sessionToken = progress.sessionToken ?? sessionToken
        }
        let tx = try await transactions.create(t, username: username, amount: "42.00")
        let confirmation = try AdaptiveSignInStackTests.decode(SignInStarted.self, try await transactions.startConfirmation(t, tx.transactionId))
        #expect(try AdaptiveSignInStackTests.decode(SignInProgress.self, try await adaptive.step(t, confirmation.signinId, with: passkey)).status == "SUCCEEDED")
        #expect(await TestStack.eventually { (try? await transactions.get(t, tx.transactionId))?.status == "CONFIRMED" })
        // Every service has its copy before the fetch and the purge (the read models trail).
        #expect(await TestStack.eventually {
            (try? await Self.count("authentication", "SELECT count(*) AS n FROM user_methods WHERE tenant_id = \(t.id) AND subject_ref = \(subjectRef)")) == 2
        })

        // MARK: Fetch
        let fetched = try await TestHTTP.send("GET", "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/data", headers: ["Authorization": "Bearer \(t.key)"])
        try #require(fetched.status == 200, "\(fetched.text)")
        let document = try Self.json(fetched)
        #expect((document["missing"] as? [Any])?.isEmpty == true, "\(fetched.text)")
        let parts = try #require(document["parts"] as? [String: [String: Any]])
        #expect(Set(parts.keys) == ["registration", "authentication", "transaction", "oob", "pii"])
        let registered = try #require(parts["registration"])
        let credentials = registered["credentials"] as? [[String: Any]] ?? []
        #expect(credentials.map { $0["status"] as? String } == ["active"] && credentials.first?["credentialId"] as? String == passkey.credentialIDBase64URL)
        let listed = (registered["methods"] as? [[String: Any]] ?? []).reduce(into: [String: (String, String?)]()) {
            $0[$1["type"] as? String ?? ""] = ($1["status"] as? String ?? "", $1["address"] as? String)
        }
        #expect(listed["email_otp"]?.0 == "ACTIVE" && listed["email_otp"]?.1 == email)
        #expect(listed["sms_otp"]?.0 == "PENDING_CONFIRMATION" && listed["sms_otp"]?.1 == phone)
        #expect(listed["totp"]?.0 == "ACTIVE" && listed["totp"]?.1 == nil)
        let signIns = parts["authentication"]?["signIns"] as? [[String: Any]] ?? []
        #expect(signIns.count == 3 && signIns.allSatisfy { $0["status"] as? String == "SUCCEEDED" }, "\(signIns)")
        #expect((parts["authentication"]?["sessions"] as? [Any])?.count ?? 0 >= 2)
        let txs = parts["transaction"]?["transactions"] as? [[String: Any]] ?? []
        #expect(txs.map { $0["status"] as? String } == ["CONFIRMED"] && txs.first?["evidence"] != nil)
        #expect((parts["pii"]?["values"] as? [[String: Any]] ?? []).compactMap { $0["value"] as? String }.sorted() == [email, phone].sorted())
        // Those reads are audited by the vault.
        #expect(try await Self.count("pii", "SELECT count(*) AS n FROM pii_reads WHERE tenant_id = \(t.id) AND reader = 'registration' AND purpose = 'user_data_export'") == 2)
        // The user may fetch their own data with their session; the ZIP has one file per service.
        let own = try await TestHTTP.send("GET", "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/data", headers: ["Authorization": "Bearer \(sessionToken)"])
        #expect(own.status == 200, "\(own.text)")
        let zip = try await TestHTTP.send(
            "GET", "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/data", headers: ["Authorization": "Bearer \(t.key)", "Accept": "application/zip"])
        #expect(zip.status == 200 && zip.headers["content-type"] == "application/zip")
        let names = try Self.python(
            """
            import base64, io, json, sys, zipfile
            z = zipfile.ZipFile(io.BytesIO(base64.b64decode(json.load(sys.stdin)["zip"])))
            assert z.testzip() is None
            print(",".join(sorted(z.namelist())))
            """, input: ["zip": Data(zip.body).base64EncodedString()])
        #expect(names == "authentication.json,manifest.json,oob.json,pii.json,registration.json,transaction.json")

        // What each service holds now, to compare with the tallies.
        let expectedAuthentication = [
            "sessions": try await Self.count("authentication", "SELECT count(*) AS n FROM sessions WHERE tenant_id = \(t.id) AND username = \(username)"),
            "refreshTokens": try await Self.count(
                "authentication",
                "SELECT count(*) AS n FROM refresh_tokens WHERE sid IN (SELECT sid FROM sessions WHERE tenant_id = \(t.id) AND username = \(username))"),
            "userState": try await Self.count("authentication", "SELECT count(*) AS n FROM user_state WHERE tenant_id = \(t.id) AND username = \(username)"),
            "signIns": 3, "credentials": 1, "methods": 2, "transactions": 1,
        ]
        let handle = try await {
            let pool = TestStack.pool(database: "signet_registration", size: 1)
            defer { pool.close() }
            return try await pool.withConnection { try await $0.query("SELECT user_handle FROM users WHERE tenant_id = \(t.id) AND username = \(username)") }
                .first?.bytes("user_handle")
        }()
        let subject = Base64URL.encode(try #require(handle))
        // A copy of the vault's ciphertext, as a backup or replica would keep it.
        let vault = TestStack.pool(database: "signet_pii", size: 1)
        defer { vault.close() }
        let copies = try await vault.withConnection { conn in
            try await conn.query(
                "SELECT ref, kind, encode(ciphertext, 'hex') AS c, masked, created_at FROM pii_values WHERE tenant_id = \(t.id) AND subject = \(subject)")
        }
        #expect(copies.count == 2)

        // The scan below finds what is there: before the purge, every service but oob holds the username.
        for database in ["registration", "authentication", "transaction"] {
            #expect(try await !Self.leaks(in: database, of: [username]).isEmpty, "\(database)")
        }

        // MARK: Purge (by the user, with their own session)
        let started = try await TestHTTP.send("DELETE", "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)", headers: ["Authorization": "Bearer \(sessionToken)"])
        try #require(started.status == 202, "\(started.text)")
        let erasureID = try #require(try Self.json(started)["erasureId"] as? String)
        let erasure = try await Self.erasure(t, erasureID, until: Self.completed)
        try #require(Self.completed(erasure), "\(erasure)")
        let tallies = Self.tallies(erasure)
        // methodSetupSends: the e-mail and SMS methods' setups, counted by their send budget.
        #expect(tallies["registration"] == ["credentials": 1, "methods": 3, "users": 1, "subjects": 1, "methodSetupSends": 2])
        #expect(tallies["authentication"]?.filter { expectedAuthentication[$0.key] != nil } == expectedAuthentication.filter { $0.value > 0 }, "\(tallies)")
        // spentChallenges: the confirmation's step (ConsumedEvidence), erased with its transaction.
        #expect(tallies["transaction"] == ["transactions": 1, "credentials": 1, "spentChallenges": 1])
        #expect(tallies["pii"] == ["dataKeys": 1, "values": 2])
        #expect(tallies["oob"] == [:])

        // The receipt: PyJWT with the JWKS alone, and the Swift verifier.
        let receipt = try #require(erasure["receipt"] as? String)
        let jwks = try await TestHTTP.send("GET", "\(Self.registration)/.well-known/jwks.json")
        #expect(jwks.status == 200)
        let verified = try Self.python(
            """
            import json, sys, jwt
            d = json.load(sys.stdin)
            keys = {k.key_id: k for k in jwt.PyJWKSet.from_dict(d["jwks"]).keys}
            header = jwt.get_unverified_header(d["receipt"])
            assert header["typ"] == "erasure-receipt+jwt" and header["alg"] == "ES256"
            c = jwt.decode(d["receipt"], key=keys[header["kid"]].key, algorithms=["ES256"], audience=d["aud"], issuer="http://localhost:8080/registration")
            print(json.dumps({"jti": c["jti"], "pii": c["tallies"]["pii"], "sub": c.get("sub")}, sort_keys=True))
            """, input: ["jwks": try JSONSerialization.jsonObject(with: Data(jwks.body)), "receipt": receipt, "aud": t.id])
        #expect(verified == #"{"jti": "\#(erasureID)", "pii": {"dataKeys": 1, "values": 2}, "sub": null}"#)
        let claims = try JWTVerifier(
            keySet: try JWKSet(json: jwks.body),
            options: JWTValidationOptions(
                issuer: "http://localhost:8080/registration", audience: t.id, requireExpiration: false, expectedType: "erasure-receipt+jwt")
        ).verify(receipt, now: Date()).claims
        #expect(claims[claim: "tallies"]?["transaction"]?["transactions"] == .int(1))

        // Nothing left: no table of any service holds the username or the addresses (the vault
        // keeps ciphertexts only, and those are gone too). One-time codes are never stored in
        // plaintext (NonFIDOMethodsStackTests scans for them).
        try await Task.sleep(for: .seconds(1))
        var leaks: [String] = []
        for database in ["registration", "authentication", "transaction", "oob", "pii"] {
            leaks += try await Self.leaks(in: database, of: [username, email, phone])
        }
        #expect(leaks.isEmpty, "still held: \(leaks)")

        // Nor may Kafka keep them: every topic, read from the beginning (before the replay
        // below puts a purge request back). The tenant id is in every one of this tenant's
        // records (their keys): finding it shows the scan reads what is there.
        let kafka = try await KafkaLeakScan.scan(for: [t.id, username, email, phone])
        #expect(kafka.sawRecords > 0 && kafka.findings.contains { $0.needle == t.id && $0.part == "key" }, "the scan read nothing of this tenant")
        let addresses = kafka.findings.filter { $0.needle == email || $0.needle == phone }
        #expect(addresses.isEmpty, "addresses in Kafka: \(addresses)")
        let usernames = kafka.findings.filter { $0.needle == username }
        let described = Set(usernames.map { "\($0.topic) \($0.part) (\($0.eventType))" }).sorted()
        // Events name users by subject reference (#18): the credentials', UAF keys', methods',
        // devices', approvals', transactions' and the purge request's events never carry the
        // username, and no key or header does.
        #expect(usernames.isEmpty, "the username in Kafka: \(described)")
        // The reference itself is there: the scan would find the username in the same places.
        let references = try await KafkaLeakScan.scan(for: [subjectRef]).findings
        #expect(
            Set(references.map(\.eventType)).isSuperset(of: [
                MethodChanged.eventType, UserPurgeRequested.eventType, TransactionChanged.eventType, CredentialRegistered.eventType,
            ]), "\(references)")
        // The vault cannot open the ciphertext any more: put back, it reads as gone.
        try await vault.withConnection { conn in
            for row in copies {
                _ = try await conn.query(
                    """
                    INSERT INTO pii_values (ref, tenant_id, subject, kind, ciphertext, masked, created_at)
                    VALUES (\(row.string("ref") ?? ""), \(t.id), \(subject), \(row.string("kind") ?? ""), decode(\(row.string("c") ?? ""), 'hex'),
                        \(row.string("masked") ?? ""), \(row.date("created_at") ?? Date()))
                    """)
            }
        }
        for row in copies {
            let read = try await TestHTTP.send(
                "POST", "http://127.0.0.1:8085/v1/internal/tenants/\(t.id)/pii/\(row.string("ref") ?? "")/read",
                headers: [
                    "Authorization": "Bearer \(TestStack.environment["SIGNET_INTERNAL_TOKEN"] ?? "dev-internal-token-oob")", "X-Signet-Service": "oob",
                    "Content-Type": "application/json",
                ], body: Array(#"{"purpose":"test"}"#.utf8))
            #expect(read.status == 404, "\(read.text)")
        }
        #expect(try await Self.count("pii", "SELECT count(*) AS n FROM subject_keys WHERE tenant_id = \(t.id) AND subject = \(subject) AND wrapped_key IS NULL") == 1)

        // A replay of the purge request changes nothing: every service already recorded its id.
        let purgeEventID = try #require(
            try await {
                let pool = TestStack.pool(database: "signet_pii", size: 1)
                defer { pool.close() }
                return try await pool.withConnection { conn in
                    try await conn.query(
                        "SELECT event_id FROM processed_events WHERE event_type = \(UserPurgeRequested.eventType) ORDER BY processed_at DESC LIMIT 1")
                }.first?.string("event_id")
            }())
        let duplicatesBefore = await Self.duplicates()
        var replay = try EventEnvelope(
            UserPurgeRequested(tenantId: t.id, erasureId: erasureID, subjectRef: subjectRef, subject: subject, requestedAt: Date()),
            source: ServiceName.registration.eventSource, subject: t.id)
        replay.id = purgeEventID
        let producer = try Stack.producer()
        try await producer.send(replay.kafkaMessage(topic: Topic.registration, key: t.id))
        #expect(await TestStack.eventually { await Self.duplicates().allSatisfy { $0.value > duplicatesBefore[$0.key] ?? 0 } }, "every service saw the replay")
        for service in ServiceName.allCases {
            #expect(try await Self.count(service.rawValue, """
                SELECT count(*) AS n FROM (SELECT event_type, data FROM outbox UNION ALL SELECT event_type, data FROM outbox_sent) o
                WHERE event_type = \(ErasurePartCompleted.eventType) AND data LIKE \("%" + erasureID + "%")
                """) == 1, "\(service.rawValue) wrote its part once, sent or not")
        }
        // The restored copies are the only rows the replay could have touched; they are still there.
        #expect(try await Self.count("pii", "SELECT count(*) AS n FROM pii_values WHERE tenant_id = \(t.id) AND subject = \(subject)") == 2)
    }

    /// Events each service's consumer dropped as duplicates, by service.
    static func duplicates() async -> [ServiceName: Double] {
        var out: [ServiceName: Double] = [:]
        for service in ServiceName.allCases {
            out[service] = await TestStack.metricValues(Stack.url(service), name: "signet_events_consumed_total", labelFragment: #"outcome="duplicate""#)
                .reduce(0, +)
        }
        return out
    }

    /// A revoked session's access token (logout, a refresh token reused, the RP's revocation)
    /// neither fetches nor erases its user's data, though its signature and expiry still hold.
    /// Before, it did both until it expired.
    /// Every route that takes a user's session token, in each service that takes them
    /// (registration: the user's data, credentials, methods; oob: the user's devices), refuses
    /// the token once its session was revoked; the RP's key is unchanged.
    @Test func aRevokedSessionIsRefusedWhereverSessionsAreTaken() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "rev-\(UInt32.random(in: 0...UInt32.max))"
        let passkey = try await adaptive.register(username, in: t)
        let signin = try await adaptive.start(t, username: username)
        let progress = try AdaptiveSignInStackTests.decode(SignInProgress.self, try await adaptive.step(t, signin.signinId, with: passkey))
        let token = try #require(progress.sessionToken)
        let user = "/v1/tenants/\(t.id)/users/\(username)"
        let reads = [
            "\(Self.registration)\(user)/data", "\(Self.registration)\(user)/credentials", "\(Self.registration)\(user)/methods",
            "\(OOBApprovalStackTests.oob)\(user)/devices",
        ]
        let bearer = ["Authorization": "Bearer \(token)"]
        for url in reads {
            let answer = try await TestHTTP.send("GET", url, headers: bearer)
            #expect(answer.status == 200, "\(url): \(answer.text)")
        }
        // The session's id, from the token, revoked by the RP at the authentication service.
        let payload = try #require(token.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode(String($0)) })
        let sid = try #require((try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])?["sid"] as? String)
        let revoked = try await TestHTTP.send("DELETE", "\(Self.authentication)/v1/tenants/\(t.id)/sessions/\(sid)", headers: ["Authorization": "Bearer \(t.key)"])
        try #require(revoked.status == 204, "\(revoked.text)")
        for url in reads {
            let refused = await TestStack.eventually(timeout: .seconds(30)) {
                (try? await TestHTTP.send("GET", url, headers: bearer).status) == 401
            }
            #expect(refused, "\(url) still took the revoked session's token")
        }
        let erase = try await TestHTTP.send("DELETE", "\(Self.registration)\(user)", headers: bearer)
        #expect(erase.status == 401 && (try? Self.json(erase))?["code"] as? String == "unauthorized", "\(erase.text)")
        // The RP's key still reads everything.
        for url in reads {
            #expect(try await TestHTTP.send("GET", url, headers: ["Authorization": "Bearer \(t.key)"]).status == 200, "\(url)")
        }
    }

    @Test func anUnknownUserIsErasedWithEmptyTallies() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let started = try await TestHTTP.send(
            "DELETE", "\(Self.registration)/v1/tenants/\(t.id)/users/nobody-\(UInt32.random(in: 0...UInt32.max))", headers: ["Authorization": "Bearer \(t.key)"])
        try #require(started.status == 202, "\(started.text)")
        let erasure = try await Self.erasure(t, try #require(try Self.json(started)["erasureId"] as? String), until: Self.completed)
        #expect(Self.completed(erasure), "\(erasure)")
        #expect(Self.tallies(erasure) == Dictionary(uniqueKeysWithValues: ServiceName.allCases.map { ($0.rawValue, [String: Int]()) }))
    }

    @Test func aPurgeWhileTheTransactionServiceIsDownCompletesWhenItIsBack() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "lee-\(UInt32.random(in: 0...UInt32.max))"
        _ = try await adaptive.register(username, in: t)
        _ = try await transactions.create(t, username: username, amount: "7.00")
        #expect(await TestStack.eventually {
            (try? await Self.count("transaction", "SELECT count(*) AS n FROM credential_owners WHERE tenant_id = \(t.id) AND subject_ref = \(try! Self.subjectKey().ref(tenant: t.id, username: username))")) == 1
        })

        // Stop the stack's transaction service (SIGTERM: it drains and exits).
        let pidfile = "\(TestStack.dataDir)/run/transaction.pid"
        let pid = try #require(Int32((try String(contentsOfFile: pidfile, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, SIGTERM) == 0)
        // Gone, not only closed: a draining service stops HTTP first and its consumer after,
        // so until the process has exited it may still take the purge request (a CI run saw
        // the transaction's part completed by a service whose port was already closed).
        let stopped = await TestStack.eventually(timeout: .seconds(40), every: .milliseconds(100)) {
            !TestStack.acceptsConnections("127.0.0.1:8083") && Self.hasExited(pid)
        }
        try #require(stopped, "the transaction service did not stop")
        // Whatever happens below, a transaction service is running again at the end (the
        // stack's `down` stops it through the pid file).
        var restarted = false
        defer {
            if !restarted, let (process, _) = try? TestStack.launch("signet-transaction", environment: ["SIGNET_HTTP_PORT": "8083"], logName: "transaction") {
                try? "\(process.processIdentifier)\n".write(toFile: pidfile, atomically: true, encoding: .utf8)
            }
        }

        let started = try await TestHTTP.send("DELETE", "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)", headers: ["Authorization": "Bearer \(t.key)"])
        try #require(started.status == 202, "\(started.text)")
        let erasureID = try #require(try Self.json(started)["erasureId"] as? String)
        // Four parts answer; the transaction service's waits.
        let waiting = try await Self.erasure(t, erasureID) { body in
            (body["parts"] as? [[String: Any]] ?? []).filter { $0["status"] as? String == "COMPLETED" }.count == 4
        }
        let pending = (waiting["parts"] as? [[String: Any]] ?? []).filter { $0["status"] as? String == "PENDING" }.compactMap { $0["service"] as? String }
        #expect(waiting["status"] as? String == "PENDING" && pending == ["transaction"], "\(waiting)")
        // Meanwhile nothing is added to the user: the registration service has erased its part,
        // and a method set up now made a new user whose data the services still to answer would
        // erase, or not (before: 201, and a users row after the erasure).
        let methods = "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/methods"
        let rp = ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"]
        let refused = try await TestHTTP.send("POST", methods, headers: rp, body: Array(#"{"type": "totp"}"#.utf8))
        #expect(refused.status == 409 && (try? Self.json(refused))?["code"] as? String == "user_erasure_pending", "\(refused.text)")
        #expect(try await Self.count("registration", "SELECT count(*) AS n FROM users WHERE tenant_id = \(t.id) AND username = \(username)") == 0)

        // Back: it reads the request from its group's committed offset and answers.
        let (process, _) = try TestStack.launch("signet-transaction", environment: ["SIGNET_HTTP_PORT": "8083"], logName: "transaction")
        try "\(process.processIdentifier)\n".write(toFile: pidfile, atomically: true, encoding: .utf8)
        restarted = true
        #expect(await TestStack.becomesReady("http://127.0.0.1:8083"))
        let erasure = try await Self.erasure(t, erasureID, until: Self.completed)
        #expect(Self.completed(erasure), "\(erasure)")
        #expect(Self.tallies(erasure)["transaction"] == ["transactions": 1, "credentials": 1])
        #expect(try await Self.count("transaction", "SELECT count(*) AS n FROM transactions WHERE tenant_id = \(t.id) AND username = \(username)") == 0)
        // Completed: the username is free again, for a new user.
        let again = try await TestHTTP.send("POST", methods, headers: rp, body: Array(#"{"type": "totp"}"#.utf8))
        #expect(again.status == 201, "\(again.text)")
    }

    @Test func removingAMethodRemovesItsAddressFromTheVault() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "max-\(UInt32.random(in: 0...UInt32.max))"
        let methods = "\(Self.registration)/v1/tenants/\(t.id)/users/\(username)/methods"
        let rp = ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"]
        let created = try await TestHTTP.send("POST", methods, headers: rp, body: Array(#"{"type": "sms_otp", "phone": "+447700900321"}"#.utf8))
        try #require(created.status == 201, "\(created.text)")
        let method = try AdaptiveSignInStackTests.decode(MethodResource.self, created)
        let ref = try #require(
            try await {
                let pool = TestStack.pool(database: "signet_registration", size: 1)
                defer { pool.close() }
                return try await pool.withConnection { try await $0.query("SELECT pii_ref FROM user_methods WHERE id = \(method.methodId)") }.first?.string("pii_ref")
            }())
        #expect(try await Self.count("pii", "SELECT count(*) AS n FROM pii_values WHERE ref = \(ref)") == 1)
        #expect(try await TestHTTP.send("DELETE", "\(methods)/\(method.methodId)", headers: rp).status == 204)
        #expect(await TestStack.eventually { (try? await Self.count("pii", "SELECT count(*) AS n FROM pii_values WHERE ref = \(ref)")) == 0 })
        // Registration forgets the reference; the method's history (masked) stays until an erasure.
        #expect(try await Self.count("registration", "SELECT count(*) AS n FROM user_methods WHERE id = \(method.methodId) AND pii_ref IS NULL AND status = 'DELETED'") == 1)
    }

    /// Whether process `pid` has exited (no such process, or a zombie not yet reaped).
    static func hasExited(_ pid: Int32) -> Bool {
        if kill(pid, 0) != 0 { return true }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }
}

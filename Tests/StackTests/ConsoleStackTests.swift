import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Schema
import Testing
import TestSupport

/// The admin console against the running services: a console process of its own (its own
/// operators' tenant, so that runs never meet), operators enrolling and signing in with a
/// passkey through the registration and authentication services' public APIs, and tenants
/// and API keys changed through the admin API; a viewer changes nothing; calls without the
/// session or with a forged CSRF token are refused.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(4)))
struct ConsoleStackTests {
    static let origin = "http://localhost:8080"
    static let code = "stack-enrolment-code-\(UInt32.random(in: 0...UInt32.max))"

    /// A browser-like client of the console: no cookie jar (the test sends the cookie itself).
    struct Client {
        let base: String
        var cookie: String?
        var csrf: String?
        static let session: URLSession = {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpCookieStorage = nil
            configuration.httpShouldSetCookies = false
            return URLSession(configuration: configuration)
        }()

        struct Response {
            let status: Int
            let body: [UInt8]
            let headers: [String: String]
            var text: String { String(decoding: body, as: UTF8.self) }
            func json() throws -> [String: Any] { (try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:] }
            /// The problem's code, if the body is one.
            var code: String? { (try? json())?["code"] as? String }
        }

        func send(_ method: String, _ path: String, json: String? = nil, csrf override: String? = nil, origin: String? = ConsoleStackTests.origin) async throws -> Response {
            var request = URLRequest(url: URL(string: base + path)!, timeoutInterval: 30)
            request.httpMethod = method
            if let json {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data(json.utf8)
            }
            if let cookie { request.setValue("signet_console=\(cookie)", forHTTPHeaderField: "Cookie") }
            if let token = override ?? csrf { request.setValue(token, forHTTPHeaderField: "X-CSRF-Token") }
            if let origin { request.setValue(origin, forHTTPHeaderField: "Origin") }
            let (data, response) = try await Self.session.data(for: request)
            let http = response as! HTTPURLResponse
            var headers: [String: String] = [:]
            for (k, v) in http.allHeaderFields { headers[String(describing: k).lowercased()] = String(describing: v) }
            return Response(status: http.statusCode, body: Array(data), headers: headers)
        }

        /// Takes the session from a sign-in or enrolment answer.
        mutating func adopt(_ response: Response) throws {
            let setCookie = try #require(response.headers["set-cookie"])
            #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
            cookie = String(try #require(setCookie.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last))
            csrf = try #require(try response.json()["csrfToken"] as? String)
        }
    }

    static func encode<T: Encodable>(_ value: T) throws -> String { String(decoding: try JSONEncoder().encode(value), as: UTF8.self) }

    static func launchConsole(tenant: String, port: Int) async throws -> Process {
        let assets = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Services/Console/Assets").path
        let (process, logPath) = try TestStack.launch(
            "signet-console",
            environment: [
                "SIGNET_HTTP_PORT": "\(port)", "SIGNET_CONSOLE_TENANT": tenant, "SIGNET_CONSOLE_OPERATORS": "chief=administrator,watcher=viewer",
                "SIGNET_CONSOLE_ENROLMENT_CODE": code, "SIGNET_CONSOLE_RP_API_KEY": "stack-console-key-\(tenant)", "SIGNET_CONSOLE_ASSETS_DIR": assets,
                "SIGNET_CONSOLE_ORIGIN": origin, "SIGNET_CONSOLE_EVENT_WAIT_MS": "500",
            ], logName: "console-\(tenant)")
        guard await TestStack.becomesReady("http://127.0.0.1:\(port)") else {
            process.terminate()
            throw TestStackError("the console did not become ready; see \(logPath)")
        }
        return process
    }

    /// Enrols `username`'s first passkey through the console; returns the signed-in client.
    static func enrol(_ username: String, base: String) async throws -> (Client, SoftAuthenticator) {
        var client = Client(base: base)
        let options = try await client.send("POST", "/console/api/enrolments/options", json: #"{"username":"\#(username)","code":"\#(code)"}"#)
        #expect(options.status == 200, "\(options.text)")
        let decoded = try JSONDecoder().decode(RegistrationOptionsResponse.self, from: Data(options.body))
        #expect(decoded.publicKey.authenticatorSelection?.userVerification == "required")
        let authenticator = try SoftAuthenticator()
        let credential = authenticator.create(decoded.publicKey, origin: origin)
        let finish = try await client.send("POST", "/console/api/enrolments", json: try encode(RegistrationFinishRequest(handle: decoded.handle, credential: credential)))
        #expect(finish.status == 200, "\(finish.text)")
        try client.adopt(finish)
        return (client, authenticator)
    }

    @Test func operatorsSignInWithPasskeysAndOnlyAdministratorsChangeTenantsAndKeys() async throws {
        try TestStack.require()
        let operators = "ops-\(UInt32.random(in: 0...UInt32.max))"
        let port = try TestStack.unusedPort()
        let process = try await Self.launchConsole(tenant: operators, port: port)
        defer { process.terminate() }
        let base = "http://127.0.0.1:\(port)"

        // The page, with its policy.
        let page = try await Client(base: base).send("GET", "/console/", origin: nil)
        #expect(page.status == 200 && page.text.contains("Sign in with a passkey"))
        #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)

        // The administrator enrols, signs out, and signs in again with the discoverable passkey.
        var (chief, chiefKey) = try await Self.enrol("chief", base: base)
        let signedOut = try await chief.send("POST", "/console/api/sign-out")
        #expect(signedOut.status == 204)
        let afterSignOut = try await chief.send("GET", "/console/api/session")
        #expect(afterSignOut.status == 401)
        let signedIn = await TestStack.eventually {
            // The credential reaches the authentication service by event.
            var attempt = Client(base: base)
            guard let options = try? await attempt.send("POST", "/console/api/sign-in/options", json: "{}"), options.status == 200,
                let decoded = try? JSONDecoder().decode(AuthenticationOptionsResponse.self, from: Data(options.body)),
                let assertion = try? chiefKey.get(decoded.publicKey, origin: Self.origin),
                let body = try? Self.encode(AuthenticationFinishRequest(handle: decoded.handle, credential: assertion)),
                let finish = try? await attempt.send("POST", "/console/api/sign-in", json: body), finish.status == 200
            else { return false }
            guard (try? attempt.adopt(finish)) != nil else { return false }
            chief = attempt
            return true
        }
        #expect(signedIn)
        let session = try await chief.send("GET", "/console/api/session")
        let role = try session.json()["role"] as? String
        #expect(session.status == 200 && role == "administrator")
        // The five services' readiness, as each answers it.
        let services = try await chief.send("GET", "/console/api/services")
        let listed = try services.json()["services"] as? [[String: Any]] ?? []
        #expect(services.status == 200 && listed.count == 5 && listed.allSatisfy { $0["ready"] as? Bool == true }, "\(services.text)")
        // ...and the build each runs (the stack's SIGNET_VERSION).
        let versions = Set(listed.compactMap { $0["version"] as? String })
        #expect(versions.count == 1 && versions.first.map { !$0.isEmpty } == true, "\(services.text)")
        // A second enrolment for an operator who has a passkey is refused.
        let again = try await Client(base: base).send("POST", "/console/api/enrolments/options", json: #"{"username":"chief","code":"\#(Self.code)"}"#)
        #expect(again.status == 403 && again.code == "console_enrolment_refused")

        // A tenant, created through the console, reaches the services.
        let tenant = Stack.newTenantID("console")
        let body = #"{"displayName":"Console Bank","rpId":"bank.example","origins":["https://bank.example"]}"#
        let created = try await chief.send("PUT", "/console/api/tenants/\(tenant)", json: body)
        #expect(created.status == 201, "\(created.text)")
        #expect(await TestStack.eventually { (try? await chief.send("GET", "/console/api/tenants/\(tenant)").status) == 200 })

        // An API key: shown once, works against the RP API; rotated: the new one works, the old
        // one no longer; revoked: nothing works.
        let issued = try await chief.send("POST", "/console/api/tenants/\(tenant)/api-keys")
        #expect(issued.status == 201 && issued.headers["cache-control"] == "no-store")
        let first = try issued.json()
        let firstKey = try #require(first["apiKey"] as? String)
        let firstID = try #require(first["keyId"] as? String)
        func check(_ key: String) async throws -> Int {
            try await TestHTTP.send("GET", "\(Stack.registration)/v1/tenants/\(tenant)/api-keys/current", headers: ["Authorization": "Bearer \(key)"]).status
        }
        let firstWorks = try await check(firstKey)
        #expect(firstWorks == 200)
        let rotated = try await chief.send("POST", "/console/api/tenants/\(tenant)/api-keys/\(firstID)/rotate")
        #expect(rotated.status == 201, "\(rotated.text)")
        let second = try rotated.json()
        let secondKey = try #require(second["apiKey"] as? String)
        #expect(second["revokedKeyId"] as? String == firstID && secondKey != firstKey)
        let secondWorks = try await check(secondKey)
        let firstRetired = try await check(firstKey)
        #expect(secondWorks == 200 && firstRetired == 401)
        let revoked = try await chief.send("DELETE", "/console/api/tenants/\(tenant)/api-keys/\(try #require(second["keyId"] as? String))")
        #expect(revoked.status == 204)
        let secondRetired = try await check(secondKey)
        #expect(secondRetired == 401)

        // A ruleset, stored through the console on the authentication service (once the tenant
        // has reached it), and an invalid one refused with the service's code and field.
        let ruleset = #"{"rules":[{"name":"big-amount","when":{"fact":"context.transactionAmount","op":"gt","value":1000},"action":"TRIGGER_AUTHENTICATION","sequences":[["fido2","fido2"]]},{"name":"passkey","action":"TRIGGER_AUTHENTICATION","sequences":[["fido2"]]}]}"#
        var storedRuleset: Client.Response?
        _ = await TestStack.eventually {
            storedRuleset = try? await chief.send("PUT", "/console/api/tenants/\(tenant)/rulesets/authentication", json: ruleset)
            return storedRuleset?.status == 200
        }
        #expect(storedRuleset?.status == 200, "\(storedRuleset?.text ?? "no answer")")
        let invalidRuleset = try await chief.send(
            "PUT", "/console/api/tenants/\(tenant)/rulesets/authentication", json: #"{"rules":[{"name":"x","action":"TRIGGER_AUTHENTICATION"}]}"#)
        #expect(invalidRuleset.status == 400 && invalidRuleset.code == "invalid_ruleset", "\(invalidRuleset.text)")

        // Its FIDO policy and authentication settings read, its tcToken key rotated (once the
        // tenant has reached the transaction service), and an unlock of a method that is not
        // locked answered by the service's own 404.
        let policy = try await chief.send("GET", "/console/api/tenants/\(tenant)/fido-policy")
        #expect(policy.status == 200, "\(policy.text)")
        let settings = try await chief.send("GET", "/console/api/tenants/\(tenant)/authentication-settings")
        #expect(settings.status == 200, "\(settings.text)")
        var rotation: Client.Response?
        _ = await TestStack.eventually {
            rotation = try? await chief.send("POST", "/console/api/tenants/\(tenant)/tctoken-keys/rotate")
            return rotation?.status == 200
        }
        #expect(rotation?.status == 200 && rotation?.text.contains("kid") == true, "\(rotation?.text ?? "no answer")")
        let unlock = try await chief.send("POST", "/console/api/tenants/\(tenant)/users/alice/methods/fido2/unlock")
        #expect(unlock.status == 404 && unlock.code == "not_found", "\(unlock.text)")

        // Without the session, or with a forged CSRF token, nothing changes.
        let changed = #"{"displayName":"Hijacked","rpId":"bank.example","origins":["https://bank.example"]}"#
        let anonymous = try await Client(base: base).send("PUT", "/console/api/tenants/\(tenant)", json: changed)
        #expect(anonymous.status == 401 && anonymous.code == "console_session_required")
        let forged = try await chief.send("PUT", "/console/api/tenants/\(tenant)", json: changed, csrf: Base64URL.encode(SecureRandom.bytes(32)))
        #expect(forged.status == 403 && forged.code == "console_csrf_invalid")
        let crossSite = try await chief.send("PUT", "/console/api/tenants/\(tenant)", json: changed, origin: "https://evil.example")
        #expect(crossSite.status == 403 && crossSite.code == "console_origin_refused")

        // A viewer reads, and changes nothing.
        let (watcher, _) = try await Self.enrol("watcher", base: base)
        let read = try await watcher.send("GET", "/console/api/tenants/\(tenant)")
        #expect(read.status == 200)
        let refused = try await watcher.send("PUT", "/console/api/tenants/\(tenant)", json: changed)
        #expect(refused.status == 403 && refused.code == "console_role_insufficient")
        // ...runs the explain dry run and reads the trace...
        let explained = try await watcher.send(
            "POST", "/console/api/tenants/\(tenant)/rulesets/authentication/explain", json: #"{"facts":{"context":{"transactionAmount":50}}}"#)
        let trace = try explained.json()
        let decision = trace["decision"] as? [String: Any]
        let tried = (trace["rules"] as? [[String: Any]] ?? []).map { "\($0["rule"] as? String ?? "?"):\($0["matched"] as? Bool ?? false)" }
        #expect(explained.status == 200 && decision?["matchedRule"] as? String == "passkey", "\(explained.text)")
        #expect(tried == ["big-amount:false", "passkey:true"], "\(tried)")
        let rulesetRefused = try await watcher.send("PUT", "/console/api/tenants/\(tenant)/rulesets/authentication", json: ruleset)
        #expect(rulesetRefused.status == 403 && rulesetRefused.code == "console_role_insufficient")
        let noRotation = try await watcher.send("POST", "/console/api/tenants/\(tenant)/tctoken-keys/rotate")
        #expect(noRotation.status == 403 && noRotation.code == "console_role_insufficient")
        let noUnlock = try await watcher.send("POST", "/console/api/tenants/\(tenant)/users/alice/methods/fido2/unlock")
        #expect(noUnlock.status == 403 && noUnlock.code == "console_role_insufficient")
        let noKey = try await watcher.send("POST", "/console/api/tenants/\(tenant)/api-keys")
        #expect(noKey.status == 403 && noKey.code == "console_role_insufficient")
        let current = try await TestHTTP.send("GET", "\(Stack.registration)/v1/tenants/\(tenant)")
        let displayName = try current.json()["displayName"] as? String
        #expect(current.status == 200 && displayName == "Console Bank")
    }

    /// User verification is required at the console's sign-in whatever options the handle
    /// came from. A presence-only assertion (a security key without its PIN) over a handle of
    /// the authentication service's public options asked with `userVerification: "discouraged"`
    /// signs no operator in through the console; and once the FIDO policy the console gave the
    /// operators' tenant at start-up has reached the authentication service, its options ask
    /// for user verification whatever the caller asks, and it refuses such an assertion itself
    /// (no session of the services either).
    @Test func signInNeedsUserVerificationWhateverTheOptions() async throws {
        try TestStack.require()
        let operators = "ops-\(UInt32.random(in: 0...UInt32.max))"
        let port = try TestStack.unusedPort()
        let process = try await Self.launchConsole(tenant: operators, port: port)
        defer { process.terminate() }
        let base = "http://127.0.0.1:\(port)"
        let authentication = Stack.url(.authentication)
        let (_, chiefKey) = try await Self.enrol("chief", base: base)

        // The operators' tenant's policy, as the registration service keeps it.
        let policy = try await TestHTTP.send(
            "GET", "\(Stack.registration)/v1/admin/tenants/\(operators)/fido-policy", headers: ["Authorization": "Bearer \(TestStack.adminToken)"])
        let policyUV = try policy.json()["userVerification"] as? String
        #expect(policy.status == 200 && policyUV == "required", "\(policy.text)")

        // A sign-in with the options the service answers to a caller asking for less.
        func presenceOnly() async throws -> (options: RequestOptionsJSON, console: Client.Response) {
            let options = try await TestHTTP.json(
                "POST", "\(authentication)/v1/tenants/\(operators)/webauthn/authentications/options", json: #"{"userVerification":"discouraged"}"#)
            #expect(options.status == 200, "\(options.text)")
            let decoded = try JSONDecoder().decode(AuthenticationOptionsResponse.self, from: Data(options.body))
            let assertion = try chiefKey.get(decoded.publicKey, origin: Self.origin, userVerified: false)
            let body = try Self.encode(AuthenticationFinishRequest(handle: decoded.handle, credential: assertion))
            return (decoded.publicKey, try await Client(base: base).send("POST", "/console/api/sign-in", json: body))
        }
        // The credential reaches the authentication service by event: a verified sign-in
        // through the console succeeds first.
        let verified = await TestStack.eventually {
            var attempt = Client(base: base)
            guard let options = try? await attempt.send("POST", "/console/api/sign-in/options", json: "{}"), options.status == 200,
                let decoded = try? JSONDecoder().decode(AuthenticationOptionsResponse.self, from: Data(options.body)),
                let assertion = try? chiefKey.get(decoded.publicKey, origin: Self.origin),
                let body = try? Self.encode(AuthenticationFinishRequest(handle: decoded.handle, credential: assertion)),
                let finish = try? await attempt.send("POST", "/console/api/sign-in", json: body), finish.status == 200
            else { return false }
            return (try? attempt.adopt(finish)) != nil
        }
        #expect(verified)
        // Presence only: refused by the console (the service's options still as asked) or by the
        // service (the policy has reached it); never a session.
        let first = try await presenceOnly()
        #expect(first.console.headers["set-cookie"] == nil)
        #expect(
            (first.console.status == 403 && first.console.code == "console_user_verification_required")
                || (first.console.status == 400 && first.console.code == "user_verification_required"), "\(first.console.status) \(first.console.text)")
        // Once the policy has reached the authentication service, its options require user
        // verification whatever the caller asks, and the service refuses the assertion itself.
        var last = first
        let required = await TestStack.eventually(timeout: .seconds(30)) {
            guard let attempt = try? await presenceOnly() else { return false }
            last = attempt
            return attempt.options.userVerification == "required"
        }
        #expect(required, "the operators' tenant's policy did not reach the authentication service")
        #expect(last.console.status == 400 && last.console.code == "user_verification_required", "\(last.console.status) \(last.console.text)")
        #expect(last.console.headers["set-cookie"] == nil)
    }

    /// An operator's console session ends when an administrator suspends the passkey it was
    /// opened with (the registration service's event reaches the console's listener); and the
    /// operators' tenant's FIDO policy keeps `userVerification: required`: refused through the
    /// console, put back when weakened through the admin API.
    @Test func aSuspendedOperatorPasskeyEndsItsSessionAndTheOperatorsPolicyStaysRequired() async throws {
        try TestStack.require()
        let operators = "ops-\(UInt32.random(in: 0...UInt32.max))"
        let port = try TestStack.unusedPort()
        let process = try await Self.launchConsole(tenant: operators, port: port)
        defer { process.terminate() }
        let base = "http://127.0.0.1:\(port)"
        let (chief, _) = try await Self.enrol("chief", base: base)
        let (watcher, watcherKey) = try await Self.enrol("watcher", base: base)
        let id = watcherKey.credentialIDBase64URL
        #expect(try await watcher.send("GET", "/console/api/session").status == 200)

        // Suspended through the console by the administrator: the watcher's session ends. (The
        // console's consumer may still be looking up its newest offsets at first: the change is
        // made again, resumed then suspended, until the session ends.)
        let path = "/console/api/tenants/\(operators)/users/watcher/credentials/\(id)"
        let suspended = try await chief.send("PATCH", path, json: #"{"status":"suspended"}"#)
        #expect(suspended.status == 200, "\(suspended.text)")
        let ended = await TestStack.eventually(timeout: .seconds(30)) {
            if (try? await watcher.send("GET", "/console/api/session").status) == 401 { return true }
            _ = try? await chief.send("PATCH", path, json: #"{"status":"active"}"#)
            _ = try? await chief.send("PATCH", path, json: #"{"status":"suspended"}"#)
            try? await Task.sleep(for: .milliseconds(300))
            return false
        }
        #expect(ended, "the watcher's console session outlived the suspension of its passkey")
        #expect(try await chief.send("GET", "/console/api/session").status == 200, "the administrator's own session stays")

        // The operators' tenant's policy: a weaker one is refused through the console...
        let refused = try await chief.send("PUT", "/console/api/tenants/\(operators)/fido-policy", json: #"{"userVerification":"preferred"}"#)
        #expect(refused.status == 409 && refused.code == "console_operators_policy_protected", "\(refused.text)")
        // ...and put back when written through the admin API (on its event, or at the check).
        let admin = ["Authorization": "Bearer \(TestStack.adminToken)"]
        let policyURL = "\(Stack.registration)/v1/admin/tenants/\(operators)/fido-policy"
        let weakened = try await TestHTTP.json("PUT", policyURL, token: TestStack.adminToken, json: #"{"userVerification":"preferred"}"#)
        #expect(weakened.status == 200, "\(weakened.text)")
        let restored = await TestStack.eventually(timeout: .seconds(90), every: .milliseconds(250)) {
            guard let policy = try? await TestHTTP.send("GET", policyURL, headers: admin) else { return false }
            return (try? policy.json()["userVerification"] as? String) == "required"
        }
        #expect(restored, "the operators' tenant's weakened policy was not put back")
    }

    /// A tenant's user, found through the console; an operator's role suspends and resumes the
    /// user's passkey (through the RP API, with the console's own key of the tenant, imported
    /// through the admin API); a viewer's cannot.
    @Test func operatorsSuspendAndResumeAUsersPasskey() async throws {
        try TestStack.require()
        let operators = "ops-\(UInt32.random(in: 0...UInt32.max))"
        let port = try TestStack.unusedPort()
        let process = try await Self.launchConsole(tenant: operators, port: port)
        defer { process.terminate() }
        let base = "http://127.0.0.1:\(port)"
        let (chief, _) = try await Self.enrol("chief", base: base)
        let (watcher, _) = try await Self.enrol("watcher", base: base)

        // A tenant with a user and a passkey, made as an RP would.
        let tenant = Stack.newTenantID("console-users")
        #expect(try await Stack.putTenant(tenant).status == 201)
        let rpKey = "rp-key-\(UInt64.random(in: 0...UInt64.max))"
        let imported = try await TestHTTP.json(
            "PUT", "\(Stack.registration)/v1/admin/tenants/\(tenant)/api-keys/k_00000000000000c1", token: TestStack.adminToken, json: #"{"apiKey":"\#(rpKey)"}"#)
        #expect(imported.status == 201)
        let options = try await TestHTTP.json(
            "POST", "\(Stack.registration)/v1/tenants/\(tenant)/webauthn/registrations/options", token: rpKey, json: #"{"username":"alice"}"#)
        let decoded = try JSONDecoder().decode(RegistrationOptionsResponse.self, from: Data(options.body))
        let passkey = try SoftAuthenticator()
        let finish = try await TestHTTP.json(
            "POST", "\(Stack.registration)/v1/tenants/\(tenant)/webauthn/registrations", token: rpKey,
            json: try Self.encode(RegistrationFinishRequest(handle: decoded.handle, credential: passkey.create(decoded.publicKey, origin: "https://example.com"), friendlyName: "Alice's key")))
        #expect(finish.status == 201, "\(finish.text)")
        let id = passkey.credentialIDBase64URL

        func status() async throws -> String? {
            let list = try await TestHTTP.send("GET", "\(Stack.registration)/v1/tenants/\(tenant)/users/alice/credentials", headers: ["Authorization": "Bearer \(rpKey)"])
            let credentials = try list.json()["credentials"] as? [[String: Any]] ?? []
            return credentials.first { $0["credentialId"] as? String == id }?["status"] as? String
        }

        // Found through the console, by both roles.
        for client in [chief, watcher] {
            let found = try await client.send("GET", "/console/api/tenants/\(tenant)/users/alice/credentials")
            #expect(found.status == 200 && found.text.contains(id) && found.text.contains("Alice's key"), "\(found.text)")
        }
        // The viewer cannot suspend it; the administrator (an operator and more) can, and resume it.
        let refused = try await watcher.send("PATCH", "/console/api/tenants/\(tenant)/users/alice/credentials/\(id)", json: #"{"status":"suspended"}"#)
        #expect(refused.status == 403 && refused.code == "console_role_insufficient")
        #expect(try await status() == "active")
        // The live feed, from here on (the console's consumer starts at the newest offset).
        let feedStart = try await watcher.send("GET", "/console/api/events")
        #expect(feedStart.status == 200 && feedStart.headers["content-type"]?.hasPrefix("text/event-stream") == true)
        let suspended = try await chief.send("PATCH", "/console/api/tenants/\(tenant)/users/alice/credentials/\(id)", json: #"{"status":"suspended"}"#)
        let answered = try suspended.json()["status"] as? String
        #expect(suspended.status == 200 && answered == "suspended", "\(suspended.text)")
        #expect(try await status() == "suspended")
        // The suspension's event reaches the viewer's feed, with the tenant and nothing of the user.
        // (The consumer may still be looking up its newest offsets at first: the change is made
        // again, resumed then suspended, until an event arrives.)
        let seen = await TestStack.eventually(timeout: .seconds(30)) {
            guard let feed = try? await watcher.send("GET", "/console/api/events"), feed.status == 200 else { return false }
            if feed.text.contains(#""type":"signet.registration.credential.status.changed.v1""#) && feed.text.contains(#""tenant":"\#(tenant)""#) {
                #expect(!feed.text.contains("alice") && !feed.text.contains(id))
                return true
            }
            _ = try? await chief.send("PATCH", "/console/api/tenants/\(tenant)/users/alice/credentials/\(id)", json: #"{"status":"active"}"#)
            _ = try? await chief.send("PATCH", "/console/api/tenants/\(tenant)/users/alice/credentials/\(id)", json: #"{"status":"suspended"}"#)
            return false
        }
        #expect(seen, "the credential's status change did not reach the console's feed")
        let resumed = try await chief.send("PATCH", "/console/api/tenants/\(tenant)/users/alice/credentials/\(id)", json: #"{"status":"active"}"#)
        #expect(resumed.status == 200, "\(resumed.text)")
        #expect(try await status() == "active")
        // An unknown user's list is the service's answer, passed on.
        let unknown = try await chief.send("GET", "/console/api/tenants/\(tenant)/users/nobody/credentials")
        #expect([200, 404].contains(unknown.status), "\(unknown.status) \(unknown.text)")
    }

    /// A tenant's settings beyond its description and a user's data through the console
    /// against the running services: UAF facets and policy (registration), apps (oob) and
    /// templates with their preview (oob); then a user found by prefix, the user's methods
    /// masked and devices (viewer), the data-rights document, an unknown session's revocation
    /// and the user's erasure with its signed receipt (operator's role; a viewer's is refused).
    @Test func tenantSettingsTemplatesAndAUsersDataAndErasure() async throws {
        try TestStack.require()
        let operators = "ops-\(UInt32.random(in: 0...UInt32.max))"
        let port = try TestStack.unusedPort()
        let process = try await Self.launchConsole(tenant: operators, port: port)
        defer { process.terminate() }
        let base = "http://127.0.0.1:\(port)"
        let (chief, _) = try await Self.enrol("chief", base: base)
        let (watcher, _) = try await Self.enrol("watcher", base: base)

        let tenant = Stack.newTenantID("console-settings")
        #expect(try await Stack.putTenant(tenant).status == 201)
        let console = "/console/api/tenants/\(tenant)"

        // UAF facets and policy on the registration service; a policy it refuses comes back
        // with its field.
        let uaf = try await chief.send("PUT", "\(console)/uaf-settings", json: #"{"facetIds":["https://example.com","ios:bundle-id:com.example.bank"],"allowSurrogateWithoutMetadata":false}"#)
        #expect(uaf.status == 200, "\(uaf.text)")
        let uafRead = try await watcher.send("GET", "\(console)/uaf-settings")
        #expect(uafRead.status == 200 && uafRead.text.contains("ios:bundle-id:com.example.bank") && uafRead.text.contains(#""allowSurrogateWithoutMetadata":false"#))
        let badPolicy = try await chief.send("PUT", "\(console)/uaf-settings", json: #"{"facetIds":[],"policy":{"accepted":[]}}"#)
        #expect(badPolicy.status == 400 && badPolicy.code == "invalid_field", "\(badPolicy.text)")
        #expect(try await watcher.send("PUT", "\(console)/uaf-settings", json: #"{"facetIds":[]}"#).code == "console_role_insufficient")

        // Apps on the oob service (once the tenant has reached it).
        let apps = #"{"domains":["\#(tenant).example"],"iosAppIds":["ABCDE12345.com.example.bank"],"androidApps":[{"packageName":"com.example.bank","sha256CertFingerprints":["\#((0..<32).map { _ in "AB" }.joined(separator: ":"))"]}],"defaultQrType":"compact"}"#
        var stored: Client.Response?
        _ = await TestStack.eventually {
            stored = try? await chief.send("PUT", "\(console)/app-settings", json: apps)
            return stored?.status == 200
        }
        #expect(stored?.status == 200, "\(stored?.text ?? "no answer")")
        let appsRead = try await watcher.send("GET", "\(console)/app-settings")
        #expect(appsRead.status == 200 && appsRead.text.contains("ABCDE12345.com.example.bank") && appsRead.text.contains("compact"), "\(appsRead.text)")
        let badApp = try await chief.send("PUT", "\(console)/app-settings", json: #"{"domains":[],"iosAppIds":["bank"],"androidApps":[]}"#)
        #expect(badApp.status == 400 && badApp.code == "invalid_field", "\(badApp.text)")
        #expect(try await chief.send("DELETE", "\(console)/app-settings").status == 204)
        #expect(try await watcher.send("GET", "\(console)/app-settings").code == "app_settings_not_found")

        // A French template: previewed (by a viewer), stored, read back, removed.
        let template = #"{"emailSubject":"Code {{tenant}}","emailText":"Votre code : {{code}} ({{minutes}} min)","smsText":"Code {{code}}"}"#
        let preview = try await watcher.send("POST", "\(console)/templates/otp/fr/preview", json: template)
        #expect(preview.status == 200 && preview.text.contains("Votre code : 123456 (5 min)"), "\(preview.text)")
        let saved = try await chief.send("PUT", "\(console)/templates/otp/fr", json: template)
        #expect(saved.status == 200, "\(saved.text)")
        let templateRead = try await watcher.send("GET", "\(console)/templates/otp/fr")
        #expect(templateRead.status == 200 && templateRead.text.contains("Votre code"), "\(templateRead.text)")
        let badTemplate = try await chief.send("PUT", "\(console)/templates/otp/fr", json: #"{"emailSubject":"x","emailText":"{{secret}}","smsText":"x"}"#)
        #expect(badTemplate.status == 400 && badTemplate.code == "invalid_template", "\(badTemplate.text)")
        #expect(try await chief.send("DELETE", "\(console)/templates/otp/fr").status == 204)
        #expect(try await watcher.send("GET", "\(console)/templates/otp/fr").status == 404)

        // A user with a passkey and an e-mail method, made as an RP would.
        let rpKey = "rp-key-\(UInt64.random(in: 0...UInt64.max))"
        #expect(try await TestHTTP.json(
            "PUT", "\(Stack.registration)/v1/admin/tenants/\(tenant)/api-keys/k_00000000000000c2", token: TestStack.adminToken, json: #"{"apiKey":"\#(rpKey)"}"#).status == 201)
        let user = "alice-\(UInt32.random(in: 0...UInt32.max))"
        let options = try await TestHTTP.json(
            "POST", "\(Stack.registration)/v1/tenants/\(tenant)/webauthn/registrations/options", token: rpKey, json: #"{"username":"\#(user)"}"#)
        let decoded = try JSONDecoder().decode(RegistrationOptionsResponse.self, from: Data(options.body))
        let passkey = try SoftAuthenticator()
        let finish = try await TestHTTP.json(
            "POST", "\(Stack.registration)/v1/tenants/\(tenant)/webauthn/registrations", token: rpKey,
            json: try Self.encode(RegistrationFinishRequest(handle: decoded.handle, credential: passkey.create(decoded.publicKey, origin: "https://example.com"))))
        #expect(finish.status == 201, "\(finish.text)")
        var method: TestHTTP.Response?
        _ = await TestStack.eventually {
            method = try? await TestHTTP.json(
                "POST", "\(Stack.registration)/v1/tenants/\(tenant)/users/\(user)/methods", token: rpKey, json: #"{"type":"email_otp","email":"alice.secret@example.org"}"#)
            return method?.status == 201
        }
        #expect(method?.status == 201, "\(method?.text ?? "no answer")")

        // Found by prefix; methods masked and devices for the viewer.
        let found = try await watcher.send("GET", "\(console)/users?prefix=alice-")
        let names = (try found.json()["users"] as? [[String: Any]] ?? []).compactMap { $0["username"] as? String }
        #expect(found.status == 200 && names == [user], "\(found.text)")
        let methods = try await watcher.send("GET", "\(console)/users/\(user)/methods")
        #expect(methods.status == 200 && methods.text.contains("email_otp") && !methods.text.contains("alice.secret@example.org"), "\(methods.text)")
        let devices = await TestStack.eventually { (try? await watcher.send("GET", "\(console)/users/\(user)/devices"))?.status == 200 }
        #expect(devices, "the oob service did not answer the console's key")
        // The data-rights document: not for a viewer; for the operator's role, every part.
        #expect(try await watcher.send("GET", "\(console)/users/\(user)/data").code == "console_role_insufficient")
        let data = try await chief.send("GET", "\(console)/users/\(user)/data")
        let parts = (try data.json()["parts"] as? [String: Any] ?? [:]).keys.sorted()
        #expect(data.status == 200 && parts.contains("registration") && parts.contains("authentication"), "\(data.text)")
        // A session that is not one: the authentication service's own 404, passed on.
        // (The authentication service learns the console's key of the tenant by event.)
        var noSession: Client.Response?
        _ = await TestStack.eventually {
            noSession = try? await chief.send("DELETE", "\(console)/sessions/c2Vzc2lvbi1ub3QtZm91bmQ")
            return noSession?.status == 404
        }
        #expect(noSession?.status == 404 && noSession?.code == "not_found", "\(noSession?.text ?? "no answer")")
        // The erasure: refused to a viewer; requested by the operator's role, then completed
        // with a signed receipt.
        #expect(try await watcher.send("DELETE", "\(console)/users/\(user)").code == "console_role_insufficient")
        let erase = try await chief.send("DELETE", "\(console)/users/\(user)")
        #expect(erase.status == 202, "\(erase.text)")
        let erasureId = try #require(try erase.json()["erasureId"] as? String)
        var receipt: String?
        let completed = await TestStack.eventually(timeout: .seconds(60)) {
            guard let status = try? await chief.send("GET", "\(console)/erasures/\(erasureId)"), status.status == 200,
                (try? status.json())?["status"] as? String == "COMPLETED"
            else { return false }
            receipt = (try? status.json())?["receipt"] as? String
            return true
        }
        #expect(completed && receipt?.split(separator: ".").count == 3, "the erasure did not complete with a receipt")
        let after = try await watcher.send("GET", "\(console)/users?prefix=alice-")
        #expect(after.status == 200 && !after.text.contains(user), "\(after.text)")
    }

    /// The stack's own console through the gateway: the page and its API under /console/, the
    /// console's probes not.
    @Test func theGatewayServesTheConsole() async throws {
        try TestStack.require()
        let gateway = "http://127.0.0.1:\(TestStack.environment["SIGNET_GATEWAY_PORT"] ?? "8080")"
        let page = try await TestHTTP.send("GET", "\(gateway)/console/")
        #expect(page.status == 200 && page.headers["content-security-policy"] != nil)
        let session = try await TestHTTP.send("GET", "\(gateway)/console/api/session")
        let code = try session.json()["code"] as? String
        #expect(session.status == 401 && code == "console_session_required")
        let probe = try await TestHTTP.send("GET", "\(gateway)/console/healthz")
        #expect(probe.status == 404)
    }
}

import Crypto
import Foundation
import Postgres
import Schema
import Testing
import TestSupport
import Tokens

/// Sign-ups that carry a profile, and username-less passkey sign-ups, through the running
/// services: the profile goes to the pii vault (the registration database keeps only its
/// references and masked forms; no service database, Kafka record or log holds a value), the
/// user's data fetch shows it and the purge erases it; a sign-up without a username gets an
/// opaque username and a user handle, registers a discoverable passkey with the display name
/// the user picked, cannot register other methods, and signs in without a username.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(4)))
struct SignUpProfileStackTests {
    typealias Adaptive = AdaptiveSignInStackTests
    typealias Data_ = UserDataStackTests
    let adaptive = Adaptive()

    static func code(_ r: TestHTTP.Response) -> String? { (try? r.json())?["code"] as? String }

    func openSignUp(_ t: Adaptive.Tenant, _ json: String) async throws -> TestHTTP.Response {
        try await TestHTTP.send(
            "POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/signups", headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"],
            body: Array(json.utf8))
    }

    func finish(_ t: Adaptive.Tenant, _ token: String) async throws -> TestHTTP.Response {
        try await TestHTTP.send(
            "POST", "\(Adaptive.authentication)/v1/tenants/\(t.id)/signups/finish", headers: ["Content-Type": "application/json"],
            body: try Adaptive.json(["signUpToken": token]))
    }

    /// Registers a passkey with the sign-up token; the creation options it was made from.
    func registerPasskey(_ t: Adaptive.Tenant, token: String, username: String, displayName: String?) async throws
        -> (SoftAuthenticator, CreationOptionsJSON)
    {
        let base = "\(Adaptive.registration)/v1/tenants/\(t.id)/webauthn/registrations"
        let headers = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
        let options = try await TestHTTP.send(
            "POST", "\(base)/options", headers: headers, body: try Adaptive.json(RegistrationOptionsRequest(username: username, displayName: displayName)))
        try #require(options.status == 200, "\(options.text)")
        let o = try Adaptive.decode(RegistrationOptionsResponse.self, options)
        let authenticator = try SoftAuthenticator()
        let registered = try await TestHTTP.send(
            "POST", base, headers: headers,
            body: try Adaptive.json(RegistrationFinishRequest(handle: o.handle, credential: authenticator.create(o.publicKey, origin: Adaptive.origin))))
        #expect(registered.status == 201, "\(registered.text)")
        return (authenticator, o.publicKey)
    }

    /// A sign-up's token registers only on an account it began: a sign-up opened for a
    /// username before its user's own (or for a user whose passkeys are all suspended) can
    /// neither read, add to, nor finish on that account. Before, the earlier sign-up's token
    /// added a passkey or a method to the user's account once the user had registered, and its
    /// finish returned a session for the user without registering anything.
    @Test func aSignUpCannotRegisterOnAnAccountAnotherBegan() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let victim = "vic-\(UInt32.random(in: 0...UInt32.max))"
        func token(_ r: TestHTTP.Response) throws -> String { try #require(try r.json()["signUpToken"] as? String, "\(r.text)") }
        let attacker = try token(try await openSignUp(t, #"{"username":"\#(victim)"}"#))
        let own = try token(try await openSignUp(t, #"{"username":"\#(victim)"}"#))
        _ = try await registerPasskey(t, token: own, username: victim, displayName: nil)
        // The user's own sign-up goes on: a second method, then its finish.
        let totp = try await TestHTTP.send(
            "POST", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(victim)/methods",
            headers: ["Authorization": "Bearer \(own)", "Content-Type": "application/json"], body: Array(#"{"type":"totp"}"#.utf8))
        #expect(totp.status == 201, "\(totp.text)")

        // The earlier sign-up: every registration route refuses it, and so does its finish.
        let bearer = ["Authorization": "Bearer \(attacker)", "Content-Type": "application/json"]
        let base = "\(Adaptive.registration)/v1/tenants/\(t.id)"
        let attempts: [(String, String, String?)] = [
            ("GET", "\(base)/users/\(victim)/credentials", nil),
            ("GET", "\(base)/users/\(victim)/methods", nil),
            ("POST", "\(base)/webauthn/registrations/options", #"{"username":"\#(victim)"}"#),
            ("POST", "\(base)/users/\(victim)/methods", #"{"type":"totp"}"#),
            ("POST", "\(base)/uaf/registrations/requests", #"{"username":"\#(victim)"}"#),
        ]
        for (method, url, body) in attempts {
            let r = try await TestHTTP.send(method, url, headers: bearer, body: body.map { Array($0.utf8) })
            #expect(r.status == 409 && Self.code(r) == "username_taken", "\(method) \(url): \(r.status) \(r.text)")
        }
        // Once the authentication service knows the user's passkey (its read model), the earlier
        // sign-up's finish is refused for what it is: it registered nothing of what is there.
        let refused = await TestStack.eventually(timeout: .seconds(20)) {
            guard let r = try? await self.finish(t, attacker) else { return false }
            return r.status == 409 && Self.code(r) == "nothing_registered" && r.text.contains("This sign-up registered nothing")
        }
        #expect(refused, "the earlier sign-up's finish was not refused as this sign-up's")
        let finished = try await finish(t, own)
        #expect(finished.status == 200 && (try? finished.json())?["sessionToken"] != nil, "\(finished.text)")

        // A user whose only passkey is suspended: a sign-up opens (nothing active), but
        // registers nothing on the account.
        let bob = "bob-\(UInt32.random(in: 0...UInt32.max))"
        let passkey = try await adaptive.register(bob, in: t)
        let suspend = try await TestHTTP.send(
            "PATCH", "\(base)/users/\(bob)/credentials/\(passkey.credentialIDBase64URL)",
            headers: ["Authorization": "Bearer \(t.key)", "Content-Type": "application/json"], body: Array(#"{"status":"suspended"}"#.utf8))
        #expect(suspend.status == 200, "\(suspend.text)")
        let opened = await TestStack.eventually { (try? await self.openSignUp(t, #"{"username":"\#(bob)"}"#))?.status == 201 }
        try #require(opened)
        let intruder = try token(try await openSignUp(t, #"{"username":"\#(bob)"}"#))
        let options = try await TestHTTP.send(
            "POST", "\(base)/webauthn/registrations/options", headers: ["Authorization": "Bearer \(intruder)", "Content-Type": "application/json"],
            body: Array(#"{"username":"\#(bob)"}"#.utf8))
        #expect(options.status == 409 && Self.code(options) == "username_taken", "\(options.text)")
    }

    @Test func aSignUpProfileIsVaultedFetchedAndPurged() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let username = "prof-\(UInt32.random(in: 0...UInt32.max))"
        let marker = UInt32.random(in: 100_000...999_999)
        let fullName = "Ada Lovelace \(marker)"
        let email = "ada.\(marker)@example.org"
        let phone = "+4477009\(marker)"

        // Every bad member is refused with its own code and field, before anything is stored.
        let bad: [(String, String, String)] = [
            (#"{"fullName": ""}"#, "invalid_full_name", "profile.fullName"),
            (#"{"fullName": "\#(String(repeating: "a", count: 201))"}"#, "invalid_full_name", "profile.fullName"),
            (#"{"fullName": "Ada\u0000"}"#, "invalid_full_name", "profile.fullName"),
            (#"{"fullName": "   "}"#, "invalid_full_name", "profile.fullName"),
            (#"{"email": "ada@"}"#, "invalid_email", "profile.email"),
            (#"{"email": "ada @example.org"}"#, "invalid_email", "profile.email"),
            (#"{"phone": "0044770090"}"#, "invalid_phone", "profile.phone"),
            (#"{"phone": "+12"}"#, "invalid_phone", "profile.phone"),
        ]
        for (profile, code, field) in bad {
            let r = try await openSignUp(t, #"{"username": "\#(username)", "profile": \#(profile)}"#)
            #expect(r.status == 400 && Self.code(r) == code && (try? r.json())?["field"] as? String == field, "\(profile): \(r.text)")
        }
        #expect(try await Data_.count("registration", "SELECT count(*) AS n FROM users WHERE tenant_id = \(t.id)") == 0)

        // The sign-up with a profile opens the account at once, with a user handle.
        let opened = try await openSignUp(
            t, #"{"username": "\#(username)", "profile": {"fullName": "\#(fullName)", "email": "\#(email)", "phone": "\#(phone)"}}"#)
        #expect(opened.status == 201, "\(opened.text)")
        let started = try Adaptive.decode(SignUpStarted.self, opened)
        #expect(started.username == username && started.passkeyOnly == false && started.userHandle != nil, "\(opened.text)")
        #expect(!opened.text.contains(fullName) && !opened.text.contains(email) && !opened.text.contains(phone))
        let (passkey, options) = try await registerPasskey(t, token: started.signUpToken, username: username, displayName: nil)
        #expect(options.user.id == started.userHandle)
        var finished: TestHTTP.Response?
        #expect(await TestStack.eventually {
            finished = try? await finish(t, started.signUpToken)
            return finished?.status == 200
        })
        let session = try Adaptive.decode(SessionTokens.self, try #require(finished)).sessionToken

        // In the vault only: the registration database keeps references and masked forms.
        for database in ["registration", "authentication", "transaction", "oob", "pii"] {
            #expect(try await Data_.leaks(in: database, of: [fullName, email, phone]).isEmpty, "\(database)")
        }
        #expect(try await Data_.count("pii", "SELECT count(*) AS n FROM pii_values WHERE tenant_id = \(t.id) AND kind IN ('name', 'email', 'phone')") == 3)
        #expect(try await Data_.count("registration", "SELECT count(*) AS n FROM user_profiles WHERE tenant_id = \(t.id) AND masked = 'A•••'") == 1)

        // The user's data fetch (their own session) shows the values, decrypted by the vault.
        let fetched = try await TestHTTP.send(
            "GET", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(username)/data", headers: ["Authorization": "Bearer \(session)"])
        try #require(fetched.status == 200, "\(fetched.text)")
        let parts = try #require(try Data_.json(fetched)["parts"] as? [String: [String: Any]])
        let values = (parts["pii"]?["values"] as? [[String: Any]] ?? []).reduce(into: [String: String]()) {
            $0[$1["kind"] as? String ?? ""] = $1["value"] as? String
        }
        #expect(values == ["name": fullName, "email": email, "phone": phone], "\(fetched.text)")
        let profile = parts["registration"]?["signUpProfile"] as? [[String: Any]] ?? []
        #expect(Set(profile.compactMap { $0["kind"] as? String }) == ["name", "email", "phone"], "\(fetched.text)")
        #expect(profile.contains { $0["masked"] as? String == PIIRules.maskEmail(email) })

        // The purge (by the user) erases the profile with the rest.
        let purge = try await TestHTTP.send(
            "DELETE", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(username)", headers: ["Authorization": "Bearer \(session)"])
        try #require(purge.status == 202, "\(purge.text)")
        let erasure = try await Data_.erasure(t, try #require(try Data_.json(purge)["erasureId"] as? String), until: Data_.completed)
        try #require(Data_.completed(erasure), "\(erasure)")
        let tallies = Data_.tallies(erasure)
        #expect(tallies["pii"] == ["dataKeys": 1, "values": 3], "\(tallies)")
        #expect(tallies["registration"]?["signUpProfile"] == 3 && tallies["registration"]?["users"] == 1, "\(tallies)")
        #expect(try await Data_.count("pii", "SELECT count(*) AS n FROM pii_values WHERE tenant_id = \(t.id)") == 0)
        #expect(try await Data_.count("registration", "SELECT count(*) AS n FROM user_profiles WHERE tenant_id = \(t.id)") == 0)
        _ = passkey

        // Never in an event or a log line.
        let scan = try await KafkaLeakScan.scan(for: [fullName, email, phone])
        #expect(scan.sawRecords > 0 && scan.findings.isEmpty, "\(scan.findings)")
        for service in ServiceName.allCases {
            let log = (try? String(contentsOfFile: "\(TestStack.dataDir)/logs/\(service.rawValue).log", encoding: .utf8)) ?? ""
            #expect(!log.contains(fullName) && !log.contains(email) && !log.contains(phone), "\(service) log")
        }
    }

    @Test func aUsernameLessSignUpMakesAPasskeyOnlyAccountThatSignsInWithoutAUsername() async throws {
        try TestStack.require()
        let t = try await adaptive.tenant()
        let opened = try await openSignUp(t, "{}")
        #expect(opened.status == 201, "\(opened.text)")
        let started = try Adaptive.decode(SignUpStarted.self, opened)
        // The server assigned an opaque username (128 random bits) and the user handle.
        #expect(started.passkeyOnly && started.username.hasPrefix("u_") && started.username.utf8.count == 34, "\(opened.text)")
        #expect(started.username.dropFirst(2).allSatisfy { $0.isHexDigit })
        let userHandle = try #require(started.userHandle)
        #expect(Base64URL.decode(userHandle)?.count == 32)
        let another = try Adaptive.decode(SignUpStarted.self, try await openSignUp(t, "{}"))
        #expect(another.username != started.username && another.userHandle != userHandle)

        // A passkey the client reports as not discoverable (credProps.rk false) could never sign
        // this account in: refused, and nothing is stored.
        let base = "\(Adaptive.registration)/v1/tenants/\(t.id)/webauthn/registrations"
        let headers = ["Authorization": "Bearer \(started.signUpToken)", "Content-Type": "application/json"]
        let refusedOptions = try Adaptive.decode(
            RegistrationOptionsResponse.self,
            try await TestHTTP.send(
                "POST", "\(base)/options", headers: headers,
                body: try Adaptive.json(RegistrationOptionsRequest(username: started.username, displayName: "Kim 🌻"))))
        var serverSide = try SoftAuthenticator().create(refusedOptions.publicKey, origin: Adaptive.origin)
        serverSide.clientExtensionResults = ClientExtensionResultsJSON(credProps: .init(rk: false))
        let notDiscoverable = try await TestHTTP.send(
            "POST", base, headers: headers, body: try Adaptive.json(RegistrationFinishRequest(handle: refusedOptions.handle, credential: serverSide)))
        #expect(notDiscoverable.status == 400 && Self.code(notDiscoverable) == "discoverable_credential_required", "\(notDiscoverable.text)")

        // The registration options carry the assigned handle and username and the display name
        // the user picked, and require a discoverable credential.
        let (passkey, options) = try await registerPasskey(t, token: started.signUpToken, username: started.username, displayName: "Kim 🌻")
        #expect(options.user.id == userHandle && options.user.name == started.username && options.user.displayName == "Kim 🌻")
        #expect(options.authenticatorSelection?.residentKey == "required" && options.authenticatorSelection?.requireResidentKey == true)
        // Other methods are not for this account.
        let otp = try await TestHTTP.send(
            "POST", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(started.username)/methods",
            headers: ["Authorization": "Bearer \(started.signUpToken)", "Content-Type": "application/json"], body: Array(#"{"type": "totp"}"#.utf8))
        #expect(otp.status == 409 && Self.code(otp) == "passkey_only_account", "\(otp.text)")
        let uaf = try await TestHTTP.send(
            "POST", "\(Adaptive.registration)/v1/tenants/\(t.id)/uaf/registrations/requests",
            headers: ["Authorization": "Bearer \(started.signUpToken)", "Content-Type": "application/json"],
            body: Array(#"{"username": "\#(started.username)"}"#.utf8))
        #expect(uaf.status == 409 && Self.code(uaf) == "passkey_only_account", "\(uaf.text)")

        var finished: TestHTTP.Response?
        #expect(await TestStack.eventually {
            finished = try? await finish(t, started.signUpToken)
            return finished?.status == 200
        })

        // Username-less sign-in with the discoverable credential gives the account's session.
        let signIn = try await adaptive.start(t, username: nil)
        let done = try await adaptive.step(t, signIn.signinId, with: passkey)
        let result = try Adaptive.decode(SignInProgress.self, done)
        #expect(done.status == 200 && result.status == "SUCCEEDED", "\(done.text)")
        let jwks = try await TestHTTP.send("GET", "\(Adaptive.authentication)/.well-known/jwks.json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/authentication", audience: t.id))
        let jwt = try verifier.verify(try #require(result.sessionToken), now: Date())
        #expect(jwt.claims.subject == started.username)

        // The display name the user picked is kept with the account: in the listing of its
        // passkeys and in the user's data, and erased with the user.
        let session = try #require(result.sessionToken)
        let listed = try await TestHTTP.send(
            "GET", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(started.username)/credentials", headers: ["Authorization": "Bearer \(session)"])
        let list = try Adaptive.decode(CredentialList.self, listed)
        #expect(list.displayName == "Kim 🌻" && list.credentials.count == 1, "\(listed.text)")
        let fetched = try await TestHTTP.send(
            "GET", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(started.username)/data", headers: ["Authorization": "Bearer \(session)"])
        try #require(fetched.status == 200, "\(fetched.text)")
        let parts = try #require(try Data_.json(fetched)["parts"] as? [String: [String: Any]])
        let profile = parts["registration"]?["profile"] as? [[String: Any]] ?? []
        #expect(profile.first?["displayName"] as? String == "Kim 🌻", "\(fetched.text)")
        let purge = try await TestHTTP.send(
            "DELETE", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(started.username)", headers: ["Authorization": "Bearer \(session)"])
        try #require(purge.status == 202, "\(purge.text)")
        let erasure = try await Data_.erasure(t, try #require(try Data_.json(purge)["erasureId"] as? String), until: Data_.completed)
        try #require(Data_.completed(erasure), "\(erasure)")
        #expect(try await Data_.count("registration", "SELECT count(*) AS n FROM users WHERE tenant_id = \(t.id) AND display_name = 'Kim 🌻'") == 0)
        let after = try await TestHTTP.send(
            "GET", "\(Adaptive.registration)/v1/tenants/\(t.id)/users/\(started.username)/credentials", headers: ["Authorization": "Bearer \(t.key)"])
        #expect(after.status == 200 && (try? Adaptive.decode(CredentialList.self, after))?.displayName == nil, "\(after.text)")
    }
}

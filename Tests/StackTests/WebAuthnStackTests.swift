import Crypto
import Foundation
import Postgres
import Schema
import Testing
import TestSupport
import Tokens

/// WebAuthn through the running services: registration on one, sign-in on the other, the
/// credential crossing by event, the session token checked against the published JWKS.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(3)))
struct WebAuthnStackTests {
    static let registration = "http://127.0.0.1:8081/v1/tenants/demo"
    static let authentication = "http://127.0.0.1:8082/v1/tenants/demo"
    static let origin = "http://localhost:8080"
    var rpKey: String { TestStack.environment["SIGNET_DEMO_RP_API_KEY"] ?? "dev-demo-rp-key" }

    func post<T: Encodable, R: Decodable>(_ url: String, _ body: T, key: String? = nil, as: R.Type) async throws -> (Int, R?, [String: Any]) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        var headers = ["Content-Type": "application/json"]
        if let key { headers["Authorization"] = "Bearer \(key)" }
        let r = try await TestHTTP.send("POST", url, headers: headers, body: Array(try encoder.encode(body)))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return (r.status, try? decoder.decode(R.self, from: Data(r.body)), (try? r.json()) ?? [:])
    }

    /// Registers a fresh credential for a fresh user; returns both.
    func register() async throws -> (SoftAuthenticator, String) {
        let username = "user-\(UInt32.random(in: 0...UInt32.max))"
        let (status, options, _) = try await post(
            "\(Self.registration)/webauthn/registrations/options", RegistrationOptionsRequest(username: username, displayName: "Test User"),
            key: rpKey, as: RegistrationOptionsResponse.self)
        #expect(status == 200)
        let o = try #require(options)
        #expect(o.publicKey.rp.id == "localhost")
        #expect(Base64URL.decode(o.publicKey.challenge)?.count == 32)
        #expect(Base64URL.decode(o.publicKey.user.id)?.count == 32 && o.publicKey.user.id != Base64URL.encode(Array(username.utf8)))
        #expect(o.publicKey.pubKeyCredParams.map(\.alg).starts(with: [-7, -8, -257, -37]))
        #expect(o.publicKey.extensions?.credProps == true)
        let authenticator = try SoftAuthenticator()
        let credential = authenticator.create(o.publicKey, origin: Self.origin)
        let (finishStatus, resource, body) = try await post(
            "\(Self.registration)/webauthn/registrations", RegistrationFinishRequest(handle: o.handle, credential: credential, friendlyName: "Test key"),
            key: rpKey, as: CredentialResource.self)
        #expect(finishStatus == 201, "\(body)")
        #expect(resource?.credentialId == authenticator.credentialIDBase64URL)
        #expect(resource?.attestationFormat == "none" && resource?.algorithm == -7 && resource?.backupEligible == true)
        // Replaying the same finish is refused.
        let (replayStatus, _, replay) = try await post(
            "\(Self.registration)/webauthn/registrations", RegistrationFinishRequest(handle: o.handle, credential: credential),
            key: rpKey, as: CredentialResource.self)
        #expect(replayStatus == 400 && replay["code"] as? String == "challenge_replayed")
        return (authenticator, username)
    }

    func signIn(_ authenticator: SoftAuthenticator, username: String?, advanceCounter: Bool = true, origin: String = origin) async throws -> (Int, [String: Any], AuthenticationFinishRequest) {
        let (_, options, _) = try await post(
            "\(Self.authentication)/webauthn/authentications/options", AuthenticationOptionsRequest(username: username),
            as: AuthenticationOptionsResponse.self)
        let o = try #require(options)
        let assertion = try authenticator.get(o.publicKey, origin: origin, advanceCounter: advanceCounter)
        let request = AuthenticationFinishRequest(handle: o.handle, credential: assertion)
        let (status, _, body) = try await post("\(Self.authentication)/webauthn/authentications", request, as: AuthenticationResult.self)
        return (status, body, request)
    }

    @Test func registerThenSignInWithAndWithoutUsername() async throws {
        try TestStack.require()
        let (authenticator, username) = try await register()
        // The credential reaches the authentication service by event.
        let usable = await TestStack.eventually {
            let (_, options, _) = try! await post(
                "\(Self.authentication)/webauthn/authentications/options", AuthenticationOptionsRequest(username: username),
                as: AuthenticationOptionsResponse.self)
            return options?.publicKey.allowCredentials.map(\.id) == [authenticator.credentialIDBase64URL]
        }
        #expect(usable)

        let (status, body, request) = try await signIn(authenticator, username: username)
        #expect(status == 200, "\(body)")
        #expect(body["username"] as? String == username)
        let token = try #require(body["sessionToken"] as? String)
        // Any JWT library can check it against the JWKS; here, Signet's own strict verifier.
        let jwks = try await TestHTTP.send("GET", "http://127.0.0.1:8082/.well-known/jwks.json")
        #expect(jwks.status == 200)
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body),
            options: JWTValidationOptions(issuer: "http://localhost:8080/authentication", audience: "demo"))
        let jwt = try verifier.verify(token, now: Date())
        #expect(jwt.claims.subject == username)
        #expect(jwt.claims.audience == ["demo"])
        #expect(jwt.claims[claim: "amr"] != nil && jwt.claims[claim: "sid"] != nil && jwt.claims[claim: "auth_time"] != nil)

        // The same assertion again: the challenge is single-use.
        let encoder = JSONEncoder()
        let replay = try await TestHTTP.send(
            "POST", "\(Self.authentication)/webauthn/authentications", headers: ["Content-Type": "application/json"],
            body: Array(try encoder.encode(request)))
        let replayCode = try replay.json()["code"] as? String
        #expect(replay.status == 400 && replayCode == "challenge_replayed")

        // Discoverable credential: no username, the user handle identifies the user.
        let (status2, body2, _) = try await signIn(authenticator, username: nil)
        #expect(status2 == 200, "\(body2)")
        #expect(body2["username"] as? String == username)

        // The RP lists the credential.
        let list = try await TestHTTP.send("GET", "\(Self.registration)/users/\(username)/credentials", headers: ["Authorization": "Bearer \(rpKey)"])
        #expect(list.status == 200)
        #expect(list.text.contains(authenticator.credentialIDBase64URL) && list.text.contains("Test key"))
    }

    /// The usernames the authentication service keeps for subject references (#18), by reference.
    static func keptUsernames(_ subjectRef: String) async throws -> [String] {
        let pool = TestStack.pool(database: "signet_authentication", size: 1)
        defer { pool.close() }
        return try await pool.withConnection { conn in
            try await conn.query("SELECT username FROM subject_usernames WHERE tenant_id = 'demo' AND subject_ref = \(subjectRef)")
        }.compactMap { $0.string("username") }
    }

    /// credential.registered.v2 carries no username: the first discoverable sign-in of a user
    /// asks the registration service whose the credential is, gets the right `sub`, and keeps
    /// the answer (one row), which the next sign-in uses.
    @Test func aDiscoverableSignInOfAUserNotSeenYetGetsTheRightSubject() async throws {
        try TestStack.require()
        let (authenticator, username) = try await register()
        let keyText = try #require(TestStack.environment["SIGNET_SUBJECT_KEY"], "the stack exports SIGNET_SUBJECT_KEY")
        let key = try SubjectKey(try #require(Base64URL.decode(keyText)))
        let subjectRef = key.ref(tenant: "demo", username: username)
        // The credential reached the authentication service (a username-first options call
        // finds it by reference, without asking for the username).
        #expect(await TestStack.eventually {
            let (_, options, _) = try! await post(
                "\(Self.authentication)/webauthn/authentications/options", AuthenticationOptionsRequest(username: username),
                as: AuthenticationOptionsResponse.self)
            return options?.publicKey.allowCredentials.map(\.id) == [authenticator.credentialIDBase64URL]
        })
        #expect(try await Self.keptUsernames(subjectRef).isEmpty, "the authentication service has not seen the username yet")

        let (status, body, _) = try await signIn(authenticator, username: nil)
        #expect(status == 200, "\(body)")
        #expect(body["username"] as? String == username)
        let jwks = try await TestHTTP.send("GET", "http://127.0.0.1:8082/.well-known/jwks.json")
        let verifier = JWTVerifier(
            keySet: try JWKSet(json: jwks.body), options: JWTValidationOptions(issuer: "http://localhost:8080/authentication", audience: "demo"))
        let jwt = try verifier.verify(try #require(body["sessionToken"] as? String), now: Date())
        #expect(jwt.claims.subject == username)
        #expect(try await Self.keptUsernames(subjectRef) == [username])

        // Again: answered from the kept row.
        let (again, againBody, _) = try await signIn(authenticator, username: nil)
        #expect(again == 200 && againBody["username"] as? String == username, "\(againBody)")
        #expect(try await Self.keptUsernames(subjectRef) == [username])
    }

    @Test func aCounterThatDoesNotIncreaseSuspendsTheCredential() async throws {
        try TestStack.require()
        let (authenticator, username) = try await register()
        _ = await TestStack.eventually { (try? await signIn(authenticator, username: username).0) == 200 }
        let (status, body, _) = try await signIn(authenticator, username: username, advanceCounter: false)
        #expect(status == 400 && body["code"] as? String == "sign_count_not_increased")
        let (after, afterBody, _) = try await signIn(authenticator, username: username)
        #expect(after == 400 && afterBody["code"] as? String == "credential_suspended")
        // Registration learns of it by event: the credential shows suspended with the reason,
        // and the first sign-in as its last use.
        let auth = ["Authorization": "Bearer \(rpKey)", "Content-Type": "application/json"]
        let listURL = "\(Self.registration)/users/\(username)/credentials"
        let flagged = await TestStack.eventually {
            guard let list = try? await TestHTTP.send("GET", listURL, headers: auth), let json = try? list.json(),
                let c = (json["credentials"] as? [[String: Any]])?.first
            else { return false }
            return c["status"] as? String == "suspended" && c["statusReason"] as? String == "clone_suspected" && c["lastUsedAt"] != nil
        }
        #expect(flagged)
        // An administrator's resume lifts the suspicion everywhere.
        let resumed = try await TestHTTP.send(
            "PATCH", "\(listURL)/\(authenticator.credentialIDBase64URL)", headers: auth, body: Array(#"{"status":"active"}"#.utf8))
        let resumedJSON = try resumed.json()
        #expect(resumed.status == 200 && resumedJSON["status"] as? String == "active" && resumedJSON["statusReason"] == nil)
        #expect(await TestStack.eventually { (try? await signIn(authenticator, username: username).0) == 200 })
    }

    @Test func aSignedInUserAddsAPasskeyWithTheirSessionToken() async throws {
        try TestStack.require()
        let (first, username) = try await register()
        #expect(await TestStack.eventually { (try? await signIn(first, username: username).0) == 200 })
        let (status, body, _) = try await signIn(first, username: username)
        let token = try #require(body["sessionToken"] as? String, "\(status) \(body)")

        // The session token authorises a second registration for the same user.
        let (s1, options, b1) = try await post(
            "\(Self.registration)/webauthn/registrations/options", RegistrationOptionsRequest(username: username), key: token,
            as: RegistrationOptionsResponse.self)
        let o = try #require(options, "\(s1) \(b1)")
        let second = try SoftAuthenticator()
        let (s2, resource, b2) = try await post(
            "\(Self.registration)/webauthn/registrations",
            RegistrationFinishRequest(handle: o.handle, credential: second.create(o.publicKey, origin: Self.origin)), key: token,
            as: CredentialResource.self)
        #expect(s2 == 201 && resource?.credentialId == second.credentialIDBase64URL, "\(b2)")
        let list = try await TestHTTP.send("GET", "\(Self.registration)/users/\(username)/credentials", headers: ["Authorization": "Bearer \(token)"])
        let listed = (try list.json()["credentials"] as? [[String: Any]])?.compactMap { $0["credentialId"] as? String } ?? []
        #expect(list.status == 200 && Set(listed) == [first.credentialIDBase64URL, second.credentialIDBase64URL])

        // Only for its own user, and only for its tenant.
        let (s3, _, b3) = try await post(
            "\(Self.registration)/webauthn/registrations/options", RegistrationOptionsRequest(username: username + "-other"), key: token,
            as: RegistrationOptionsResponse.self)
        #expect(s3 == 403 && b3["code"] as? String == "forbidden")
        let other = try await TestHTTP.send("GET", "\(Self.registration)/users/\(username)-other/credentials", headers: ["Authorization": "Bearer \(token)"])
        #expect(other.status == 403)
        // The user suspends their own authenticator (a lost phone) and resumes it.
        func patch(_ body: String, as bearer: String) async throws -> TestHTTP.Response {
            try await TestHTTP.send(
                "PATCH", "\(Self.registration)/users/\(username)/credentials/\(second.credentialIDBase64URL)",
                headers: ["Authorization": "Bearer \(bearer)", "Content-Type": "application/json"], body: Array(body.utf8))
        }
        let suspend = try await patch(#"{"status":"suspended"}"#, as: token)
        #expect(try suspend.status == 200 && suspend.json()["status"] as? String == "suspended" && suspend.json()["statusReason"] as? String == "user", "\(suspend.text)")
        let resume = try await patch(#"{"status":"active"}"#, as: token)
        #expect(try resume.status == 200 && resume.json()["status"] as? String == "active" && resume.json()["statusReason"] == nil, "\(resume.text)")
        // What the relying party suspended, only the relying party resumes.
        #expect(try await patch(#"{"status":"suspended"}"#, as: rpKey).status == 200)
        let refused = try await patch(#"{"status":"active"}"#, as: token)
        #expect(try refused.status == 403 && refused.json()["code"] as? String == "forbidden", "\(refused.text)")
        let byRP = try await patch(#"{"status":"active"}"#, as: rpKey)
        #expect(try byRP.status == 200 && byRP.json()["status"] as? String == "active")
        let rename = try await TestHTTP.send(
            "PATCH", "\(Self.registration)/users/\(username)/credentials/\(second.credentialIDBase64URL)",
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"], body: Array(#"{"friendlyName":"Phone"}"#.utf8))
        #expect(rename.status == 200)
        let elsewhere = try await TestHTTP.send(
            "GET", "http://127.0.0.1:8081/v1/tenants/other-tenant/users/\(username)/credentials", headers: ["Authorization": "Bearer \(token)"])
        #expect(elsewhere.status == 401)
        // A token whose signature does not verify.
        var parts = token.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(Array(#"{"sub":"\#(username)","aud":["demo"],"iss":"http://localhost:8080/authentication","exp":9999999999}"#.utf8))
        let forged = try await TestHTTP.send(
            "GET", "\(Self.registration)/users/\(username)/credentials", headers: ["Authorization": "Bearer \(parts.joined(separator: "."))"])
        let forgedDetail = try forged.json()["detail"] as? String
        #expect(forged.status == 401 && forgedDetail?.contains("signature_invalid") == true, "\(forged.text)")
    }

    @Test func relatedOriginsDocumentListsTheTenantsOrigins() async throws {
        try TestStack.require()
        let direct = try await TestHTTP.send("GET", "\(Self.registration)/webauthn/related-origins")
        let origins = try direct.json()["origins"] as? [String]
        #expect(direct.status == 200 && origins == [Self.origin])
        // The local gateway serves it where browsers look for it, for the demo tenant's RP ID.
        let wellKnown = try await TestHTTP.send("GET", "http://127.0.0.1:8080/.well-known/webauthn")
        let wellKnownOrigins = try wellKnown.json()["origins"] as? [String]
        #expect(wellKnown.status == 200 && wellKnownOrigins == [Self.origin])
        let unknown = try await TestHTTP.send("GET", "http://127.0.0.1:8081/v1/tenants/no-such-tenant/webauthn/related-origins")
        #expect(unknown.status == 404)
    }

    @Test func refusalsCarryTheFailedCheck() async throws {
        try TestStack.require()
        let (authenticator, username) = try await register()
        _ = await TestStack.eventually { (try? await signIn(authenticator, username: username).0) == 200 }
        let (status, body, _) = try await signIn(authenticator, username: username, origin: "https://evil.example")
        #expect(status == 400 && body["code"] as? String == "origin_not_allowed")
        // Someone else's credential for this username.
        let (other, _) = try await register()
        _ = await TestStack.eventually { (try? await signIn(other, username: nil).0) == 200 }
        let (s2, b2, _) = try await signIn(other, username: username)
        #expect(s2 == 400 && b2["code"] as? String == "credential_not_allowed")
        // A tampered handle.
        let tampered = AuthenticationFinishRequest(handle: "AAAA" + String(repeating: "B", count: 60), credential: try other.get(
            RequestOptionsJSON(challenge: "x", timeout: nil, rpId: "localhost", allowCredentials: [], userVerification: "preferred", hints: []),
            origin: Self.origin))
        let (s3, _, b3) = try await post("\(Self.authentication)/webauthn/authentications", tampered, as: AuthenticationResult.self)
        #expect(s3 == 400 && b3["code"] as? String == "invalid_handle")
        // Registration needs the tenant's RP key.
        let (s4, _, b4) = try await post(
            "\(Self.registration)/webauthn/registrations/options", RegistrationOptionsRequest(username: "x"), as: RegistrationOptionsResponse.self)
        #expect(s4 == 401 && b4["code"] as? String == "unauthorized")
    }

    /// Every service reads bodies with the one strict parser: a body that two parsers would
    /// read two ways (two `username`s) is refused, through the gateway too.
    @Test func bodiesWithDuplicateMembersAreMalformed() async throws {
        try TestStack.require()
        for base in [Self.authentication, "http://127.0.0.1:8080/authentication/v1/tenants/demo"] {
            let r = try await TestHTTP.json("POST", "\(base)/webauthn/authentications/options", json: #"{"username":"alice","username":"mallory"}"#)
            #expect(r.status == 400, "\(r.text)")
            #expect(try r.json()["code"] as? String == "malformed_json")
            #expect(!r.text.contains("mallory"))
        }
        let registration = try await TestHTTP.json(
            "POST", "\(Self.registration)/webauthn/registrations/options", token: rpKey, json: #"{"username":"alice","displayName":"A","username":"bob"}"#)
        #expect(registration.status == 400, "\(registration.text)")
        #expect(try registration.json()["code"] as? String == "malformed_json")
    }

    @Test func suspendResumeRenameAndDeregister() async throws {
        try TestStack.require()
        let (authenticator, username) = try await register()
        #expect(await TestStack.eventually { (try? await signIn(authenticator, username: username).0) == 200 })
        let url = "\(Self.registration)/users/\(username)/credentials/\(authenticator.credentialIDBase64URL)"
        let auth = ["Authorization": "Bearer \(rpKey)", "Content-Type": "application/json"]
        func patch(_ json: String) async throws -> TestHTTP.Response {
            try await TestHTTP.send("PATCH", url, headers: auth, body: Array(json.utf8))
        }
        let suspended = try await patch(#"{"status":"suspended"}"#)
        let suspendedStatus = try suspended.json()["status"] as? String
        #expect(suspended.status == 200 && suspendedStatus == "suspended")
        #expect(await TestStack.eventually { (try? await signIn(authenticator, username: username).1["code"] as? String) == "credential_suspended" })
        let resumed = try await patch(#"{"status":"active","friendlyName":"Renamed key"}"#)
        let resumedName = try resumed.json()["friendlyName"] as? String
        #expect(resumed.status == 200 && resumedName == "Renamed key")
        #expect(await TestStack.eventually { (try? await signIn(authenticator, username: username).0) == 200 })
        let bad = try await patch(#"{"status":"deleted"}"#)
        let badField = try bad.json()["field"] as? String
        #expect(bad.status == 400 && badField == "status")
        #expect(try await TestHTTP.send("DELETE", url, headers: auth).status == 204)
        #expect(try await TestHTTP.send("DELETE", url, headers: auth).status == 404)
        #expect(await TestStack.eventually { (try? await signIn(authenticator, username: username).1["code"] as? String) == "credential_not_found" })
        let list = try await TestHTTP.send("GET", "\(Self.registration)/users/\(username)/credentials", headers: auth)
        #expect(!list.text.contains(authenticator.credentialIDBase64URL))
    }

    @Test func aTenantsFIDOPolicyRefusesByRule() async throws {
        try TestStack.require()
        let tenant = Stack.newTenantID("policy")
        let admin = TestStack.adminToken
        let created = try await TestHTTP.json(
            "PUT", "\(Stack.registration)/v1/admin/tenants/\(tenant)", token: admin,
            json: #"{"displayName":"Policy","rpId":"localhost","origins":["http://localhost:8080"]}"#)
        #expect(created.status == 201)
        let key = "policy-key-\(UUID().uuidString)"
        #expect(try await TestHTTP.json("PUT", "\(Stack.registration)/v1/admin/tenants/\(tenant)/api-keys/k_00000000000000aa", token: admin, json: #"{"apiKey":"\#(key)"}"#).status == 201)
        let policyURL = "\(Stack.registration)/v1/admin/tenants/\(tenant)/fido-policy"
        let badValue = try await TestHTTP.json("PUT", policyURL, token: admin, json: #"{"userVerification":"sometimes"}"#)
        let badField = try badValue.json()["field"] as? String
        #expect(badValue.status == 400 && badField == "/userVerification")
        let unknown = try await TestHTTP.json("PUT", policyURL, token: admin, json: #"{"userVerificaton":"required"}"#)
        #expect(unknown.status == 400)
        #expect(try await TestHTTP.json("PUT", policyURL, token: "wrong", json: "{}").status == 401)
        let set = try await TestHTTP.json("PUT", policyURL, token: admin, json: #"{"allowedAAGUIDs":["cb69481e-8ff7-4039-93ec-0a2729a154a8"]}"#)
        #expect(set.status == 200)
        let read = try await TestHTTP.send("GET", policyURL, headers: ["Authorization": "Bearer \(admin)"])
        #expect(read.status == 200 && read.text.contains("cb69481e-8ff7-4039-93ec-0a2729a154a8"))

        // The software authenticator's AAGUID is not in the allow list.
        let base = "\(Stack.registration)/v1/tenants/\(tenant)"
        let (_, options, _) = try await post(
            "\(base)/webauthn/registrations/options", RegistrationOptionsRequest(username: "u1"), key: key, as: RegistrationOptionsResponse.self)
        let o = try #require(options)
        let authenticator = try SoftAuthenticator()
        let (status, _, body) = try await post(
            "\(base)/webauthn/registrations", RegistrationFinishRequest(handle: o.handle, credential: authenticator.create(o.publicKey, origin: Self.origin)),
            key: key, as: CredentialResource.self)
        #expect(status == 400 && body["code"] as? String == "policy_aaguid_not_allowed", "\(body)")
        #expect((body["detail"] as? String)?.contains("/allowedAAGUIDs") == true)
    }
}

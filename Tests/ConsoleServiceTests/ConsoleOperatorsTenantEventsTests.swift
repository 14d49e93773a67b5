import Foundation
import HTTPServer
import JSON
import Platform
import Schema
import Testing
@testable import ConsoleService

/// The registration service's events about the operators' tenant, as the console's listener
/// hands them over: a suspended, deleted or erased operator's passkey ends the console
/// sessions it opened, and a weaker FIDO policy of the tenant is put back at once.
@Suite struct ConsoleOperatorsTenantEventsTests {
    /// A console where `ada` signs in with passkey `c-ada` (user handle `uh-ada`) and `vera`
    /// with `c-vera` (`uh-vera`), as the handle of the sign-in says.
    static func fixture() throws -> ConsoleFixture {
        let upstream = FakeUpstream { call in
            guard call.path.hasSuffix("/webauthn/authentications") else { return FakeUpstream.json("{}") }
            let name = call.body?.contains(#""handle":"h-vera""#) == true ? "vera" : "ada"
            return FakeUpstream.json(
                #"{"sessionToken":"\#(ConsoleFixture.sessionToken(name, amr: ["hwk", "user", "mfa"]))","username":"\#(name)","credentialId":"c-\#(name)","expiresAt":"2030-01-01T00:00:00Z"}"#)
        }
        return try ConsoleFixture(upstream: upstream)
    }

    static func signIn(_ name: String, _ fixture: ConsoleFixture) async -> (response: HTTPResponse, cookie: String?) {
        let response = await fixture.send(
            "POST", "/console/api/sign-in", json: #"{"handle":"h-\#(name)","credential":{"id":"x","response":{"userHandle":"uh-\#(name)"}}}"#)
        let cookie = response.header("Set-Cookie")?.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last.map(String.init)
        return (response, cookie)
    }

    static func events(_ fixture: ConsoleFixture, weakened: @escaping @Sendable () -> Void = {}) -> OperatorsTenantEvents {
        OperatorsTenantEvents(tenant: "operators", sessions: fixture.app.sessions, logger: Logger(label: "test", level: .error), policyWeakened: weakened)
    }

    static func envelope<P: EventPayload>(_ payload: P) throws -> EventEnvelope {
        try EventEnvelope(payload, source: ServiceName.registration.eventSource, subject: "operators")
    }

    static func sessionStatus(_ fixture: ConsoleFixture, _ cookie: String) async -> Int {
        await fixture.send("GET", "/console/api/session", cookie: cookie, csrf: nil).status
    }

    @Test(arguments: ["suspended", "deleted"])
    func aSuspendedOrDeletedPasskeyEndsTheSessionsItOpened(_ status: String) async throws {
        let fixture = try Self.fixture()
        let events = Self.events(fixture)
        let ada = try #require(await Self.signIn("ada", fixture).cookie)
        let vera = try #require(await Self.signIn("vera", fixture).cookie)
        #expect(await Self.sessionStatus(fixture, ada) == 200)
        #expect(await Self.sessionStatus(fixture, vera) == 200)

        // The same credential id in another tenant is another credential.
        await events.apply(try Self.envelope(CredentialStatusChanged(tenantId: "acme", credentialId: "c-ada", status: status, changedAt: Date())))
        #expect(await Self.sessionStatus(fixture, ada) == 200)

        await events.apply(try Self.envelope(CredentialStatusChanged(tenantId: "operators", credentialId: "c-ada", status: status, changedAt: Date())))
        let ended = await fixture.send("GET", "/console/api/session", cookie: ada, csrf: nil)
        #expect(ended.status == 401 && ended.code == "console_session_required")
        #expect(await Self.sessionStatus(fixture, vera) == 200, "another operator's passkey: the session stays")

        // Until the authentication service's copy has caught up, a sign-in with the passkey may
        // still succeed there: the console opens no session for it.
        let again = await Self.signIn("ada", fixture)
        #expect(again.response.status == 403 && again.response.code == "console_credential_inactive")
        #expect(again.cookie == nil)

        // Resumed (a suspension only), it signs in again.
        if status == "suspended" {
            await events.apply(try Self.envelope(CredentialStatusChanged(tenantId: "operators", credentialId: "c-ada", status: "active", changedAt: Date())))
            #expect(await Self.signIn("ada", fixture).response.status == 200)
        }
    }

    /// An erasure deletes the user's passkeys without a status event: the purge request ends
    /// the sessions of that user handle.
    @Test func anErasedOperatorsSessionsEnd() async throws {
        let fixture = try Self.fixture()
        let events = Self.events(fixture)
        let ada = try #require(await Self.signIn("ada", fixture).cookie)
        let vera = try #require(await Self.signIn("vera", fixture).cookie)
        var purge = UserPurgeRequested.fullExample
        purge.subject = "uh-ada"
        purge.tenantId = "acme"
        await events.apply(try Self.envelope(purge))
        #expect(await Self.sessionStatus(fixture, ada) == 200, "another tenant's user")
        purge.tenantId = "operators"
        await events.apply(try Self.envelope(purge))
        #expect(await Self.sessionStatus(fixture, ada) == 401)
        #expect(await Self.sessionStatus(fixture, vera) == 200)
    }

    /// A session whose user handle is not known (an enrolment's) ends on any erasure of the
    /// operators' tenant: signing in again costs less than guessing.
    @Test func aSessionWithoutAUserHandleEndsOnAnyErasureOfTheTenant() async throws {
        let sessions = OperatorSessions(idleTimeout: .seconds(60), lifetime: .seconds(300))
        let (enrolled, _) = try #require(await sessions.open(username: "ada", role: .administrator, credentialID: "c1", userHandle: nil))
        let (signedIn, _) = try #require(await sessions.open(username: "vera", role: .viewer, credentialID: "c2", userHandle: "uh-vera"))
        #expect(await sessions.userErased(subject: "uh-other") == 1)
        #expect(await sessions.find(token: enrolled) == nil)
        #expect(await sessions.find(token: signedIn) != nil)
    }

    @Test func anEnrolmentsSessionEndsWithItsPasskey() async throws {
        let upstream = FakeUpstream { call in
            switch (call.method, call.path) {
            case ("GET", _): FakeUpstream.json(#"{"credentials":[]}"#)
            case (_, let p) where p.hasSuffix("/registrations/options"): FakeUpstream.json(#"{"handle":"handle-1","publicKey":{"challenge":"c"}}"#)
            default: FakeUpstream.json(#"{"credentialId":"c-enrolled"}"#, status: 201)
            }
        }
        let fixture = try ConsoleFixture(upstream: upstream)
        let options = await fixture.send("POST", "/console/api/enrolments/options", json: #"{"username":"otto","code":"\#(ConsoleFixture.enrolmentCode)"}"#)
        #expect(options.status == 200)
        let finish = await fixture.send("POST", "/console/api/enrolments", json: #"{"handle":"handle-1","credential":{"id":"x"}}"#)
        let cookie = try #require(finish.header("Set-Cookie")?.split(separator: ";").first?.split(separator: "=", maxSplits: 1).last.map(String.init))
        #expect(await Self.sessionStatus(fixture, cookie) == 200)
        await Self.events(fixture).apply(
            try Self.envelope(CredentialStatusChanged(tenantId: "operators", credentialId: "c-enrolled", status: "deleted", changedAt: Date())))
        #expect(await Self.sessionStatus(fixture, cookie) == 401)
    }

    /// A policy event of the operators' tenant without `required` user verification asks the
    /// provisioner to check at once; others do not.
    @Test func aWeakerPolicyOfTheOperatorsTenantIsReported() async throws {
        let fixture = try Self.fixture()
        let count = PlainLock(0)
        let events = Self.events(fixture) { count.withLock { $0 += 1 } }
        var policy = FIDOPolicyChanged.minimalExample
        for (tenant, uv) in [("operators", "required"), ("acme", "preferred"), ("operators", "preferred"), ("operators", "discouraged")] {
            policy.tenantId = tenant
            policy.userVerification = uv
            await events.apply(try Self.envelope(policy))
        }
        #expect(count.withLock { $0 } == 2)
    }

    /// The listener reads the registration topic for these events whatever the feed shows.
    @Test func theListenerReadsTheRegistrationTopicWhateverTheFeed() {
        #expect(ConsoleEventListener.topics(feed: [Topic.authentication]) == [Topic.authentication, Topic.registration])
        #expect(ConsoleEventListener.topics(feed: [Topic.registration, Topic.authentication]) == [Topic.registration, Topic.authentication])
    }
}

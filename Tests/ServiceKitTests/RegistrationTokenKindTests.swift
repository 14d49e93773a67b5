import Foundation
import HTTPServer
import JSON
import Testing
import Tokens
@testable import ServiceKit

/// The kinds of registration-only token, told apart from their claims in one place, and the
/// guards' admission by kind: a QR registration's token reaches only the routes that name its
/// kind (WebAuthn registration options and finish), with a stable code elsewhere.
@Suite struct RegistrationTokenKindTests {
    static func claims(_ extra: [String: JSONValue]) -> JWTClaims {
        JWTClaims(issuer: "http://localhost:8080/authentication", subject: "alice", audience: ["acme/registration"], extra: extra)
    }

    @Test(arguments: [
        (["sign_up": .bool(true)], RegistrationTokenKind.signUp),
        (["sign_up": .bool(true), "signin": .string("si_1")], .enforcedRegistration),
        (["sign_up": .bool(true), "qr": .string("qr_0123456789abcdef0123456789abcdef")], .qrRegistration),
    ] as [([String: JSONValue], RegistrationTokenKind)])
    func eachKindIsReadFromItsClaims(_ c: ([String: JSONValue], RegistrationTokenKind)) {
        #expect(RegistrationTokenKind(claims: Self.claims(c.0)) == c.1)
    }

    @Test(arguments: [
        [:],
        ["sign_up": .bool(false)],
        ["sign_up": .string("true")],
        ["signin": .string("si_1")],
        ["qr": .string("qr_0123456789abcdef0123456789abcdef")],
        // Both purposes at once, or a purpose claim of the wrong type: no kind, no route.
        ["sign_up": .bool(true), "signin": .string("si_1"), "qr": .string("qr_0123456789abcdef0123456789abcdef")],
        ["sign_up": .bool(true), "qr": .bool(true)],
        ["sign_up": .bool(true), "signin": .int(1)],
    ] as [[String: JSONValue]])
    func otherClaimSetsAreNoRegistrationToken(_ extra: [String: JSONValue]) {
        #expect(RegistrationTokenKind(claims: Self.claims(extra)) == nil, "\(extra)")
    }

    static let methodRoutes: Set<RegistrationTokenKind> = [.signUp, .enforcedRegistration]
    static let passkeyRoutes: Set<RegistrationTokenKind> = [.signUp, .enforcedRegistration, .qrRegistration]

    /// The refusal's problem code, or nil when admitted.
    static func refusal(_ principal: Principal, _ kinds: Set<RegistrationTokenKind>) -> String? {
        do {
            try principal.requireAdmitted(registrationTokens: kinds)
            return nil
        } catch let error as HTTPError {
            return error.code.rawValue
        } catch {
            return "\(error)"
        }
    }

    @Test func aQRRegistrationTokenReachesOnlyThePasskeyRoutes() {
        let qr = Principal.signingUp(tenant: "acme", username: "alice", kind: .qrRegistration)
        #expect(Self.refusal(qr, Self.passkeyRoutes) == nil)
        #expect(Self.refusal(qr, Self.methodRoutes) == "registration_token_not_accepted")
        #expect(Self.refusal(qr, []) == "registration_only")
        #expect(ProblemCode.registrationTokenNotAccepted.status == 403)
    }

    @Test(arguments: [RegistrationTokenKind.signUp, .enforcedRegistration])
    func signUpAndEnforcedTokensReachEveryRegistrantRoute(_ kind: RegistrationTokenKind) {
        let principal = Principal.signingUp(tenant: "acme", username: "alice", kind: kind)
        #expect(Self.refusal(principal, Self.methodRoutes) == nil)
        #expect(Self.refusal(principal, Self.passkeyRoutes) == nil)
        #expect(Self.refusal(principal, []) == "registration_only")
        // A route that took only QR registrations would refuse them.
        #expect(Self.refusal(principal, [.qrRegistration]) == "registration_token_not_accepted")
    }

    @Test func otherPrincipalsAreNotTheRegistrantChecksBusiness() {
        for principal in [Principal.user(tenant: "acme", username: "alice"), .relyingParty(tenant: "acme", keyID: "k_1"), .admin] {
            #expect(Self.refusal(principal, []) == nil)
            #expect(Self.refusal(principal, Self.methodRoutes) == nil)
        }
    }
}

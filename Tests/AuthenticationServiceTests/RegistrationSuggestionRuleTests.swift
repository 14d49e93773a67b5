import Rules
import Schema
import Testing
@testable import AuthenticationService

/// The suggestion a sign-in result carries, after the user's answer (the seed's rule).
@Suite struct RegistrationSuggestionRuleTests {
    static let suggest = RuleDecision(action: .suggestRegistration(methods: ["fido2"]), matchedRule: "one-key-only")
    static let enforce = RuleDecision(action: .enforceRegistration(methods: ["fido2"]), matchedRule: "passkeys-now")

    @Test func notNowComesBackAtTheNextSignInWithAWeakerMethod() {
        let shown = RegistrationSuggestion(action: "SUGGEST_REGISTRATION", methods: ["fido2"], matchedRule: "one-key-only", sequences: [["fido2"]])
        #expect(SignInCoordinator.suggestion(Self.suggest, answer: nil, completed: ["fido2"]) == shown)
        // NOT_NOW: a sign-in with a method suggested does not ask again…
        #expect(SignInCoordinator.suggestion(Self.suggest, answer: "NOT_NOW", completed: ["fido2"]) == nil)
        #expect(SignInCoordinator.suggestion(Self.suggest, answer: "NOT_NOW", completed: ["sms_otp", "fido2"]) == nil)
        // …one with a weaker method does, at once (no fixed delay).
        #expect(SignInCoordinator.suggestion(Self.suggest, answer: "NOT_NOW", completed: ["email_otp"]) == shown)
    }

    @Test func neverStopsSuggestionsButNotEnforcement() {
        #expect(SignInCoordinator.suggestion(Self.suggest, answer: "NEVER", completed: ["email_otp"]) == nil)
        #expect(SignInCoordinator.suggestion(Self.suggest, answer: "NEVER", completed: ["fido2"]) == nil)
        #expect(SignInCoordinator.suggestion(Self.enforce, answer: "NEVER", completed: ["fido2"])?.action == "ENFORCE_REGISTRATION")
        #expect(SignInCoordinator.suggestion(RuleDecision(action: .ignoreRegistration, matchedRule: "default"), answer: nil, completed: []) == nil)
    }

    @Test func suggestionsCarryTheRulesSequencesInOrder() {
        let decision = RuleDecision(action: .suggestRegistration(sequences: [["fido2"], ["totp", "sms_otp"]]), matchedRule: "backup")
        let shown = SignInCoordinator.suggestion(decision, answer: nil, completed: ["email_otp"])
        #expect(shown == RegistrationSuggestion(
            action: "SUGGEST_REGISTRATION", methods: ["fido2", "totp", "sms_otp"], matchedRule: "backup", sequences: [["fido2"], ["totp", "sms_otp"]]))
        // NOT_NOW: a sign-in that used a method of any sequence offered is not weaker.
        #expect(SignInCoordinator.suggestion(decision, answer: "NOT_NOW", completed: ["sms_otp"]) == nil)
        #expect(SignInCoordinator.suggestion(decision, answer: "NOT_NOW", completed: ["email_otp"]) == shown)
    }
}

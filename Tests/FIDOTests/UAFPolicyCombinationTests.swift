import Crypto
import FIDO
import Foundation
import JSON
import Testing
import TestSupport

/// UAF policies whose accepted alternatives name several authenticators to be used together
/// (UAF Protocol §3.2.2): a response satisfies an alternative when each of its criteria is
/// matched by a different authenticator of the response; and criteria Signet cannot evaluate
/// are named so that a tenant's policy with them is refused when it is set.
@Suite struct UAFPolicyCombinationTests {
    static let appID = "https://example.test/uaf/facets"
    static let facet = "https://example.test"
    let context = UAFResponseContext(appID: appID, trustedFacetIDs: [facet])
    let request = UAFRegistrationRequest(
        header: UAFOperationHeader(upv: .v1_2, op: "Reg", appID: appID, serverData: "sd-1"), challenge: "chal-1", username: "alice",
        policy: .acceptAll)

    /// A RegistrationResponse from `first`, with the assertions of `others` for the same fcParams.
    func response(_ first: SoftUAFAuthenticator, with others: [SoftUAFAuthenticator] = []) throws -> UAFResponse {
        let fc = try first.fcParams(appID: Self.appID, challenge: "chal-1")
        let extra = try others.map { UAFAssertionMessage(assertion: Base64URL.encode(try $0.registrationAssertion(fcParams: fc))) }
        return try UAFMessageDecoding.response(try first.register(request) { $0.assertions += extra })
    }

    func code(_ policy: UAFPolicy, _ response: UAFResponse) -> UAFError.Code? {
        do {
            _ = try UAFRegistrationVerifier(context: context, policy: policy).verify(
                response, expectedChallenge: "chal-1", serverData: "sd-1", at: MetadataTestPKI.verificationTime)
            return nil
        } catch { return error.code }
    }

    @Test func anAlternativeOfSeveralAuthenticatorsNeedsThemAll() throws {
        let a = SoftUAFAuthenticator(aaid: "ABCD#0001", facetID: Self.facet)
        let b = SoftUAFAuthenticator(aaid: "ABCD#0002", facetID: Self.facet)
        let together = UAFPolicy(accepted: [[UAFMatchCriteria(aaid: ["ABCD#0001"]), UAFMatchCriteria(aaid: ["ABCD#0002"])]])
        // Each alone matches a criterion, but not the combination.
        #expect(code(together, try response(a)) == .policyNotAccepted)
        #expect(code(together, try response(b)) == .policyNotAccepted)
        // Both in one response satisfy it.
        #expect(code(together, try response(a, with: [b])) == nil)
        // Two criteria need two different authenticators: one A cannot stand for both.
        let twoOfA = UAFPolicy(accepted: [[UAFMatchCriteria(aaid: ["ABCD#0001"]), UAFMatchCriteria(aaid: ["ABCD#0001"])]])
        #expect(code(twoOfA, try response(a, with: [b])) == .policyNotAccepted)
        // Another alternative of one authenticator still accepts A alone.
        let either = UAFPolicy(accepted: together.accepted + [[UAFMatchCriteria(aaid: ["ABCD#0001"])]])
        #expect(code(either, try response(a)) == nil)
        // An authenticator outside every alternative is refused even beside a satisfied one.
        let c = SoftUAFAuthenticator(aaid: "ABCD#0003", facetID: Self.facet)
        #expect(code(together, try response(a, with: [b, c])) == .policyNotAccepted)
    }

    @Test func criteriaSignetCannotEvaluateAreNamed() {
        #expect(UAFPolicy.acceptAll.unsupportedCriterion == nil)
        #expect(UAFPolicy(accepted: [[UAFMatchCriteria(aaid: ["ABCD#0001"]), UAFMatchCriteria(tcDisplay: 1)]]).unsupportedCriterion?.path == "accepted[0][1].tcDisplay")
        #expect(UAFPolicy(accepted: [[UAFMatchCriteria(attachmentHint: 1)]]).unsupportedCriterion?.path == "accepted[0][0].attachmentHint")
        #expect(UAFPolicy(accepted: [[UAFMatchCriteria(matcherProtection: 1)]]).unsupportedCriterion?.path == "accepted[0][0].matcherProtection")
        #expect(
            UAFPolicy(accepted: UAFPolicy.acceptAll.accepted, disallowed: [UAFMatchCriteria(tcDisplay: 1)]).unsupportedCriterion?.path
                == "disallowed[0].tcDisplay")
        // What metadata answers (userVerification, keyProtection) is evaluable.
        #expect(UAFPolicy(accepted: [[UAFMatchCriteria(userVerification: 2, keyProtection: 2)]]).unsupportedCriterion == nil)
    }
}

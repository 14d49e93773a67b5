import Schema
import Testing

/// ``SignUpProfile/refusal``: the one check of a sign-up profile, which the authentication
/// service runs when a sign-up starts and the registration service when it opens the account.
@Suite struct SignUpProfileTests {
    @Test func aProfileWhoseGivenMembersPassIsNotRefused() {
        #expect(SignUpProfile.fullExample.refusal == nil)
        #expect(SignUpProfile().refusal == nil)
        #expect(SignUpProfile(email: "ada@example.org").refusal == nil)
    }

    @Test(arguments: [
        (SignUpProfile(fullName: ""), SignUpProfile.Member.fullName),
        (SignUpProfile(fullName: String(repeating: "a", count: 201)), .fullName),
        (SignUpProfile(fullName: "Ada\u{0}"), .fullName),
        (SignUpProfile(fullName: "Ada\u{202E}"), .fullName),
        (SignUpProfile(fullName: "   "), .fullName),
        (SignUpProfile(email: "ada@"), .email),
        (SignUpProfile(email: "ada @example.org"), .email),
        (SignUpProfile(phone: "0044770090"), .phone),
        (SignUpProfile(phone: "+12"), .phone),
    ])
    func eachRefusedMemberIsNamedWithItsField(_ profile: SignUpProfile, _ member: SignUpProfile.Member) throws {
        let refusal = try #require(profile.refusal)
        #expect(refusal.member == member)
        #expect(refusal.field == "profile.\(member.rawValue)")
    }

    @Test func theFirstRefusedMemberIsNamedInMemberOrder() {
        #expect(SignUpProfile(fullName: "", email: "ada@", phone: "+12").refusal?.member == .fullName)
        #expect(SignUpProfile(fullName: "Ada", email: "ada@", phone: "+12").refusal?.member == .email)
        #expect(SignUpProfile(fullName: "Ada", email: "ada@example.org", phone: "+12").refusal?.member == .phone)
    }

    @Test func theDetailNeverCarriesTheValue() throws {
        let value = "secret-value@"
        let refusal = try #require(SignUpProfile(email: value).refusal)
        #expect(!refusal.detail.contains(value))
    }
}

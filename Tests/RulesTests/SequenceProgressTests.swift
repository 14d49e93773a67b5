import Rules
import Testing

@Suite struct SequenceProgressTests {
    static let sequences = [["fido2"], ["fido2", "sms_otp"], ["fido2", "fido2"], ["totp", "email_otp"]]

    @Test(arguments: [
        ([String](), [["fido2"], ["fido2", "sms_otp"], ["fido2", "fido2"], ["totp", "email_otp"]], nil as [String]?),
        (["fido2"], [[], ["sms_otp"], ["fido2"]], ["fido2"]),
        (["totp"], [["email_otp"]], nil),
        (["email_otp", "totp"], [[]], ["totp", "email_otp"]),
        (["sms_otp"], [["fido2"]], nil),
        (["fido2", "fido2"], [[]], ["fido2", "fido2"]),
        (["password"], [], nil),
    ] as [([String], [[String]], [String]?)])
    func progress(_ completed: [String], _ remaining: [[String]], _ satisfied: [String]?) {
        let p = SequenceProgress(sequences: Self.sequences, completed: completed)
        #expect(p.remaining == remaining)
        #expect(p.satisfied == satisfied)
        #expect(p.isExhausted == remaining.isEmpty)
    }

    @Test func allowsOnlyNextStepsOfPossibleSequences() {
        let p = SequenceProgress(sequences: [["fido2", "sms_otp"], ["totp"]], completed: ["fido2"])
        #expect(p.allows("sms_otp"))
        #expect(!p.allows("totp"))
        #expect(!p.allows("fido2"))
    }
}

import FIDO
import Testing

/// The FIDO policy's `appId` (WebAuthn L3 §10.1.1): an https URL, kept through the document.
@Suite struct FIDOPolicyAppIDTests {
    @Test func anHTTPSAppIDRoundTripsAndIsOptional() throws {
        let policy = try FIDOPolicy(document: Array(#"{"appId": "https://login.example.com/u2f/appid.json"}"#.utf8))
        #expect(policy.appId == "https://login.example.com/u2f/appid.json")
        #expect(try FIDOPolicy(document: policy.document()) == policy)
        #expect(try FIDOPolicy(document: Array("{}".utf8)).appId == nil)
        #expect(!String(decoding: FIDOPolicy.consumerDefault.document(), as: UTF8.self).contains("appId"))
    }

    @Test(arguments: ["http://login.example.com/appid.json", "https://", "login.example.com", "https://a b", ""])
    func anAppIDThatIsNotAnHTTPSURLIsRefused(_ appID: String) {
        let error = #expect(throws: FIDOPolicyError.self) { try FIDOPolicy(document: Array(#"{"appId": "\#(appID)"}"#.utf8)) }
        #expect(error?.code == .invalid && error?.path == "/appId", "\(String(describing: error))")
    }
}

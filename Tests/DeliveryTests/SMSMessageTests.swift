import Testing

@testable import Delivery

@Suite struct SMSMessageTests {
    @Test(arguments: ["+15551234567", "+33612345678", "+4915112345678", "+1234567"])
    func acceptsE164Numbers(number: String) throws {
        #expect(try SMSMessage(to: number, text: "hi").to == number)
    }

    @Test(arguments: ["15551234567", "+0551234567", "+1555123456789012", "+123456", "+1 555 123 4567", "+1555123456a", "", "+"])
    func refusesOtherNumbers(number: String) throws {
        let error = try #require(throws: DeliveryError.self) { try SMSMessage(to: number, text: "hi") }
        #expect(error.code == .invalidAddress)
    }

    @Test func refusesEmptyAndOverlongTexts() throws {
        let empty = try #require(throws: DeliveryError.self) { try SMSMessage(to: "+15551234567", text: "") }
        #expect(empty.code == .invalidMessage)
        let long = String(repeating: "x", count: SMSMessage.maximumTextLength + 1)
        let overlong = try #require(throws: DeliveryError.self) { try SMSMessage(to: "+15551234567", text: long) }
        #expect(overlong.code == .invalidMessage)
    }

    @Test func refusesControlCharactersInTheSender() throws {
        let error = try #require(throws: DeliveryError.self) { try SMSMessage(to: "+15551234567", text: "x", sender: "A\nB") }
        #expect(error.code == .invalidAddress)
    }

    @Test func writesTheGatewayJSON() throws {
        let message = try SMSMessage(to: "+15551234567", text: "Code \"482913\"\n\\ é\u{1}", sender: "ACME")
        #expect(message.jsonBody() == #"{"to":"+15551234567","text":"Code \"482913\"\n\\ é\u0001","sender":"ACME"}"#)
        let anonymous = try SMSMessage(to: "+15551234567", text: "x")
        #expect(anonymous.jsonBody() == #"{"to":"+15551234567","text":"x"}"#)
        #expect(anonymous.jsonBody(defaultSender: "Signet") == #"{"to":"+15551234567","text":"x","sender":"Signet"}"#)
        #expect(!message.description.contains("555") && !message.description.contains("482913"))
    }
}

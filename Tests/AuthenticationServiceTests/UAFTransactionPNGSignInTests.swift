import Crypto
import FIDO
import Foundation
import JSON
import Schema
import ServiceTestSupport
import Testing
import TestSupport
@testable import AuthenticationService

/// `image/png` transaction confirmation through the authentication service's UAF API: the
/// request's `transaction` list is checked (the PNG strictly, against its characteristics), its
/// hashes are sealed in `serverData`, and the assertion must sign the hash of a form sent.
@Suite(.enabled(if: TestStack.enabled), .serialized, .timeLimit(.minutes(2)))
struct UAFTransactionPNGSignInTests {
    typealias Harness = ServiceHarness<AuthenticationService>

    static let grey = UAFDisplayPNGCharacteristics(width: 16, height: 8, bitDepth: 8, colorType: 0)
    static let characteristics = #"{"width":16,"height":8,"bitDepth":8,"colorType":0,"compression":0,"filter":0,"interlace":0}"#

    /// A request body with one PNG form (and whatever else `more` adds to the list).
    static func body(_ png: [UInt8], characteristics: String = Self.characteristics, more: String = "") -> String {
        #"{"username":"alice","transaction":[{"contentType":"image/png","content":"\#(Base64URL.encode(png))","tcDisplayPNGCharacteristics":\#(characteristics)}\#(more)]}"#
    }

    @Test func aPNGTransactionIsConfirmedAndAnotherImageIsRefused() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let authenticator = SoftUAFAuthenticator(aaid: "ABCD#0011", facetID: "https://acme.example")
        try await UAFSignInTests.registered(h, authenticator)
        let png = TestPNG.make(width: 16, height: 8)

        // The request carries the image and its characteristics for the client.
        let request = try await UAFSignInTests.request(h, Self.body(png))
        let form = try #require(request.transaction?.first)
        #expect(form.contentType == "image/png" && Base64URL.decode(form.content) == png && form.tcDisplayPNGCharacteristics == Self.grey)
        let confirmed = try await UAFSignInTests.finish(h, try authenticator.authenticate(request))
        #expect(confirmed.status == 200 && confirmed.body.contains(#""transactionConfirmed":true"#), "\(confirmed.body)")

        // The authenticator signed the hash of another image: refused.
        let other = try await UAFSignInTests.request(h, Self.body(png))
        let swapped = try await UAFSignInTests.finish(h, try authenticator.authenticate(other, transactionContent: TestPNG.make(width: 16, height: 9)))
        #expect(swapped.status == 400 && swapped.body.contains("uaf_transaction_content_hash_mismatch"), "\(swapped.body)")
        // An authenticator that shows nothing (mode 0x01) for a PNG request: refused.
        let unshown = try await UAFSignInTests.finish(h, try authenticator.authenticate(try await UAFSignInTests.request(h, Self.body(png)), mode: 0x01))
        #expect(unshown.status == 400 && unshown.body.contains("uaf_authentication_mode_mismatch"), "\(unshown.body)")

        // Text and PNG forms of one transaction: a display that takes 16×8 images signs the PNG,
        // a text-only client signs the text; both confirm.
        let both = Self.body(png, more: #",{"contentType":"text/plain","content":"\#(Base64URL.encode(Array("Pay 5 EUR".utf8)))"}"#)
        let mixed = try await UAFSignInTests.request(h, both)
        #expect(mixed.transaction?.map(\.contentType) == ["image/png", "text/plain"])
        authenticator.display = Self.grey
        #expect(try await UAFSignInTests.finish(h, try authenticator.authenticate(mixed)).status == 200)
        authenticator.display = nil
        let text = try await UAFSignInTests.request(h, both)
        #expect(try await UAFSignInTests.finish(h, try authenticator.authenticate(text, transactionContent: Array("Pay 5 EUR".utf8))).status == 200)
    }

    @Test func badTransactionContentIsRefusedWithItsCode() async throws {
        let h = try await Harness.withDatabase()
        defer { Task { await h.close() } }
        try await h.seedTenant("acme", apiKey: "acme-key", origins: ["https://acme.example"])
        let png = TestPNG.make(width: 16, height: 8)
        func refused(_ json: String) async throws -> (code: String?, field: String?) {
            let response = await h.send("POST", "/v1/tenants/acme/uaf/authentications/requests", json: json)
            #expect(response.status == 400, "\(String(decoding: response.body, as: UTF8.self))")
            let problem = try JSONValueDecoder().decode([String: JSONValue].self, from: response.body)
            return (problem["code"]?.stringValue, problem["field"]?.stringValue)
        }
        var crc = png
        crc[30] ^= 1
        #expect(try await refused(Self.body(crc)) == ("uaf_transaction_png_malformed", "transaction[0].content"))
        let text = TestPNG.make(width: 16, height: 8, extra: [TestPNG.chunk("tEXt", Array("Comment\u{0}pay EVIL".utf8))])
        #expect(try await refused(Self.body(text)) == ("uaf_transaction_png_unsupported_chunk", "transaction[0].content"))
        #expect(try await refused(Self.body(TestPNG.make(width: 16, height: 9))) == ("uaf_transaction_png_characteristics_mismatch", "transaction[0].content"))
        let big = TestPNG.make(width: 200, height: 170)
        #expect(big.count > UAFTransactionPNG.maximumBytes)
        #expect(try await refused(Self.body(big)) == ("uaf_transaction_png_too_large", "transaction[0].content"))
        // The protocol's shape: characteristics required for PNG, known content types, 1-4 forms,
        // base64url content, not with transactionText.
        #expect(
            try await refused(#"{"transaction":[{"contentType":"image/png","content":"\#(Base64URL.encode(png))"}]}"#)
                == ("invalid_field", "transaction[0].tcDisplayPNGCharacteristics"))
        #expect(
            try await refused(Self.body(png, characteristics: #"{"width":16}"#)) == ("invalid_field", "transaction[0].tcDisplayPNGCharacteristics"))
        #expect(try await refused(#"{"transaction":[{"contentType":"image/gif","content":"R0lG"}]}"#) == ("invalid_field", "transaction[0].contentType"))
        #expect(try await refused(#"{"transaction":[{"contentType":"text/plain","content":"a+b/"}]}"#) == ("invalid_field", "transaction[0].content"))
        #expect(try await refused(#"{"transaction":[]}"#) == ("invalid_field", "transaction"))
        let five = Array(repeating: #"{"contentType":"text/plain","content":"YQ"}"#, count: 5).joined(separator: ",")
        #expect(try await refused(#"{"transaction":[\#(five)]}"#) == ("invalid_field", "transaction"))
        #expect(try await refused(#"{"transactionText":"Pay","transaction":[{"contentType":"text/plain","content":"YQ"}]}"#) == ("invalid_field", "transaction"))
        #expect(
            try await refused(#"{"transaction":[{"contentType":"text/plain","content":"YQ","tcDisplayPNGCharacteristics":\#(Self.characteristics)}]}"#)
                == ("invalid_field", "transaction[0].tcDisplayPNGCharacteristics"))
    }
}

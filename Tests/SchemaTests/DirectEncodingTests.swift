import Foundation
import HTTPServer
import JSON
import Schema
import Testing

/// The sign-in bodies that write their own JSON (`JSONDirectEncodable`) write exactly what the
/// generic encoder writes from their `Encodable` conformance, byte for byte.
@Suite struct DirectEncodingTests {
    /// Strings that need escaping (quote, backslash, control characters), non-ASCII and `/`.
    static let awkward = ["plain", "", "quote \" and \\ back", "line\nbreak\ttab\u{01}\u{1F}", "é 𝄞 ü/slash", "</script>"]

    static var descriptors: [[CredentialDescriptorJSON]] {
        [
            [],
            [CredentialDescriptorJSON(id: "AAEC", transports: nil)],
            [CredentialDescriptorJSON(id: "AAEC", transports: []), CredentialDescriptorJSON(id: "x\"y", transports: ["internal", "hybrid", "usb"])],
        ]
    }

    static var requestOptions: [RequestOptionsJSON] {
        var all: [RequestOptionsJSON] = []
        for (i, allow) in descriptors.enumerated() {
            for (j, text) in awkward.enumerated() {
                all.append(
                    RequestOptionsJSON(
                        challenge: text, timeout: (i + j) % 2 == 0 ? nil : 300_000 * j - 7, rpId: awkward[(j + 1) % awkward.count],
                        allowCredentials: allow, userVerification: text, hints: j % 3 == 0 ? [] : Array(awkward.prefix(j)),
                        extensions: [nil, AuthenticationExtensionsJSON(), AuthenticationExtensionsJSON(appid: text)][(i + j) % 3]))
            }
        }
        return all
    }

    static func expectSame<T: JSONDirectEncodable>(_ value: T) throws {
        let generic = try JSONValueEncoder().encodeToBytes(value)
        #expect(String(decoding: value.directJSONBytes, as: UTF8.self) == String(decoding: generic, as: UTF8.self))
    }

    @Test func requestOptionsMatchTheEncoder() throws {
        for options in Self.requestOptions { try Self.expectSame(options) }
    }

    @Test func optionsResponsesMatchTheEncoder() throws {
        for (i, options) in Self.requestOptions.enumerated() {
            try Self.expectSame(AuthenticationOptionsResponse(handle: Self.awkward[i % Self.awkward.count], publicKey: options))
        }
    }

    @Test func descriptorsAndExtensionsMatchTheEncoder() throws {
        for list in Self.descriptors { for d in list { try Self.expectSame(d) } }
        try Self.expectSame(AuthenticationExtensionsJSON())
        for text in Self.awkward { try Self.expectSame(AuthenticationExtensionsJSON(appid: text)) }
    }

    @Test(arguments: [0, 1_764_000_000, 1_764_000_000.999, -1.5, 4_102_444_799.5])
    func resultsMatchTheEncoder(seconds: Double) throws {
        for text in Self.awkward {
            try Self.expectSame(
                AuthenticationResult(sessionToken: "eyJ.\(text).sig", username: text, credentialId: text, expiresAt: Date(timeIntervalSince1970: seconds)))
        }
    }

    /// The sign-in event's payload, with and without its optionals, and through `EventCoding`
    /// (which the outbox uses) and a whole envelope.
    @Test(arguments: [0, 1_764_000_000, 1_764_000_000.999, -1.5])
    func signInEventsMatchTheEncoder(seconds: Double) throws {
        for (i, text) in Self.awkward.enumerated() {
            let event = AuthenticationSucceeded(
                tenantId: text, method: i % 2 == 0 ? "fido2" : "uaf", credentialId: Self.awkward[(i + 1) % Self.awkward.count], signCount: [0, 1, 4_294_967_295, -3][i % 4],
                backupState: i % 2 == 0, userVerified: i % 3 == 0, sessionId: i % 3 == 1 ? nil : "s_\(text)", authenticatedAt: Date(timeIntervalSince1970: seconds + Double(i)),
                aaid: i % 2 == 0 ? nil : "FFFF#\(text)")
            try Self.expectSame(event)
            #expect(try EventCoding.encode(event) == (try JSONValueEncoder().encodeToBytes(event)))
            // (Dates are written to the second, by either writer: the round trip holds for whole seconds.)
            if seconds.rounded() == seconds {
                #expect(try EventCoding.decode(AuthenticationSucceeded.self, from: EventCoding.encode(event)) == event)
            }
        }
        try Self.expectSame(AuthenticationSucceeded.fullExample)
        let envelope = try EventEnvelope(AuthenticationSucceeded.fullExample, source: "test", subject: "s")
        #expect(envelope.data == (try JSONValueEncoder().encodeToBytes(AuthenticationSucceeded.fullExample)))
    }

    /// A stored property added to one of these types must reach its writer: with every optional
    /// set, the direct writer names each of the type's properties (Mirror's labels) at the top
    /// level of its object. A new optional left unset in the example below fails too.
    @Test func everyStoredPropertyIsWritten() throws {
        let descriptor = CredentialDescriptorJSON(id: "AAEC", transports: ["usb"])
        let extensions = AuthenticationExtensionsJSON(appid: "https://example.com")
        let options = RequestOptionsJSON(
            challenge: "c", timeout: 1, rpId: "r", allowCredentials: [descriptor], userVerification: "u", hints: ["h"], extensions: extensions)
        let values: [any JSONDirectEncodable] = [
            descriptor, extensions, options, AuthenticationOptionsResponse(handle: "h", publicKey: options),
            AuthenticationResult(sessionToken: "t", username: "u", credentialId: "c", expiresAt: Date(timeIntervalSince1970: 0)),
            AuthenticationSucceeded.fullExample,
        ]
        for value in values {
            var labels: Set<String> = []
            for child in Mirror(reflecting: value).children {
                let label = try #require(child.label)
                let unwrapped = Mirror(reflecting: child.value)
                #expect(!(unwrapped.displayStyle == .optional && unwrapped.children.isEmpty), "\(type(of: value)).\(label) is nil in the example: set it")
                labels.insert(label)
            }
            let object = try JSONSerialization.jsonObject(with: Data(value.directJSONBytes)) as? [String: Any]
            #expect(Set(try #require(object).keys) == labels, "\(type(of: value))")
        }
    }

    /// `HTTPResponse.json` takes the direct writer for such values, with the same body.
    @Test func theResponseCarriesTheSameBody() throws {
        let result = AuthenticationResult(sessionToken: "t", username: "u\"", credentialId: "c", expiresAt: Date(timeIntervalSince1970: 1_764_000_000))
        let response = try HTTPResponse.json(result, headers: [("Cache-Control", "no-store")])
        #expect(response.body == (try JSONValueEncoder().encodeToBytes(result)))
        #expect(response.header("content-type") == "application/json")
        #expect(response.header("cache-control") == "no-store")
    }
}

import Foundation
import Testing

@testable import Tokens
import JSON

/// The strict JSON parser and the writer behind every JOSE header, claim set and key.
@Suite struct JSONParserTests {
    func parse(_ text: String, maximumDepth: Int = JSONParser.defaultMaximumDepth) throws -> JSONValue {
        try JSONParser.parse(Array(text.utf8), what: "test", maximumDepth: maximumDepth)
    }

    @Test func parsesEveryKindOfValue() throws {
        let value = try parse(#" { "s" : "a\"b\\c\/d\n\u00e9\ud83d\ude00" , "i": -42, "d": 1.5e2, "z": 0, "t": true, "f": false, "n": null, "a": [1, [], {}] } "#)
        #expect(value == .object([
            "s": .string("a\"b\\c/d\né😀"), "i": .int(-42), "d": .double(150), "z": .int(0), "t": .bool(true),
            "f": .bool(false), "n": .null, "a": .array([.int(1), .array([]), .object([:])]),
        ]))
        #expect(try parse("9223372036854775807") == .int(Int64.max))
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try parse("-0") == .int(0))
        #expect(try parse("\"\u{00e9}\"") == .string("é"))  // raw UTF-8
    }

    @Test(arguments: [
        #"{"a":1,"a":1}"#,  // duplicate member
        #"{"a":{"b":1,"b":2}}"#,  // duplicate, nested
        #"{"a":1,}"#, "[1,]", "[1 2]", #"{"a" 1}"#, #"{a:1}"#, "{'a':1}",
        "01", "1.", ".5", "1e", "+1", "-", "0x10", "1e999", "1e-400", "-0.5e-999", "NaN", "Infinity",
        "tru", "nul", "True",
        #""\ud800""#, #""\udc00x""#, #""\ud800\u0041""#,  // lone surrogates
        #""\x""#, #""\u12""#, "\"a\tb\"", "\"a\u{01}b\"",  // bad escapes, raw control characters
        #""abc"#,  // unterminated
        "{} {}", "1 2", "",  // trailing content, nothing
    ])
    func refusesWhatRFC8259OrJOSEForbid(text: String) {
        #expect(throws: JOSEError.self, "\(text)") { try parse(text) }
    }

    @Test func refusesInvalidUTF8() {
        for bytes: [UInt8] in [[0x22, 0xC3, 0x28, 0x22], [0x22, 0xFF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xC0, 0xAF, 0x22]] {
            #expect(throws: JOSEError.self) { try JSONParser.parse(bytes, what: "test") }
        }
    }

    @Test func boundsNesting() throws {
        let deep = String(repeating: "[", count: 17) + String(repeating: "]", count: 17)
        let error = #expect(throws: JOSEError.self) { try parse(deep) }
        #expect(error?.code == .malformed)
        #expect(try parse(String(repeating: "[", count: 16) + String(repeating: "]", count: 16)) != .null)
        // No stack overflow on hostile depth.
        #expect(throws: JOSEError.self) { try parse(String(repeating: "[", count: 100_000)) }
    }

    @Test func writerIsCompactSortedAndRoundTrips() throws {
        let value: JSONValue = ["b": [1, 2.5, "x/y"], "a": ["nested": nil], "c": "quote\" back\\ nl\n ctl\u{01} é"]
        let text = value.jsonString
        #expect(text == #"{"a":{"nested":null},"b":[1,2.5,"x/y"],"c":"quote\" back\\ nl\n ctl\u0001 é"}"#)
        #expect(try parse(text) == value)
        // Foundation reads it the same way.
        let foundation = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(foundation?["c"] as? String == "quote\" back\\ nl\n ctl\u{01} é")
        #expect(JSONValue.double(.nan).jsonString == "null")
        #expect(JSONValue.double(3).jsonString == "3")
    }

    @Test func codableRoundTrip() throws {
        let value: JSONValue = ["amr": ["hwk"], "n": 7, "f": 0.25, "ok": true, "none": nil]
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
    }
}

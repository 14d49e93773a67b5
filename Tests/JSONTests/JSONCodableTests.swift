import Foundation
import JSON
import Testing

// JSONValueEncoder and JSONValueDecoder against Foundation's JSONEncoder/JSONDecoder with the
// settings the HTTP server used before them (sorted keys, unescaped slashes, ISO 8601 dates):
// same JSON values out, same Swift values in, same error cases and coding paths.

private enum Color: String, Codable, Equatable { case red, green }

private struct Leaf: Codable, Equatable {
    var name: String
    var weight: Double
    var tags: [String]
}

private struct Sample: Codable, Equatable {
    var text: String
    var escaped: String
    var int: Int
    var negative: Int64
    var small: UInt8
    var big: UInt32
    var double: Double
    var integralDouble: Double
    var float: Float
    var flag: Bool
    var optionalPresent: String?
    var optionalAbsent: String?
    var color: Color
    var leaves: [Leaf]
    var matrix: [[Int]]
    var map: [String: Int]
    var nestedMap: [String: [Leaf]]
    var date: Date
    var data: Data
    var url: URL
    var empty: [String]
}

/// Hand-written coding: nested containers, a super encoder, an unkeyed container of mixed
/// values and a nil in an array.
private struct Custom: Codable, Equatable {
    var a: Int
    var b: String
    var c: [Int?]
    var inner: String

    enum Keys: String, CodingKey { case a, box, list, `super` }
    enum BoxKeys: String, CodingKey { case b, deeper }
    enum DeeperKeys: String, CodingKey { case inner }

    init(a: Int, b: String, c: [Int?], inner: String) {
        self.a = a
        self.b = b
        self.c = c
        self.inner = inner
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(a, forKey: .a)
        var box = container.nestedContainer(keyedBy: BoxKeys.self, forKey: .box)
        try box.encode(b, forKey: .b)
        var deeper = box.nestedContainer(keyedBy: DeeperKeys.self, forKey: .deeper)
        try deeper.encode(inner, forKey: .inner)
        var list = container.nestedUnkeyedContainer(forKey: .list)
        for v in c {
            if let v { try list.encode(v) } else { try list.encodeNil() }
        }
        try "from super".encode(to: container.superEncoder())
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        a = try container.decode(Int.self, forKey: .a)
        let box = try container.nestedContainer(keyedBy: BoxKeys.self, forKey: .box)
        b = try box.decode(String.self, forKey: .b)
        inner = try box.nestedContainer(keyedBy: DeeperKeys.self, forKey: .deeper).decode(String.self, forKey: .inner)
        var list = try container.nestedUnkeyedContainer(forKey: .list)
        var values: [Int?] = []
        while !list.isAtEnd {
            if try list.decodeNil() { values.append(nil) } else { values.append(try list.decode(Int.self)) }
        }
        c = values
        #expect(try String(from: container.superDecoder()) == "from super")
    }
}

private let sample = Sample(
    text: "héllo/wörld 😀", escaped: "quote\" back\\ nl\n tab\t ctl\u{01}", int: 42, negative: -9_223_372_036_854_775_807,
    small: 255, big: 4_000_000_000, double: 0.1, integralDouble: 3, float: 0.1, flag: true, optionalPresent: "here",
    optionalAbsent: nil, color: .green, leaves: [Leaf(name: "a", weight: 1.5, tags: ["x", "y"]), Leaf(name: "b", weight: -2e-7, tags: [])],
    matrix: [[1, 2], [], [3]], map: ["zeta": 1, "alpha": 2, "Beta": 3], nestedMap: ["k": [Leaf(name: "c", weight: 1e21, tags: ["z"])]],
    date: Date(timeIntervalSince1970: 1_796_000_000), data: Data([0, 1, 2, 250, 251, 252]), url: URL(string: "https://example.com/a?b=c")!,
    empty: [])

private func foundationEncoder() -> JSONEncoder {
    let e = JSONEncoder()
    e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    e.dateEncodingStrategy = .iso8601
    return e
}

private func foundationDecoder() -> JSONDecoder {
    let d = JSONDecoder()
    d.dateDecodingStrategy = .iso8601
    return d
}

private func parse(_ bytes: some Sequence<UInt8>) throws -> JSONValue {
    try JSONParser.parse(Array(bytes), maximumDepth: 64)
}

/// A coding path as the HTTP server names fields: `a.b[2].c`.
private func pathString(_ path: [any CodingKey]) -> String {
    path.map { k in k.intValue.map { "[\($0)]" } ?? ".\(k.stringValue)" }.joined()
}

private func describe(_ error: any Error) -> String {
    switch error as? DecodingError {
    case .keyNotFound(let key, let c)?: "keyNotFound \(pathString(c.codingPath)) \(key.stringValue)"
    case .typeMismatch(let t, let c)?: "typeMismatch \(t) \(pathString(c.codingPath))"
    case .valueNotFound(let t, let c)?: "valueNotFound \(t) \(pathString(c.codingPath))"
    case .dataCorrupted(let c)?: "dataCorrupted \(pathString(c.codingPath))"
    default: "other \(error)"
    }
}

@Suite struct JSONCodableTests {
    @Test func encodesTheSameJSONAsFoundation() throws {
        let ours = try JSONValueEncoder().encodeToBytes(sample)
        let theirs = try foundationEncoder().encode(sample)
        #expect(try parse(ours) == parse(theirs))
        let custom = Custom(a: 1, b: "two", c: [3, nil, 5], inner: "in")
        #expect(try parse(JSONValueEncoder().encodeToBytes(custom)) == parse(foundationEncoder().encode(custom)))
        // Compact, sorted, slashes and non-ASCII as they are.
        let text = String(decoding: ours, as: UTF8.self)
        #expect(text.hasPrefix(#"{"big":4000000000,"color":"green","data":"AAEC+vv8","date":"2026-11-30T00:53:20Z""#))
        #expect(text.contains(#""text":"héllo/wörld 😀""#))
        #expect(text.contains(#""escaped":"quote\" back\\ nl\n tab\t ctl\u0001""#))
        #expect(!text.contains("optionalAbsent"))
        #expect(text.contains(#""url":"https://example.com/a?b=c""#))
    }

    @Test func decodesWhatFoundationDecodes() throws {
        let bytes = Array(try foundationEncoder().encode(sample))
        let ours = try JSONValueDecoder().decode(Sample.self, from: bytes, maximumDepth: 64)
        #expect(ours == sample)
        #expect(ours == (try foundationDecoder().decode(Sample.self, from: Data(bytes))))
        let custom = Custom(a: 1, b: "two", c: [3, nil, 5], inner: "in")
        #expect(try JSONValueDecoder().decode(Custom.self, from: JSONValueEncoder().encodeToBytes(custom)) == custom)
        // A null member is nil for an optional, as is a missing one.
        struct O: Decodable, Equatable { var a: Int?; var b: [Int]? }
        #expect(try JSONValueDecoder().decode(O.self, from: Array(#"{"a":null}"#.utf8)) == O(a: nil, b: nil))
        // Integral doubles are integers; exponents too.
        struct I: Decodable, Equatable { var a: Int; var b: UInt16 }
        #expect(try JSONValueDecoder().decode(I.self, from: Array(#"{"a":1.0,"b":1e2}"#.utf8)) == I(a: 1, b: 100))
        // Unknown members are ignored.
        #expect(try JSONValueDecoder().decode(I.self, from: Array(#"{"a":1,"b":2,"c":[{}]}"#.utf8)) == I(a: 1, b: 2))
        // JSONValue itself (a null member stays null).
        #expect(try JSONValueDecoder().decode([String: JSONValue].self, from: Array(#"{"n":null,"x":[1,"a",true]}"#.utf8)) == ["n": .null, "x": [1, "a", true]])
    }

    /// Bodies that do not fit: the sample with one member removed or replaced, or another
    /// document altogether. The same error case and coding path from both decoders.
    @Test(arguments: [
        (#"{"text":"-"}"#, true),  // missing member
        (#"{"text":5}"#, false),
        (#"{"leaves":[{"name":"a","weight":1,"tags":["x",7]}]}"#, false),
        (#"{"leaves":[{"name":"a","weight":"heavy","tags":[]}]}"#, false),
        (#"{"leaves":[{"name":null,"weight":1,"tags":[]}]}"#, false),
        (#"{"leaves":[{"weight":1,"tags":[]}]}"#, false),
        (#"{"leaves":{"name":"a"}}"#, false),
        (#"{"leaves":null}"#, false),
        (#"{"matrix":[[1,"2"]]}"#, false),
        (#"{"matrix":[[1,2.5]]}"#, false),
        (#"{"small":256}"#, false),
        (#"{"small":-1}"#, false),
        (#"{"flag":1}"#, false),
        (#"{"int":true}"#, false),
        (#"{"color":"blue"}"#, false),
        (#"{"date":"yesterday"}"#, false),
        (#"{"map":{"a":"b"}}"#, false),
        ("[]", false),
        (#""text""#, false),
        ("null", false),
    ])
    func failsLikeFoundation(patch: String, remove: Bool) throws {
        let body: JSONValue
        if case .object(let members) = try parse(Array(patch.utf8)) {
            var base = try #require(try parse(foundationEncoder().encode(sample)).objectValue)
            for (k, v) in members { base[k] = remove ? nil : v }
            body = .object(base)
        } else {
            body = try parse(Array(patch.utf8))
        }
        let bytes = Array(body.jsonString.utf8)
        var ourError: (any Error)?
        var theirError: (any Error)?
        do { _ = try JSONValueDecoder().decode(Sample.self, from: bytes, maximumDepth: 64) } catch { ourError = error }
        do { _ = try foundationDecoder().decode(Sample.self, from: Data(bytes)) } catch { theirError = error }
        let ours = describe(try #require(ourError, "accepted \(body.jsonString)"))
        let theirs = describe(try #require(theirError))
        // Same case, same path; the type may be named differently (Foundation says
        // Dictionary<String, Any> where this says [String: Any]). For a value that is corrupt
        // (a number out of range, a date that is not one) Foundation's path is empty; this
        // decoder names the member, so that the HTTP problem names the field.
        #expect(ours.split(separator: " ").first == theirs.split(separator: " ").first, "\(ours) vs \(theirs)")
        if theirs == "dataCorrupted " {
            #expect(ours.hasPrefix("dataCorrupted ."), "\(ours)")
        } else {
            #expect(ours.split(separator: " ").last == theirs.split(separator: " ").last, "\(ours) vs \(theirs)")
        }
    }

    @Test func refusesWhatFoundationWouldMisread() {
        // Foundation's JSONDecoder keeps the first of two members, JSONSerialization the last.
        #expect(throws: JSONParser.SyntaxError.self) {
            try JSONValueDecoder().decode([String: String].self, from: Array(#"{"username":"alice","username":"mallory"}"#.utf8))
        }
        #expect(throws: JSONParser.SyntaxError.self) {
            try JSONValueDecoder().decode([String: String].self, from: Array(#"{"username":"a\ud800"}"#.utf8))
        }
        #expect(throws: JSONParser.SyntaxError.self) {
            try JSONValueDecoder().decode([String: String].self, from: [UInt8]([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]))
        }
    }

    /// Dates: RFC 3339's shape, read to the whole second as the encoder writes them. Foundation's
    /// parser also read three or four digits of seconds, and kept a fraction the encoder drops:
    /// such a date changed through its own JSON (EventFuzz, 3.5 million runs in, stop 44).
    @Test func datesAreRFC3339AndSurviveTheirOwnJSON() throws {
        struct D: Codable, Equatable { var at: Date }
        for refused in [
            "2025-11-24T16:00:000.5Z", "2025-11-24T16:00:0000Z", "2025-11-24T16:00:001Z", "2025-11-24 16:00:00Z", "2025-11-24T16:00:00.Z",
            "2025-11-24T16:00:00+0200", "2025-11-24T16:00:00Zjunk", "2025-11-24T16:00Z", "+2025-11-24T16:00:00Z",
        ] {
            #expect(throws: DecodingError.self, "\(refused)") { try JSONValueDecoder().decode(D.self, from: Array(#"{"at":"\#(refused)"}"#.utf8)) }
        }
        for (text, seconds) in [
            ("2025-11-24T16:00:00Z", 1_764_000_000.0), ("2025-11-24T16:00:00.999Z", 1_764_000_000), ("2025-11-24T18:00:00+02:00", 1_764_000_000),
            ("1013-11-24T16:00:00.5Z", -30_171_168_000),
        ] {
            let d = try JSONValueDecoder().decode(D.self, from: Array(#"{"at":"\#(text)"}"#.utf8))
            #expect(d.at.timeIntervalSince1970 == seconds, "\(text)")
            #expect(try JSONValueDecoder().decode(D.self, from: JSONValueEncoder().encodeToBytes(d)) == d, "\(text)")
        }
    }

    @Test func refusesNumbersJSONCannotCarry() throws {
        struct D: Encodable { var d: Double }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode(D(d: .nan)) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode(D(d: .infinity)) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode([UInt64.max]) }
        #expect(try JSONValueEncoder().encode([UInt64(Int64.max)]) == [.int(Int64.max)])
    }

    @Test func aValueThatEncodesNothingIsAnEmptyObject() throws {
        struct Nothing: Encodable { func encode(to encoder: any Encoder) throws {} }
        #expect(try JSONValueEncoder().encodeToBytes(Nothing()) == Array("{}".utf8))
        #expect(try JSONValueEncoder().encodeToBytes(["a": Nothing()]) == Array(#"{"a":{}}"#.utf8))
    }
}

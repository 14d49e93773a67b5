import Foundation
import JSON
import Testing

// The coding paths of JSONValueDecoder's errors, and those a Decodable reads while it decodes,
// at every level of a document nested four deep through objects and arrays, against
// Foundation's JSONDecoder on the same bytes. The decoder builds its paths lazily (only when
// an error is thrown or `codingPath` is read); a node appended to the wrong parent, an index
// taken before or after it advanced, or a key left out would show here as a path that differs.

/// Reads three integers from an unkeyed container, so that a short array runs it off its end.
private struct Triple: Codable, Equatable {
    var a: Int
    var b: Int
    var c: Int
    init(a: Int, b: Int, c: Int) {
        self.a = a
        self.b = b
        self.c = c
    }
    init(from decoder: any Decoder) throws {
        var list = try decoder.unkeyedContainer()
        a = try list.decode(Int.self)
        b = try list.decode(Int.self)
        c = try list.decode(Int.self)
    }
    func encode(to encoder: any Encoder) throws {
        var list = encoder.unkeyedContainer()
        try list.encode(a)
        try list.encode(b)
        try list.encode(c)
    }
}

private struct Level3: Codable, Equatable {
    var n: Int
    var s: String
    var flags: [Bool]
    var small: UInt8
    var ratio: Double
    var note: String?
    var triple: Triple
}

private struct Level2: Codable, Equatable {
    var items: [Level3]
    var label: String
    var byName: [String: Level3]
}

private struct Level1: Codable, Equatable {
    var inner: Level2
    var grid: [[Level3]]
    var count: UInt8
}

private struct Root: Codable, Equatable {
    var top: Level1
    var list: [Level1]
    var id: String
}

private func leaf(_ n: Int) -> Level3 {
    Level3(n: n, s: "s\(n)", flags: [true, false, true], small: 7, ratio: 0.5, note: n.isMultiple(of: 2) ? "even" : nil, triple: Triple(a: n, b: n + 1, c: n + 2))
}

private func level1(_ n: Int) -> Level1 {
    Level1(
        inner: Level2(items: [leaf(n), leaf(n + 1)], label: "l\(n)", byName: ["k": leaf(n + 2)]),
        grid: [[leaf(n + 3)], [leaf(n + 4), leaf(n + 5)]], count: 3)
}

private let document = Root(top: level1(0), list: [level1(10), level1(20)], id: "root")

/// One step from a value to a member or an element.
private enum Step: CustomStringConvertible {
    case key(String)
    case index(Int)
    var description: String {
        switch self {
        case .key(let k): k
        case .index(let i): "Index \(i)"
        }
    }
}

/// `value` with the value at `path` replaced by `new` (removed when `new` is nil).
private func patched(_ value: JSONValue, at path: ArraySlice<Step>, with new: JSONValue?) -> JSONValue {
    guard let step = path.first else { return new ?? .null }
    switch (value, step) {
    case (.object(var members), .key(let k)):
        if path.count == 1, new == nil {
            members[k] = nil
        } else {
            members[k] = patched(members[k] ?? .null, at: path.dropFirst(), with: new)
        }
        return .object(members)
    case (.array(var elements), .index(let i)):
        if path.count == 1, new == nil {
            elements.remove(at: i)
        } else {
            elements[i] = patched(elements[i], at: path.dropFirst(), with: new)
        }
        return .array(elements)
    default:
        Issue.record("no \(step) in \(value.jsonString)")
        return value
    }
}

/// What a `DecodingError` says: its case, its coding path as string values (an index as
/// `Index N`, with its int value), the key of a `keyNotFound`.
private struct Described: Equatable, CustomStringConvertible {
    var kind: String
    var path: [String]
    var key: String?
    var debug: String

    init(_ error: any Error) {
        func names(_ keys: [any CodingKey]) -> [String] {
            keys.map { k in k.intValue.map { "Index \($0)#\($0)" } ?? k.stringValue }
        }
        switch error as? DecodingError {
        case .keyNotFound(let k, let c)?: (kind, path, key, debug) = ("keyNotFound", names(c.codingPath), k.stringValue, c.debugDescription)
        case .typeMismatch(_, let c)?: (kind, path, key, debug) = ("typeMismatch", names(c.codingPath), nil, c.debugDescription)
        case .valueNotFound(_, let c)?: (kind, path, key, debug) = ("valueNotFound", names(c.codingPath), nil, c.debugDescription)
        case .dataCorrupted(let c)?: (kind, path, key, debug) = ("dataCorrupted", names(c.codingPath), nil, c.debugDescription)
        default: (kind, path, key, debug) = ("other", [], nil, "\(error)")
        }
    }

    static func == (a: Described, b: Described) -> Bool { a.kind == b.kind && a.path == b.path && a.key == b.key }
    var description: String { "\(kind) \(path) \(key ?? "")" }
}

/// A path as `Described` names it.
private func names(_ steps: [Step]) -> [String] {
    steps.map { step in
        switch step {
        case .key(let k): k
        case .index(let i): "Index \(i)#\(i)"
        }
    }
}

private func decodeBoth<T: Decodable>(_ type: T.Type, _ body: JSONValue) throws -> (ours: Described, theirs: Described) {
    let bytes = Array(body.jsonString.utf8)
    var ourError: (any Error)?
    var theirError: (any Error)?
    do { _ = try JSONValueDecoder().decode(T.self, from: bytes, maximumDepth: 64) } catch { ourError = error }
    let foundation = JSONDecoder()
    foundation.dateDecodingStrategy = .iso8601
    do { _ = try foundation.decode(T.self, from: Data(bytes)) } catch { theirError = error }
    return (Described(try #require(ourError, "accepted")), Described(try #require(theirError, "Foundation accepted")))
}

/// Where the faults go: each level of objects and arrays, down to a leaf's members and the
/// elements of its arrays.
private let places: [[Step]] = [
    [.key("id")],
    [.key("top"), .key("count")],
    [.key("top"), .key("inner"), .key("label")],
    [.key("top"), .key("inner"), .key("items"), .index(1), .key("n")],
    [.key("top"), .key("inner"), .key("items"), .index(1), .key("small")],
    [.key("top"), .key("inner"), .key("byName"), .key("k"), .key("s")],
    [.key("top"), .key("grid"), .index(1), .index(1), .key("small")],
    [.key("list"), .index(1), .key("grid"), .index(0), .index(0), .key("n")],
    [.key("list"), .index(0), .key("inner"), .key("items"), .index(0), .key("ratio")],
]

@Suite struct JSONCodingPathTests {
    @Test func theDocumentDecodesAsWithFoundation() throws {
        let bytes = try JSONValueEncoder().encodeToBytes(document)
        #expect(try JSONValueDecoder().decode(Root.self, from: bytes, maximumDepth: 64) == document)
        #expect(try JSONDecoder().decode(Root.self, from: Data(bytes)) == document)
    }

    /// A string where a number is expected, null where a value is required, and the member
    /// removed, at every place: the same case, path and missing key as Foundation, and the
    /// path where the fault was put.
    @Test(arguments: places)
    fileprivate func wrongTypeNullAndMissingKeyAtEveryLevel(place: [Step]) throws {
        let base = try JSONValueEncoder().encode(document)
        for (fault, expectedKind) in [(JSONValue?.some(.array([])), "typeMismatch"), (.some(.null), "valueNotFound"), (nil, "keyNotFound")] {
            let (ours, theirs) = try decodeBoth(Root.self, patched(base, at: place[...], with: fault))
            #expect(ours == theirs, "\(place) \(fault?.jsonString ?? "removed"): ours \(ours), Foundation \(theirs)")
            #expect(ours.kind == expectedKind)
            if fault == nil {
                #expect(ours.path == names(Array(place.dropLast())), "\(ours)")
                #expect(ours.key == place.last?.description)
                #expect(ours.debug == "No value associated with key \(place.last!.description).")
            } else {
                #expect(ours.path == names(place), "\(ours)")
            }
        }
    }

    /// A wrong type at each level of containers: an object where an array is expected and an
    /// array where an object is.
    @Test(arguments: [
        ([Step.key("top")], JSONValue.array([])),
        ([.key("list")], .object([:])),
        ([.key("top"), .key("inner")], .string("x")),
        ([.key("top"), .key("inner"), .key("items")], .object([:])),
        ([.key("top"), .key("grid"), .index(1)], .object([:])),
        ([.key("top"), .key("grid"), .index(1), .index(0)], .array([])),
        ([.key("top"), .key("inner"), .key("byName")], .array([])),
        ([.key("list"), .index(1), .key("inner"), .key("items"), .index(1), .key("flags"), .index(2)], .int(1)),
        ([.key("list"), .index(1), .key("inner"), .key("items"), .index(1), .key("flags")], .bool(true)),
        ([.key("top"), .key("grid"), .index(0), .index(0), .key("triple"), .index(1)], .string("2")),
        ([.key("top"), .key("grid"), .index(0), .index(0), .key("triple")], .object([:])),
        ([.key("top"), .key("grid"), .index(0), .index(0), .key("note")], .int(5)),
    ])
    fileprivate func containerOfTheWrongTypeAtEveryLevel(place: [Step], fault: JSONValue) throws {
        let base = try JSONValueEncoder().encode(document)
        let (ours, theirs) = try decodeBoth(Root.self, patched(base, at: place[...], with: fault))
        #expect(ours == theirs, "\(place): ours \(ours), Foundation \(theirs)")
        #expect(ours.kind == "typeMismatch")
        #expect(ours.path == names(place), "\(ours)")
    }

    /// Numbers that do not fit: a fraction for an integer, 256 for a `UInt8`, 1e30 for an
    /// `Int`. The same case as Foundation, and the member's path (Foundation's own path for
    /// these differs between its implementations; the HTTP problem names the member).
    @Test(arguments: places.filter { ["n", "small", "count"].contains($0.last!.description) })
    fileprivate func badNumberAtEveryLevel(place: [Step]) throws {
        let base = try JSONValueEncoder().encode(document)
        let isInt = place.last!.description == "n"
        for fault in isInt ? [JSONValue.double(2.5), .double(1e30)] : [.double(2.5), .int(256), .int(-1), .double(1e30)] {
            let (ours, theirs) = try decodeBoth(Root.self, patched(base, at: place[...], with: fault))
            #expect(ours.kind == "dataCorrupted")
            #expect(theirs.kind == "dataCorrupted", "\(place) \(fault.jsonString): Foundation \(theirs)")
            #expect(ours.path == names(place), "\(ours)")
            if !theirs.path.isEmpty { #expect(ours.path == theirs.path, "\(ours) vs \(theirs)") }
            let type = isInt ? "Int" : "UInt8"
            #expect(ours.debug == "Number does not fit in \(type).")
        }
    }

    /// An unkeyed container run off its end, and an element removed from arrays at two
    /// levels: the path of the index it wanted.
    @Test func anUnkeyedContainerAtItsEnd() throws {
        let base = try JSONValueEncoder().encode(document)
        let place: [Step] = [.key("list"), .index(0), .key("grid"), .index(1), .index(1), .key("triple"), .index(2)]
        let (ours, theirs) = try decodeBoth(Root.self, patched(base, at: place[...], with: nil))
        #expect(ours == theirs, "ours \(ours), Foundation \(theirs)")
        #expect(ours.kind == "valueNotFound")
        #expect(ours.path == names(place))
        #expect(ours.debug == "Unkeyed container is at end.")
    }

    /// The debug descriptions callers may show, unchanged.
    @Test func debugDescriptions() throws {
        let base = try JSONValueEncoder().encode(document)
        let leafPath: [Step] = [.key("top"), .key("inner"), .key("items"), .index(1)]
        let cases: [(Step, JSONValue, String)] = [
            (.key("n"), .string("1"), "Expected to decode Int but found a string instead."),
            (.key("s"), .null, "Expected String value but found null instead."),
            (.key("flags"), .object([:]), "Expected to decode Array<Any> but found an object instead."),
            (.key("triple"), .bool(true), "Expected to decode Array<Any> but found a boolean instead."),
        ]
        for (step, fault, debug) in cases {
            let (ours, _) = try decodeBoth(Root.self, patched(base, at: (leafPath + [step])[...], with: fault))
            #expect(ours.debug == debug)
            #expect(ours.path == names(leafPath + [step]))
        }
        let (whole, _) = try decodeBoth(Root.self, patched(base, at: [Step.key("top")][...], with: .int(1)))
        #expect(whole.debug == "Expected to decode Dictionary<String, Any> but found a number instead.")
    }

    /// What a Decodable reads from `codingPath` while it decodes, at every level and through
    /// every kind of container, is what it reads under Foundation.
    @Test func codingPathsReadWhileDecoding() throws {
        let bytes = Array(#"{"a":{"b":[{"c":[[{"d":{}}]]},{"c":[]}],"e":{"f":{"g":{}}}},"super":{}}"#.utf8)
        let ours = try JSONValueDecoder().decode(Recorder.self, from: bytes, maximumDepth: 64)
        let theirs = try JSONDecoder().decode(Recorder.self, from: Data(bytes))
        #expect(ours.seen == theirs.seen)
        // And what they are, so that two decoders that agree on a wrong path still fail here.
        #expect(ours.seen.contains("a.b.Index 0#0.c.Index 0#0.Index 0#0.d keyed"))
        #expect(ours.seen.contains("a.b.Index 1#1.c unkeyed"))
        #expect(ours.seen.contains("a.e.f.g keyed"))
        #expect(ours.seen.contains("super keyed"))
    }
}

/// Records, at every level, the coding path of its decoder, of each container it opens and of
/// the nested containers (keyed, unkeyed, super decoders) it reaches through them.
private struct Recorder: Decodable {
    var seen: [String] = []

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static func name(_ path: [any CodingKey]) -> String {
        path.map { k in k.intValue.map { "Index \($0)#\($0)" } ?? k.stringValue }.joined(separator: ".")
    }

    init(from decoder: any Decoder) throws {
        seen.append(Self.name(decoder.codingPath) + " decoder")
        if var list = try? decoder.unkeyedContainer() {
            seen.append(Self.name(list.codingPath) + " unkeyed")
            // The first element through a super decoder, the others as values.
            if !list.isAtEnd {
                let superDecoder = try list.superDecoder()
                seen.append(Self.name(superDecoder.codingPath) + " element super")
                seen += try Recorder(from: superDecoder).seen
            }
            while !list.isAtEnd { seen += try list.decode(Recorder.self).seen }
            return
        }
        let container = try decoder.container(keyedBy: AnyKey.self)
        seen.append(Self.name(container.codingPath) + " keyed")
        for key in container.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
            if key.stringValue == "super" {
                let superDecoder = try container.superDecoder()
                seen.append(Self.name(superDecoder.codingPath) + " super")
                seen += try Recorder(from: superDecoder).seen
            } else {
                if let nested = try? container.nestedContainer(keyedBy: AnyKey.self, forKey: key) {
                    seen.append(Self.name(nested.codingPath) + " nested")
                }
                seen += try container.decode(Recorder.self, forKey: key).seen
            }
        }
    }
}

import Foundation
import JSON
import TestRandom
import Testing

/// Mutated request bodies through the strict parser and the decoder: they either succeed or
/// throw `JSONParser.SyntaxError` / `DecodingError`; they never trap or hang. Whatever this
/// side accepts, Foundation's JSONDecoder reads to the same value, and whatever parses writes
/// back to text that parses to the same value. Deterministic (seeded) so that a failure
/// reproduces.
@Suite struct JSONFuzzTests {
    /// The shape of a WebAuthn finish body, with numbers, booleans, nulls and an array.
    struct Body: Codable, Equatable {
        struct Response: Codable, Equatable {
            var clientDataJSON: String
            var authenticatorData: String
            var signature: String
            var userHandle: String?
        }
        struct Credential: Codable, Equatable {
            var id: String
            var type: String
            var response: Response
            var transports: [String]?
        }
        var handle: String
        var credential: Credential
        var count: Int?
        var ratio: Double?
        var flag: Bool?
        var tags: [String: Int]?
    }

    static let seeds: [String] = [
        #"{"handle":"aGFuZGxl","credential":{"id":"Y3JlZA","type":"public-key","response":{"clientDataJSON":"eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0","authenticatorData":"SZYN5YgO","signature":"MEUCIQ","userHandle":null},"transports":["internal","hybrid"]},"count":42,"ratio":0.5,"flag":true,"tags":{"a":1,"b":-2}}"#,
        #"{"handle":"h","credential":{"id":"i","type":"t","response":{"clientDataJSON":"c\u00e9\ud83d\ude00\n","authenticatorData":"a","signature":"s"}}}"#,
        #" { "handle" : "x" , "credential" : { "id" : "" , "type" : "" , "response" : { "clientDataJSON" : "" , "authenticatorData" : "" , "signature" : "" } } , "count" : -0 , "ratio" : 1e-3 } "#,
    ]

    static let alphabet = Array(#"{}[]",:\ "0123456789-+.eEtruefalsn\u00e9"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xFF, 0xED, 0xA0, 0x80]

    static func mutate(_ bytes: [UInt8], _ g: inout SplitMix64) -> [UInt8] {
        var b = bytes
        for _ in 0..<Int.random(in: 1...4, using: &g) {
            guard !b.isEmpty else { b = [alphabet.randomElement(using: &g)!]; continue }
            let i = Int.random(in: 0..<b.count, using: &g)
            switch Int.random(in: 0..<6, using: &g) {
            case 0: b[i] = alphabet.randomElement(using: &g)!
            case 1: b.insert(alphabet.randomElement(using: &g)!, at: i)
            case 2: b.remove(at: i)
            case 3: b = Array(b[..<i])  // truncate
            case 4:  // duplicate a slice (duplicate members, deeper nesting)
                let j = Int.random(in: i..<b.count, using: &g)
                b.insert(contentsOf: b[i...j], at: j + 1)
            default: b[i] = UInt8.random(in: 0...255, using: &g)
            }
        }
        return b
    }

    /// Integral doubles as integers.
    static func numbersNormalized(_ v: JSONValue) -> JSONValue {
        switch v {
        case .double(let d): d.rounded() == d ? Int64(exactly: d).map { .int($0) } ?? v : v
        case .array(let a): .array(a.map(numbersNormalized))
        case .object(let o): .object(o.mapValues(numbersNormalized))
        default: v
        }
    }

    static let iterations = ProcessInfo.processInfo.environment["JSON_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 4000

    @Test func mutatedBodiesNeverTrapAndAgreeWithFoundationWhenAccepted() throws {
        var g = SplitMix64(seed: 0x5167_4E45_7453_4A53)
        var parsed = 0
        var decoded = 0
        let foundation = JSONDecoder()
        for seed in Self.seeds {
            let seedBytes = Array(seed.utf8)
            #expect(try JSONValueDecoder().decode(Body.self, from: seedBytes) == foundation.decode(Body.self, from: Data(seedBytes)))
            for _ in 0..<Self.iterations {
                let bytes = Self.mutate(seedBytes, &g)
                let value: JSONValue
                do {
                    value = try JSONParser.parse(bytes, maximumDepth: 64)
                } catch {
                    continue  // SyntaxError is the only error parse can throw (typed throws)
                }
                parsed += 1
                // What parses writes back to text that parses to the same value (the writer
                // writes an integral double such as 1e3 as 1000, which reads back as an integer).
                #expect(
                    Self.numbersNormalized(try JSONParser.parse(Array(value.jsonString.utf8), maximumDepth: 64)) == Self.numbersNormalized(value),
                    "\(String(decoding: bytes, as: UTF8.self))")
                let ours: Body
                do {
                    ours = try JSONValueDecoder().decode(Body.self, from: value)
                } catch is DecodingError {
                    continue
                } catch {
                    Issue.record("unexpected error type \(type(of: error))")
                    continue
                }
                decoded += 1
                let theirs = try? foundation.decode(Body.self, from: Data(bytes))
                #expect(theirs == ours, "\(String(decoding: bytes, as: UTF8.self))")
            }
        }
        // The mutations reach past the parser into the decoder.
        #expect(parsed > Self.iterations / 10)
        #expect(decoded > Self.iterations / 20)
    }
}

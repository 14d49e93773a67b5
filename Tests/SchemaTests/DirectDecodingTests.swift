import Foundation
import HTTPServer
import JSON
import Schema
import TestRandom
import Testing

/// The parsed tree of the `JSON` module (this target has a `JSONValue` of its own).
typealias ParsedJSON = JSON.JSONValue

/// The sign-in bodies that read themselves from the parsed tree (`JSONDirectDecodable`) return
/// a value exactly when Codable (`JSONValueDecoder`) does, and the same value: over each valid
/// body and thousands of seeded mutations of it (members removed, made `null`, given every
/// other JSON type, nested deeper, unknown members added), some fitting and most not.
@Suite struct DirectDecodingTests {
    static let finish: ParsedJSON = [
        "handle": "aGFuZGxl",
        "credential": [
            "id": "Y3JlZA", "rawId": "Y3JlZA", "type": "public-key", "authenticatorAttachment": "platform",
            "response": ["clientDataJSON": "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0", "authenticatorData": "SZYN5Y", "signature": "MEUCIQ", "userHandle": "dXNlcg"],
            "clientExtensionResults": ["credProps": ["rk": true], "appid": false],
        ],
    ]
    static let options: ParsedJSON = ["username": "alice@example.com", "userVerification": "preferred", "hints": ["client-device", "hybrid"]]

    /// Values a member may be given: one of every JSON type, and the fitting ones nearby.
    static let replacements: [ParsedJSON] = [
        .null, true, false, 0, 7, 1.5, "", "text", "public-key", [], ["a", "b"], ["a", 1], [.null], [:], ["rk": true], ["rk": "yes"], ["credProps": .null],
    ]

    /// Every path to a member of `value` (objects only; array elements too).
    static func paths(_ value: ParsedJSON, _ prefix: [String] = []) -> [[String]] {
        switch value {
        case .object(let members):
            return members.sorted { $0.key < $1.key }.flatMap { key, member in [prefix + [key]] + paths(member, prefix + [key]) }
        case .array(let elements):
            return elements.indices.flatMap { i in [prefix + ["#\(i)"]] + paths(elements[i], prefix + ["#\(i)"]) }
        default:
            return []
        }
    }

    /// `value` with the member at `path` replaced (nil removes it).
    static func replacing(_ value: ParsedJSON, at path: ArraySlice<String>, with new: ParsedJSON?) -> ParsedJSON {
        guard let head = path.first else { return new ?? .null }
        switch value {
        case .object(var members):
            if path.count == 1 {
                members[head] = new
            } else if let member = members[head] {
                members[head] = replacing(member, at: path.dropFirst(), with: new)
            }
            return .object(members)
        case .array(var elements):
            guard head.hasPrefix("#"), let i = Int(head.dropFirst()), elements.indices.contains(i) else { return value }
            if path.count == 1 {
                if let new { elements[i] = new } else { elements.remove(at: i) }
            } else {
                elements[i] = replacing(elements[i], at: path.dropFirst(), with: new)
            }
            return .array(elements)
        default:
            return value
        }
    }

    /// The body, each single mutation of it, then `random` seeded mutations of one to three steps.
    static func cases(_ base: ParsedJSON, random: Int) -> [ParsedJSON] {
        var all: [ParsedJSON] = [base, .null, "body", [], [:]]
        for path in paths(base) {
            all.append(replacing(base, at: path[...], with: nil))
            for r in replacements { all.append(replacing(base, at: path[...], with: r)) }
            all.append(replacing(base, at: path.dropLast() + ["unknownMember"], with: "ignored"))
        }
        var rng = SplitMix64(seed: 0x5167_6e65_7444_6972)
        for _ in 0..<random {
            var value = base
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                let candidates = paths(value)
                guard !candidates.isEmpty else { break }
                let path = candidates[Int(rng.next() % UInt64(candidates.count))]
                let choice = Int(rng.next() % UInt64(replacements.count + 2))
                let new: ParsedJSON? = choice == replacements.count ? nil : choice == replacements.count + 1 ? ["nested": value] : replacements[choice]
                value = replacing(value, at: path[...], with: new)
            }
            all.append(value)
        }
        return all
    }

    static func agreement<T: JSONDirectDecodable & Equatable>(_ type: T.Type, _ values: [ParsedJSON]) -> (fitting: Int, disagreements: [String]) {
        var fitting = 0
        var disagreements: [String] = []
        for value in values {
            let codable = try? JSONValueDecoder().decode(T.self, from: value)
            let direct = T(directJSON: value)
            if codable != nil { fitting += 1 }
            if codable != direct { disagreements.append("\(value.jsonString): Codable \(String(describing: codable)), direct \(String(describing: direct))") }
        }
        return (fitting, disagreements)
    }

    @Test func theFinishRequestReadsAsCodableReadsIt() {
        let values = Self.cases(Self.finish, random: 4000)
        let (fitting, disagreements) = Self.agreement(AuthenticationFinishRequest.self, values)
        #expect(disagreements.isEmpty, "\(disagreements.count) of \(values.count): \(disagreements.prefix(3))")
        // Both outcomes are exercised, or the comparison would prove little.
        #expect(fitting > 100 && fitting < values.count - 100, "\(fitting) of \(values.count) fit")
        // The nested types on their own too (a value that is not an object, members missing).
        let credential = try! #require(Self.finish["credential"])
        #expect(Self.agreement(AuthenticationResponseJSON.self, Self.cases(credential, random: 1000)).disagreements.isEmpty)
    }

    @Test func theOptionsRequestReadsAsCodableReadsIt() {
        let values = Self.cases(Self.options, random: 2000) + [[:], ["username": .null], ["hints": []]]
        let (fitting, disagreements) = Self.agreement(AuthenticationOptionsRequest.self, values)
        #expect(disagreements.isEmpty, "\(disagreements.count) of \(values.count): \(disagreements.prefix(3))")
        #expect(fitting > 100 && fitting < values.count - 100, "\(fitting) of \(values.count) fit")
    }

    /// Through `HTTPRequest.decode`: a body that fits decodes; one that does not is refused with
    /// the field Codable names (the direct reading never answers a refusal itself).
    @Test func theRequestsErrorsAreCodables() throws {
        func request(_ body: ParsedJSON) -> HTTPRequest {
            HTTPRequest(method: "POST", path: "/", headers: [("Content-Type", "application/json")], body: Array(body.jsonString.utf8))
        }
        #expect(try request(Self.finish).decode(AuthenticationFinishRequest.self).credential.response.userHandle == "dXNlcg")
        let cases: [(ParsedJSON, String)] = [
            (Self.replacing(Self.finish, at: ["credential", "response", "signature"], with: nil), "credential.response.signature"),
            (Self.replacing(Self.finish, at: ["credential", "type"], with: 1), "credential.type"),
            (Self.replacing(Self.finish, at: ["credential", "clientExtensionResults", "credProps", "rk"], with: "yes"), "credential.clientExtensionResults.credProps.rk"),
            (Self.replacing(Self.finish, at: ["handle"], with: .null), "handle"),
        ]
        for (body, field) in cases {
            do {
                _ = try request(body).decode(AuthenticationFinishRequest.self)
                Issue.record("\(field): decoded")
            } catch let error as HTTPError {
                #expect(error.field == field, "\(String(describing: error.field)) for \(field)")
            }
        }
    }
}

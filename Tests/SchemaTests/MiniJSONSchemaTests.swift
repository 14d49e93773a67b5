import Foundation
import Testing

@Suite struct MiniJSONSchemaTests {
    static let document: JSONValue = try! JSONValue(json: Array(#"""
        {
          "components": {"schemas": {
            "Name": {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"},
            "Thing": {
              "type": "object",
              "properties": {
                "name": {"$ref": "#/components/schemas/Name"},
                "count": {"type": "integer", "minimum": 1, "maximum": 9},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 2, "uniqueItems": true},
                "kind": {"const": "thing"},
                "when": {"type": "string", "format": "date-time"},
                "maybe": {"type": ["string", "null"]},
                "extra": {"type": "object", "additionalProperties": {"type": "boolean"}}
              },
              "required": ["count", "name"],
              "additionalProperties": false
            },
            "Both": {"allOf": [{"$ref": "#/components/schemas/Thing"}, {"properties": {"count": {"const": 3}}}]},
            "Broken": {"$ref": "#/components/schemas/Missing"},
            "Unsupported": {"type": "object", "oneOf": []},
            "Email": {"type": "string", "format": "email"}
          }}
        }
        """#.utf8))

    static let valid: JSONValue = .object([
        "name": "ab", "count": 3, "tags": .array(["a", "b"]), "kind": "thing", "when": "2025-11-24T16:00:00Z",
        "maybe": .null, "extra": .object(["x": .bool(true)]),
    ])

    static func failures(_ instance: JSONValue, _ component: String = "Thing") -> [String] {
        MiniJSONSchema(document: document).validate(instance, component: component).map { "\($0.path) \($0.keyword)" }
    }

    @Test func acceptsAValidInstance() {
        #expect(Self.failures(Self.valid) == [])
        #expect(Self.failures(Self.valid, "Both") == [])
        #expect(Self.failures(Self.valid.setting("maybe", to: "text")) == [])
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let field: String
        let value: JSONValue?
        let expected: [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "missing required", field: "count", value: nil, expected: ["$.count required"]),
        Case(name: "unknown property", field: "other", value: 1, expected: ["$.other additionalProperties"]),
        Case(name: "wrong type", field: "count", value: "3", expected: ["$.count type"]),
        Case(name: "not an integer", field: "count", value: 2.5, expected: ["$.count type"]),
        Case(name: "boolean is not a number", field: "count", value: .bool(true), expected: ["$.count type"]),
        Case(name: "below minimum", field: "count", value: 0, expected: ["$.count minimum"]),
        Case(name: "above maximum", field: "count", value: 10, expected: ["$.count maximum"]),
        Case(name: "too short via $ref", field: "name", value: "a", expected: ["$.name minLength"]),
        Case(name: "too long", field: "name", value: "abcde", expected: ["$.name maxLength"]),
        Case(name: "pattern", field: "name", value: "AB", expected: ["$.name pattern"]),
        Case(name: "code points, not UTF-16", field: "name", value: "😀😀😀", expected: ["$.name pattern"]),
        Case(name: "enum in items", field: "tags", value: .array(["c"]), expected: ["$.tags[0] enum"]),
        Case(name: "minItems", field: "tags", value: .array([]), expected: ["$.tags minItems"]),
        Case(name: "maxItems", field: "tags", value: .array(["a", "b", "a"]), expected: ["$.tags maxItems", "$.tags[2] uniqueItems"]),
        Case(name: "uniqueItems", field: "tags", value: .array(["a", "a"]), expected: ["$.tags[1] uniqueItems"]),
        Case(name: "const", field: "kind", value: "other", expected: ["$.kind const"]),
        Case(name: "date-time", field: "when", value: "2025-11-24", expected: ["$.when format"]),
        Case(name: "date-time month", field: "when", value: "2025-13-24T16:00:00Z", expected: ["$.when format"]),
        Case(name: "type array", field: "maybe", value: 1, expected: ["$.maybe type"]),
        Case(name: "additionalProperties schema", field: "extra", value: .object(["x": "yes"]), expected: ["$.extra.x type"]),
    ]

    @Test(arguments: cases)
    func rejectsWithThePathAndKeyword(_ c: Case) {
        #expect(Self.failures(Self.valid.setting(c.field, to: c.value)) == c.expected)
    }

    @Test func allOfAppliesEverySubschema() {
        #expect(Self.failures(Self.valid.setting("count", to: 4), "Both") == ["$.count const"])
    }

    @Test func reportsWhatItCannotCheck() {
        #expect(Self.failures(.object([:]), "Broken") == ["$ $ref"])
        #expect(Self.failures(.object([:]), "Unsupported") == ["$ oneOf"])
        #expect(Self.failures("a@b.example", "Email") == ["$ format"])
    }

    @Test func readsJSONSerializationBooleansAsBooleans() throws {
        let parsed = try JSONValue(json: Array(#"{"t": true, "one": 1, "zero": 0}"#.utf8))
        #expect(parsed == .object(["t": .bool(true), "one": 1, "zero": 0]))
    }
}

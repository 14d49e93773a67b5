import Foundation
import Testing

@Suite struct MiniYAMLTests {
    static func parse(_ yaml: String) throws -> JSONValue { try JSONValue(any: MiniYAML.parse(yaml)) }

    @Test func readsTheBlockSubsetAsJSONSerializationWould() throws {
        let yaml = """
            # comment
            openapi: 3.1.0
            count: 42
            negative: -7
            ratio: 0.5
            on_off: true
            nothing: null
            tilde: ~
            empty:
            url: http://localhost:8081   # trailing comment
            quoted: 'it''s # not a comment'
            double: "tab\\tnew\\nline \\u00e9 \\"q\\""
            apostrophe: users' data
            hash: a#b
            flow: [a, 'b c', "d", 1, [x], []]
            emptyMap: {}
            '200':
              description: OK
            list:
              - one
              - key: value
                other: 2
                nested:
                  - deep
              -
                after: dash
              - - inner
                - second
            sameIndent:
            - a
            - b
            last: end
            """
        let json = """
            {"openapi": "3.1.0", "count": 42, "negative": -7, "ratio": 0.5, "on_off": true, "nothing": null,
             "tilde": null, "empty": null, "url": "http://localhost:8081", "quoted": "it's # not a comment",
             "double": "tab\\tnew\\nline \\u00e9 \\"q\\"", "apostrophe": "users' data", "hash": "a#b",
             "flow": ["a", "b c", "d", 1, ["x"], []], "emptyMap": {}, "200": {"description": "OK"},
             "list": ["one", {"key": "value", "other": 2, "nested": ["deep"]}, {"after": "dash"}, ["inner", "second"]],
             "sameIndent": ["a", "b"], "last": "end"}
            """
        #expect(try Self.parse(yaml) == JSONValue(json: Array(json.utf8)))
    }

    @Test func readsCRLFLineEndings() throws {
        #expect(try Self.parse("a: 1\r\nb:\r\n  - x\r\n") == .object(["a": 1, "b": .array(["x"])]))
        #expect(throws: MiniYAML.ParseError(line: 2, message: "duplicate key 'a'")) { try MiniYAML.parse("a: 1\r\na: 2\r\n") }
    }

    @Test func typesMatchJSONSerialization() throws {
        let tree = try #require(try MiniYAML.parse("i: 1\nd: 1.5\nb: false\nn: null\ns: x\n") as? [String: Any])
        #expect(tree["i"] is Int)
        #expect(tree["d"] is Double)
        #expect(tree["b"] is Bool)
        #expect(tree["n"] is NSNull)
        #expect(tree["s"] is String)
    }

    struct Rejected: Sendable, CustomTestStringConvertible {
        let yaml: String
        let line: Int
        let message: String
        var testDescription: String { message }
    }

    static let rejected: [Rejected] = [
        Rejected(yaml: "a: 1\n\tb: 2\n", line: 2, message: "tab characters are not supported"),
        Rejected(yaml: "a: &x 1\n", line: 1, message: "anchors (&) are not supported"),
        Rejected(yaml: "a: 1\nb: *x\n", line: 2, message: "aliases (*) are not supported"),
        Rejected(yaml: "a: !!str 1\n", line: 1, message: "tags (!) are not supported"),
        Rejected(yaml: "a: |\n  text\n", line: 1, message: "block scalars (| and >) are not supported"),
        Rejected(yaml: "a: >-\n  text\n", line: 1, message: "block scalars (| and >) are not supported"),
        Rejected(yaml: "a: first\n  continued\n", line: 2, message: "unexpected indentation (multi-line scalars are not supported)"),
        Rejected(yaml: "a: 'open\n  close'\n", line: 1, message: "unterminated quoted scalar (multi-line scalars are not supported)"),
        Rejected(yaml: "a: {b: 1}\n", line: 1, message: "flow mappings ({...}) are not supported"),
        Rejected(yaml: "a: [1, 2\n", line: 1, message: "unterminated flow sequence (multi-line flow collections are not supported)"),
        Rejected(yaml: "a: 1\na: 2\n", line: 2, message: "duplicate key 'a'"),
        Rejected(yaml: "a:\n  b: 1\n c: 2\n", line: 3, message: "unexpected indentation"),
        Rejected(yaml: "a: yes\n", line: 1, message: "'yes' is a boolean in YAML 1.1 and a string in YAML 1.2; quote it"),
        Rejected(yaml: "d: 2025-11-24\n", line: 1, message: "'2025-11-24' would be read as a timestamp by YAML 1.1; quote it"),
        Rejected(yaml: "n: 0755\n", line: 1, message: "'0755' is read differently by YAML 1.1 and 1.2; quote it or write a plain decimal"),
        Rejected(yaml: "n: 1e5\n", line: 1, message: "'1e5' is read differently by YAML 1.1 and 1.2; quote it or write a plain decimal"),
        Rejected(yaml: "200: ok\n", line: 1, message: "key '200' would not be read as a string by YAML; quote it"),
        Rejected(yaml: "a: b: c\n", line: 1, message: "': ' inside a plain scalar; quote the scalar"),
        Rejected(yaml: "a: 'x' y\n", line: 1, message: "unexpected text after a quoted scalar"),
        Rejected(yaml: "a: \"\\q\"\n", line: 1, message: "unsupported escape sequence \\q"),
        Rejected(yaml: "---\na: 1\n", line: 1, message: "document markers (--- and ...) are not supported"),
        Rejected(yaml: "? a\n: b\n", line: 1, message: "complex keys (?) are not supported"),
        Rejected(yaml: "a: 1\n- b\n", line: 2, message: "a sequence item where a mapping key was expected"),
        Rejected(yaml: "just text\nmore text\n", line: 2, message: "unexpected content after the end of the document's root"),
        Rejected(yaml: "a:\n  - x\n  y: 1\n", line: 3, message: "unexpected indentation"),
    ]

    @Test(arguments: rejected)
    func rejectsWhatItDoesNotSupportWithTheLine(_ c: Rejected) {
        #expect(throws: MiniYAML.ParseError(line: c.line, message: c.message)) { try MiniYAML.parse(c.yaml) }
    }
}

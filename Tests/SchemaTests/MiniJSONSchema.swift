import Foundation

/// Validates instances against the subset of JSON Schema (draft 2020-12, and OpenAPI 3.1's schema
/// objects, which are the same dialect) that `schemas/` uses.
///
/// Assertions: `type` (a name or an array of names), `properties`, `required`,
/// `additionalProperties` (`false` or a schema), `items`, `enum`, `const`, `minLength`,
/// `maxLength` (in Unicode code points, as JSON Schema counts), `pattern` (NSRegularExpression,
/// unanchored as in JSON Schema), `minItems`, `maxItems`, `uniqueItems`, `minimum`, `maximum`,
/// `format: date-time` (checked loosely, RFC 3339 shape), `allOf`, and `$ref` to a JSON pointer
/// within the same document (`#/components/schemas/X`, `#/$defs/X`).
///
/// Annotations (`title`, `description`, `examples`, `$schema`, `$id`, `x-…`, …) are ignored. Any
/// other keyword is reported as a failure rather than skipped, so that a document cannot rely on
/// a rule this validator does not check.
struct MiniJSONSchema {
    /// One reason an instance does not match: where (`$.origins[0]`), which keyword, and why.
    struct Failure: Equatable, CustomStringConvertible {
        let path: String
        let keyword: String
        let message: String
        var description: String { "\(path): \(message) [\(keyword)]" }
    }

    /// The whole document `$ref`s are resolved in (the schema itself, or an OpenAPI document).
    let document: JSONValue

    static let annotations: Set<String> = [
        "$schema", "$id", "$comment", "$defs", "title", "description", "examples", "default",
        "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
    ]

    init(document: JSONValue) {
        self.document = document
    }

    /// Validates `instance` against the document itself (an event schema).
    func validate(_ instance: JSONValue) -> [Failure] {
        validate(instance, against: document)
    }

    /// Validates `instance` against `schema`, a schema object within ``document``.
    func validate(_ instance: JSONValue, against schema: JSONValue, path: String = "$") -> [Failure] {
        var failures: [Failure] = []
        check(instance, schema, path, depth: 0, into: &failures)
        return failures
    }

    /// Validates against `#/components/schemas/<name>` of an OpenAPI document.
    func validate(_ instance: JSONValue, component name: String) -> [Failure] {
        validate(instance, against: .object(["$ref": .string("#/components/schemas/\(name)")]))
    }

    // MARK: - Keywords

    private func check(_ instance: JSONValue, _ schema: JSONValue, _ path: String, depth: Int, into failures: inout [Failure]) {
        func fail(_ keyword: String, _ message: String, at p: String = path) {
            failures.append(Failure(path: p, keyword: keyword, message: message))
        }
        guard depth < 64 else { return fail("$ref", "schema nesting deeper than 64 (a $ref cycle?)") }
        switch schema {
        case .bool(true): return
        case .bool(false): return fail("false", "no value is allowed here")
        case .object: break
        default: return fail("schema", "the schema is not an object or a boolean")
        }
        let keywords = schema.objectValue!
        for keyword in keywords.keys.sorted() {
            let value = keywords[keyword]!
            switch keyword {
            case _ where Self.annotations.contains(keyword) || keyword.hasPrefix("x-"):
                continue
            case "$ref":
                guard let ref = value.stringValue, ref.hasPrefix("#"), let target = document.resolve(pointer: ref) else {
                    fail("$ref", "unresolvable reference \(value)")
                    continue
                }
                check(instance, target, path, depth: depth + 1, into: &failures)
            case "allOf":
                for sub in value.arrayValue ?? [] { check(instance, sub, path, depth: depth + 1, into: &failures) }
            case "type":
                let names = value.arrayValue?.compactMap(\.stringValue) ?? [value.stringValue ?? ""]
                if !names.contains(where: { Self.hasType(instance, $0) }) {
                    fail("type", "expected \(names.joined(separator: " or ")), found \(Self.typeName(instance))")
                }
            case "enum":
                if !(value.arrayValue ?? []).contains(instance) { fail("enum", "\(instance) is not one of \(value)") }
            case "const":
                if instance != value { fail("const", "expected \(value), found \(instance)") }
            case "properties":
                guard let object = instance.objectValue else { continue }
                for (name, sub) in value.objectValue ?? [:] {
                    if let member = object[name] {
                        check(member, sub, JSONValue.path(path, name), depth: depth + 1, into: &failures)
                    }
                }
            case "required":
                guard let object = instance.objectValue else { continue }
                for name in value.arrayValue?.compactMap(\.stringValue) ?? [] where object[name] == nil {
                    fail("required", "missing required property '\(name)'", at: JSONValue.path(path, name))
                }
            case "additionalProperties":
                guard let object = instance.objectValue else { continue }
                let declared = Set(keywords["properties"]?.keys ?? [])
                for name in object.keys.sorted() where !declared.contains(name) {
                    if value == .bool(false) {
                        fail("additionalProperties", "unknown property '\(name)'", at: JSONValue.path(path, name))
                    } else {
                        check(object[name]!, value, JSONValue.path(path, name), depth: depth + 1, into: &failures)
                    }
                }
            case "items":
                guard let array = instance.arrayValue else { continue }
                for (i, element) in array.enumerated() {
                    check(element, value, "\(path)[\(i)]", depth: depth + 1, into: &failures)
                }
            case "minItems", "maxItems":
                guard let array = instance.arrayValue, let bound = value.numberValue else { continue }
                if keyword == "minItems" ? Double(array.count) < bound : Double(array.count) > bound {
                    fail(keyword, "\(array.count) items, \(keyword) is \(value)")
                }
            case "uniqueItems":
                guard let array = instance.arrayValue, value == .bool(true) else { continue }
                for i in array.indices where array[..<i].contains(array[i]) {
                    fail("uniqueItems", "\(array[i]) repeats", at: "\(path)[\(i)]")
                }
            case "minLength", "maxLength":
                guard let string = instance.stringValue, let bound = value.numberValue else { continue }
                let length = Double(string.unicodeScalars.count)
                if keyword == "minLength" ? length < bound : length > bound {
                    fail(keyword, "length \(Int(length)), \(keyword) is \(value)")
                }
            case "pattern":
                guard let string = instance.stringValue else { continue }
                guard let pattern = value.stringValue, let regex = try? NSRegularExpression(pattern: pattern) else {
                    fail("pattern", "invalid pattern \(value)")
                    continue
                }
                let range = NSRange(string.startIndex..., in: string)
                if regex.firstMatch(in: string, range: range) == nil { fail("pattern", "\(instance) does not match \(pattern)") }
            case "minimum", "maximum":
                guard let number = instance.numberValue, let bound = value.numberValue else { continue }
                if keyword == "minimum" ? number < bound : number > bound { fail(keyword, "\(instance), \(keyword) is \(value)") }
            case "format":
                switch value.stringValue {
                case "date-time":
                    if let string = instance.stringValue, !Self.isDateTime(string) {
                        fail("format", "\(instance) is not an RFC 3339 date-time")
                    }
                default:
                    fail("format", "unsupported format \(value)")
                }
            default:
                fail(keyword, "unsupported keyword '\(keyword)'")
            }
        }
    }

    // MARK: - Types and formats

    static func hasType(_ instance: JSONValue, _ name: String) -> Bool {
        switch (name, instance) {
        case ("null", .null), ("boolean", .bool), ("number", .number), ("string", .string), ("array", .array),
            ("object", .object):
            true
        case ("integer", .number(let n)):
            n.rounded() == n && n.isFinite
        default:
            false
        }
    }

    static func typeName(_ instance: JSONValue) -> String {
        switch instance {
        case .null: "null"
        case .bool: "boolean"
        case .number(let n): n.rounded() == n ? "integer" : "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// RFC 3339 `date-time` by shape (date, `T`, time, optional fraction, `Z` or offset), with
    /// field ranges checked loosely (month 01-12, day 01-31, hour 00-23, minute 00-59,
    /// second 00-60).
    static func isDateTime(_ s: String) -> Bool {
        guard let m = s.wholeMatch(
            of: /([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})/)
        else { return false }
        let month = Int(m.2)!, day = Int(m.3)!, hour = Int(m.4)!, minute = Int(m.5)!, second = Int(m.6)!
        return (1...12).contains(month) && (1...31).contains(day) && hour < 24 && minute < 60 && second <= 60
    }
}

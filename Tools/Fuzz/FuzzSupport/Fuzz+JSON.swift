import JSON

extension Fuzz {
    /// Equality of JSON values with numbers compared by value: RFC 8259 gives `1E2` and `100`
    /// one meaning, and the parser keeps the first as `.double` and the second as `.int`.
    public static func sameJSON(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x == y
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(exactly: x) == y || Int64(exactly: y) == x
        case (.double(let x), .double(let y)): return x == y
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { sameJSON($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { sameJSON(value, $0) } ?? false }
        default: return a == b
        }
    }
}

import FuzzSupport
import JSON

/// The strict JSON parser (`JSONParser`) and writer.
///
/// Properties: a refusal is a `JSONParser.SyntaxError` (typed throws); what parses, written by
/// `JSONWriter` and parsed again, is the same value (numbers compared as numbers: JSON does not
/// tell `1E2` from `100`), and writing that again gives the same bytes.
@main
enum JSONFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        let bom = bytes.first.map { $0 & 1 == 1 } ?? false
        guard let value = try? JSONParser.parse(bytes, maximumDepth: 64, allowingByteOrderMark: bom) else { return 0 }
        var writer = JSONWriter()
        writer.write(value)
        let again: JSONValue
        do {
            again = try JSONParser.parse(writer.bytes, maximumDepth: 64)
        } catch {
            Fuzz.fail("writer output does not parse: \(error)")
        }
        if !Fuzz.sameJSON(again, value) { Fuzz.fail("round trip changed the value") }
        var second = JSONWriter()
        second.write(again)
        if second.bytes != writer.bytes { Fuzz.fail("writer output is not a fixed point") }
        return 0
    }
}

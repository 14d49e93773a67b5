@testable import FIDO
import FuzzSupport

/// The strict CBOR decoder (`CBORDecoder`) in its WebAuthn configuration and in the lenient one
/// (indefinite lengths, non-minimal heads).
///
/// Properties: a refusal is a `CBORError` (typed throws); what the strict decoder accepts is
/// canonical, so `encoded` gives back exactly the input (floats aside: `encoded` writes them
/// as doubles, so there only the value must come back); what the lenient one accepts
/// re-encodes to a value the strict decoder accepts and finds equal; `decodePrefix` agrees with
/// `decode` on the consumed length.
@main
enum CBORFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        let strict = CBORDecoder()
        if let value = try? strict.decode(bytes) {
            if !containsFloat(value), value.encoded != bytes { Fuzz.fail("strictly decoded item does not re-encode to its input") }
            if (try? strict.decode(value.encoded)) != value { Fuzz.fail("strict round trip changed the value") }
        }
        if let prefix = try? strict.decodePrefix(bytes) {
            if prefix.consumed > bytes.count || prefix.consumed <= 0 { Fuzz.fail("decodePrefix consumed \(prefix.consumed) of \(bytes.count)") }
            if !containsFloat(prefix.value), prefix.value.encoded != Array(bytes[..<prefix.consumed]) {
                Fuzz.fail("prefix does not re-encode to its bytes")
            }
        }
        let lenient = CBORDecoder(allowsIndefiniteLength: true, requiresMinimalEncoding: false)
        if let value = try? lenient.decode(bytes) {
            let encoded = value.encoded
            let again: CBORValue
            do {
                again = try strict.decode(encoded)
            } catch {
                Fuzz.fail("re-encoding of a lenient decode is refused: \(error)")
            }
            if again != value { Fuzz.fail("lenient round trip changed the value") }
        }
        return 0
    }

    static func containsFloat(_ value: CBORValue) -> Bool {
        switch value {
        case .float: return true
        case .array(let elements): return elements.contains(where: containsFloat)
        case .map(let entries): return entries.contains { containsFloat($0.key) || containsFloat($0.value) }
        case .tagged(_, let inner): return containsFloat(inner)
        default: return false
        }
    }
}

/// FinalChallengeParams (UAF Protocol §3.1.7) read in one pass over the JSON bytes, for the
/// shape every UAF client sends: one object with the members `appID`, `challenge`, `facetID`
/// (strings) and `channelBinding` (an object whose members `serverEndPoint`,
/// `tlsServerCertificate`, `tlsUnique` and `cid_pubkey` are strings or null), in any order,
/// each at most once, with strings that hold no escape sequence.
///
/// On the path of every UAF verification (``UAFMessageDecoding/finalChallengeParams(_:)``):
/// the general parser builds a dictionary per object and a `JSONValue` per member, which
/// `signet-bench uaf-breakdown` measured at most of the 1.2-3.7 µs that fcParams' decoding took.
///
/// - Important: The reader only ever answers for inputs the general path (``JSON/JSONParser``
///   and the member rules of ``UAFMessageDecoding/finalChallengeParams(json:)``) accepts with
///   the same value; it refuses nothing itself. Anything else, valid or not (an escape, a
///   number, another member, a duplicate, a missing member, a byte-order mark), gives nil and
///   the caller decodes with the general path, which accepts or refuses it as before. Strings
///   are validated as UTF-8 exactly as the parser validates an escape-free string
///   (`String(validating:)`), and a control character (below 0x20) ends the fast path as it
///   ends the parser's. `UAFFuzz` checks that the two agree on every input.
enum UAFFinalChallengeParamsReader {
    /// The members, as bytes: matched byte for byte (none holds a character that another
    /// canonically decomposes to, so byte equality is the dictionary's String equality here).
    private static let appID: StaticString = "appID"
    private static let challenge: StaticString = "challenge"
    private static let facetID: StaticString = "facetID"
    private static let channelBinding: StaticString = "channelBinding"
    private static let bindingNames: [StaticString] = ["serverEndPoint", "tlsServerCertificate", "tlsUnique", "cid_pubkey"]

    /// The params of `json` when it has the plain shape; nil otherwise (decode it generally).
    static func read(_ json: [UInt8]) -> UAFFinalChallengeParams? {
        json.withUnsafeBufferPointer { buffer in
            var cursor = Cursor(bytes: buffer)
            return cursor.params()
        }
    }

    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        mutating func skipWhitespace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
        }

        /// Consumes `c` (after whitespace) if it is next.
        mutating func take(_ c: UInt8) -> Bool {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == c else { return false }
            i += 1
            return true
        }

        /// The bytes of an escape-free string at the cursor (after whitespace), without its
        /// quotes; nil if there is none, or it holds an escape or a control character.
        mutating func rawString() -> Range<Int>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = i
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: "\"") {
                    i += 1
                    return start..<(i - 1)
                }
                if c == UInt8(ascii: "\\") || c < 0x20 { return nil }
                i += 1
            }
            return nil
        }

        func equals(_ range: Range<Int>, _ name: StaticString) -> Bool {
            guard range.count == name.utf8CodeUnitCount else { return false }
            let p = name.utf8Start
            for k in 0..<range.count where bytes[range.lowerBound + k] != p[k] { return false }
            return true
        }

        /// A string value as the parser would give it (nil: not an escape-free valid UTF-8 string).
        mutating func stringValue() -> String? {
            guard let range = rawString() else { return nil }
            return String(validating: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }

        /// The members of an object at the cursor, each name read by `member` (which returns
        /// false to give up); true once the closing brace is consumed.
        mutating func object(_ member: (inout Cursor, Range<Int>) -> Bool) -> Bool {
            guard take(UInt8(ascii: "{")) else { return false }
            if take(UInt8(ascii: "}")) { return true }
            while true {
                guard let name = rawString(), take(UInt8(ascii: ":")) else { return false }
                skipWhitespace()
                guard member(&self, name) else { return false }
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "}"))
            }
        }

        mutating func params() -> UAFFinalChallengeParams? {
            var appID: String?
            var challenge: String?
            var facetID: String?
            var binding: UAFChannelBinding?
            let complete = object { cursor, name in
                // A member seen twice gives up (the parser refuses the duplicate).
                if cursor.equals(name, UAFFinalChallengeParamsReader.appID) {
                    guard appID == nil, let value = cursor.stringValue() else { return false }
                    appID = value
                } else if cursor.equals(name, UAFFinalChallengeParamsReader.challenge) {
                    guard challenge == nil, let value = cursor.stringValue() else { return false }
                    challenge = value
                } else if cursor.equals(name, UAFFinalChallengeParamsReader.facetID) {
                    guard facetID == nil, let value = cursor.stringValue() else { return false }
                    facetID = value
                } else if cursor.equals(name, UAFFinalChallengeParamsReader.channelBinding) {
                    guard binding == nil, let value = cursor.channelBinding() else { return false }
                    binding = value
                } else {
                    return false
                }
                return true
            }
            skipWhitespace()
            guard complete, i == bytes.count, let appID, let challenge, let facetID, let binding else { return nil }
            return UAFFinalChallengeParams(appID: appID, challenge: challenge, facetID: facetID, channelBinding: binding)
        }

        mutating func channelBinding() -> UAFChannelBinding? {
            var values: [String?] = [nil, nil, nil, nil]
            var seen = [false, false, false, false]
            let complete = object { cursor, name in
                guard let k = UAFFinalChallengeParamsReader.bindingNames.firstIndex(where: { cursor.equals(name, $0) }), !seen[k] else {
                    return false
                }
                seen[k] = true
                // null is absent; a string is the value; anything else gives up.
                if cursor.i + 4 <= cursor.bytes.count, cursor.bytes[cursor.i] == UInt8(ascii: "n") {
                    guard cursor.bytes[cursor.i + 1] == UInt8(ascii: "u"), cursor.bytes[cursor.i + 2] == UInt8(ascii: "l"),
                        cursor.bytes[cursor.i + 3] == UInt8(ascii: "l")
                    else { return false }
                    cursor.i += 4
                    return true
                }
                guard let value = cursor.stringValue() else { return false }
                values[k] = value
                return true
            }
            guard complete else { return nil }
            var binding = UAFChannelBinding()
            binding.serverEndPoint = values[0]
            binding.tlsServerCertificate = values[1]
            binding.tlsUnique = values[2]
            binding.cid_pubkey = values[3]
            return binding
        }
    }
}

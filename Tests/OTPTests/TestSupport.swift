/// Lower-case hexadecimal of `bytes`.
func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// The bytes of an even-length hexadecimal string; `nil` for anything else.
func unhex(_ text: String) -> [UInt8]? {
    let characters = Array(text.utf8)
    guard characters.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    var index = 0
    while index < characters.count {
        guard let pair = UInt8(String(decoding: characters[index..<(index + 2)], as: UTF8.self), radix: 16) else {
            return nil
        }
        out.append(pair)
        index += 2
    }
    return out
}

/// ASCII `text` repeated or cut to exactly `count` bytes, as RFC 6238's seeds are built.
func seed(_ text: String, count: Int) -> [UInt8] {
    let pattern = Array(text.utf8)
    return (0..<count).map { pattern[$0 % pattern.count] }
}

extension Fuzz {
    /// Splits `bytes` into consecutive DER elements by their outer headers (tag, then a short
    /// or long definite length); what is left when a header does not fit is the last element.
    public static func derElements(_ bytes: [UInt8]) -> [[UInt8]] {
        var elements: [[UInt8]] = []
        var i = 0
        while i < bytes.count {
            var end = bytes.count
            if i + 2 <= bytes.count {
                let first = Int(bytes[i + 1])
                if first < 0x80 {
                    end = min(bytes.count, i + 2 + first)
                } else if (1...3).contains(first & 0x7F), i + 2 + (first & 0x7F) <= bytes.count {
                    let n = first & 0x7F
                    let length = bytes[(i + 2)..<(i + 2 + n)].reduce(0) { $0 << 8 | Int($1) }
                    end = min(bytes.count, i + 2 + n + length)
                }
            }
            elements.append(Array(bytes[i..<end]))
            i = end
        }
        return elements
    }
}

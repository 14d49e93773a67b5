@_spi(_Unicode) import Swift
#if canImport(Glibc)
import Glibc
#endif

// Text operations that Foundation's `NSString` bridge offered and FoundationEssentials does not
// (issue 14: the services import FoundationEssentials only, so that Foundation,
// FoundationInternationalization and ICU are not mapped into them). Each one keeps the
// behaviour of the Foundation call it replaces, said at each.

extension Unicode.Scalar {
    /// In Foundation's `CharacterSet.whitespaces`: general category Zs, U+0009 (tab) and
    /// U+200B (zero width space).
    public var isFoundationWhitespace: Bool {
        value == 0x09 || value == 0x200B || properties.generalCategory == .spaceSeparator
    }

    /// In Foundation's `CharacterSet.whitespacesAndNewlines`: general category Z (Zs, Zl, Zp),
    /// U+0009–U+000D, U+0085 and U+200B.
    public var isFoundationWhitespaceOrNewline: Bool {
        if (0x09...0x0D).contains(value) || value == 0x85 || value == 0x200B { return true }
        switch properties.generalCategory {
        case .spaceSeparator, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}

extension StringProtocol {
    /// Foundation's `trimmingCharacters(in: .whitespaces)`: without leading and trailing
    /// tabs and Zs spaces.
    public func trimmingWhitespace() -> String {
        trimmingScalars(where: \.isFoundationWhitespace)
    }

    /// Foundation's `trimmingCharacters(in: .whitespacesAndNewlines)`.
    public func trimmingWhitespaceAndNewlines() -> String {
        trimmingScalars(where: \.isFoundationWhitespaceOrNewline)
    }

    private func trimmingScalars(where drop: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !drop($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !drop($0) })!
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: scalars[first...last])
        return String(kept)
    }
}

/// Unicode normalisation and folding, from the standard library's own tables.
public enum TextFolding {
    /// Whether `s` is in Unicode Normalization Form C: the bytes of Foundation's
    /// `precomposedStringWithCanonicalMapping` (the standard library's NFC here).
    public static func isNFC(_ s: String) -> Bool {
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return true }
        return s.utf8.elementsEqual(s._nfcCodeUnits)
    }

    /// Foundation's `folding(options: [.diacriticInsensitive, .caseInsensitive,
    /// .widthInsensitive], locale: nil)`: full-width ASCII forms (U+FF01–U+FF5E) as ASCII,
    /// case folded (upper-cased then lower-cased: "ß" and "ss" fold alike, as ICU's case
    /// folding does), then canonically decomposed (NFD) without the non-spacing marks (Mn:
    /// the diacritics).
    public static func folded(_ s: String) -> String {
        var narrow = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            if (0xFF01...0xFF5E).contains(scalar.value) {
                narrow.append(Unicode.Scalar(scalar.value - 0xFEE0)!)
            } else {
                narrow.append(scalar)
            }
        }
        var out = String.UnicodeScalarView()
        for scalar in String(narrow).uppercased().lowercased()._nfd where scalar.properties.generalCategory != .nonspacingMark {
            out.append(scalar)
        }
        return String(out)
    }
}

/// Percent-encoding (RFC 3986 §2.1) as Foundation's `addingPercentEncoding` and
/// `removingPercentEncoding` do it: upper-case hex digits, UTF-8 bytes.
public enum PercentEncoding {
    /// RFC 3986 unreserved: ASCII letters, digits, `-._~`.
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// `text` with every UTF-8 byte that `allowed` refuses written as `%XX`.
    public static func encode(_ text: String, allowed: (UInt8) -> Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if allowed(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` with its `%XX` sequences decoded; nil when one is malformed or the bytes are
    /// not UTF-8 (Foundation's `removingPercentEncoding`). `+` stays `+`.
    public static func decode(_ text: some StringProtocol) -> String? {
        var out: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard let high = bytes.next().flatMap(hexValue), let low = bytes.next().flatMap(hexValue) else { return nil }
            out.append(high << 4 | low)
        }
        return String(validating: out, as: UTF8.self)
    }

    /// The value of one hexadecimal digit (`0-9`, `a-f`, `A-F`), nil for any other byte: the
    /// one helper of every percent-decoder (paths, query arguments, otpauth URIs).
    public static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Hexadecimal text of bytes, shared by `Hex` and the `bytea` values of every statement.
public enum HexText {
    /// Writes two lower-case digits per byte of `bytes` into `out` from `offset` (room for them
    /// is the caller's: a string's storage being initialised, no array of digits, no
    /// intermediate output); returns the offset after the last.
    @inlinable
    public static func write<Bytes: Sequence<UInt8>>(_ bytes: Bytes, into out: UnsafeMutableBufferPointer<UInt8>, at offset: Int) -> Int {
        let digits: StaticString = "0123456789abcdef"
        var i = offset
        for b in bytes {
            out[i] = digits.utf8Start[Int(b >> 4)]
            out[i + 1] = digits.utf8Start[Int(b & 0xF)]
            i += 2
        }
        return i
    }

    /// The bytes of an even number of hex digits (either case); nil for an odd count or any
    /// other character.
    public static func decode(_ digits: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard digits.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let high = PercentEncoding.hexValue(digits[i]), let low = PercentEncoding.hexValue(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}

/// Number texts written often enough to have their own formatter.
public enum NumberText {
    /// A duration in milliseconds with two decimals, rounded half up: `2.02`, `0.00`, `1500.00`
    /// (negative durations as `0.00`). Integer arithmetic on the duration's own components; the
    /// access log writes one per request, where `vsnprintf` through `CVarArg` was 1 % of the
    /// authentication service's CPU.
    public static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return "0.00" }
        // Hundredths of a millisecond: 10 µs = 10^13 attoseconds.
        let hundredths = seconds.multipliedReportingOverflow(by: 100_000)
        guard !hundredths.overflow else { return "\(Int64.max / 100).00" }
        let total = hundredths.partialValue &+ (attoseconds + 5_000_000_000_000) / 10_000_000_000_000
        let fraction = total % 100
        return "\(total / 100)." + (fraction < 10 ? "0\(fraction)" : "\(fraction)")
    }
}

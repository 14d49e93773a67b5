/// Comparison of secrets and codes whose running time does not depend on where they differ.
///
/// Written here rather than taken from OpenSSL's `CRYPTO_memcmp` so that it can also compare
/// inputs of different lengths without branching on content: the loop always runs over the
/// longer input and folds every byte difference, and the length difference, into one
/// accumulator that is tested once at the end.
enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes, in time that depends only on their lengths.
    ///
    /// - Parameters:
    ///   - a: One input, e.g. the expected digit string's UTF-8 bytes.
    ///   - b: The other, e.g. the presented one's.
    /// - Returns: `true` if the lengths and every byte are equal.
    @inline(never)
    static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let count = max(a.count, b.count)
        // A non-zero length difference alone makes the result false.
        var difference = UInt64(truncatingIfNeeded: a.count ^ b.count)
        for i in 0..<count {
            // Out-of-range positions read as 0 against the other side's byte; the length
            // term above already made the comparison fail, so only timing matters here.
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            difference |= UInt64(x ^ y)
        }
        return difference == 0
    }

    /// Whether two strings have the same UTF-8 bytes, in time that depends only on their
    /// lengths. Used for digit strings, which are compared as text so that leading zeros count.
    static func equals(_ a: String, _ b: String) -> Bool {
        equals(Array(a.utf8), Array(b.utf8))
    }
}

/// Random (version 4) UUIDs as lower-case text, for event and request ids.
///
/// From the system's generator (`getrandom(2)` on Linux): Foundation's `UUID()` opens and
/// reads `/dev/urandom` for every one, three system calls on each sign-in's event.
public enum RandomUUID {
    public static func string() -> String {
        var generator = SystemRandomNumberGenerator()
        return format(generator.next(), generator.next())
    }

    /// The same shape from the trace ids' source (``IDSource``: a per-process keyed hash of a
    /// counter), without a system call: unique within the process, independent across
    /// processes, unpredictable without the process's key. For ids that are never secrets
    /// and are made on every request (the request id): the two `getrandom(2)` calls of
    /// ``string()`` were two of the four system calls of a `/healthz` request (strace) and
    /// 3.3 % of its CPU (perf).
    public static func keyed() -> String {
        let n = IDSource.next()
        return format(IDSource.value(n, lane: 4), IDSource.value(n, lane: 5))
    }

    private static func format(_ first: UInt64, _ second: UInt64) -> String {
        // Version 4 in the high nibble of byte 6, variant 0b10 in the top bits of byte 8.
        let high = first & 0xFFFF_FFFF_FFFF_0FFF | 0x0000_0000_0000_4000
        let low = second & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var i = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    buffer[i] = digits.utf8Start[Int((value >> UInt64(shift)) & 0xF)]
                    i += 1
                }
            }
            func dash() {
                buffer[i] = UInt8(ascii: "-")
                i += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16, nibbles: 4)
            dash()
            put(high, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low, nibbles: 12)
            return i
        }
    }
}

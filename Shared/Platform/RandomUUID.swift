/// Random (version 4) UUIDs as lower-case text, for event and request ids.
///
/// From the system's generator (`getrandom(2)` on Linux): Foundation's `UUID()` opens and
/// reads `/dev/urandom` for every one, three system calls on each sign-in's event.
public enum RandomUUID {
    public static func string() -> String {
        var generator = SystemRandomNumberGenerator()
        // Version 4 in the high nibble of byte 6, variant 0b10 in the top bits of byte 8.
        let high = (generator.next() as UInt64) & 0xFFFF_FFFF_FFFF_0FFF | 0x0000_0000_0000_4000
        let low = (generator.next() as UInt64) & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
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

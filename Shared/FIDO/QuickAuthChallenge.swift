import Crypto

/// The challenge of a quick authentication: derived by the client from the time, so that a
/// sign-in takes one round trip (no options request).
///
/// `SHA-256("signet-quick-auth-v1" ‖ 0x00 ‖ tenant ‖ 0x00 ‖ credential id ‖ time)`, with the
/// tenant as UTF-8, the credential id as its raw bytes and the time as Unix seconds in a
/// big-endian 64-bit integer. The server accepts times within the tenant's window (default
/// ±60 s) and records each challenge as used until the window has passed, so none can be
/// replayed.
public enum QuickAuthChallenge {
    public static let label = "signet-quick-auth-v1"

    public static func derive(tenant: String, credentialID: [UInt8], time: Int64) -> [UInt8] {
        var input = Array(label.utf8) + [0] + Array(tenant.utf8) + [0] + credentialID
        let t = UInt64(bitPattern: time)
        for shift in stride(from: 56, through: 0, by: -8) { input.append(UInt8(truncatingIfNeeded: t >> UInt64(shift))) }
        return SHA256.hash(input)
    }
}

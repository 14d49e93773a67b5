import FoundationEssentials
import HTTPServer
import ServiceKit

/// What a WebAuthn sign-in's handle carries between options and finish, sealed with AES-GCM
/// (`CeremonyHandles`), so that starting a ceremony writes nothing.
///
/// Encoded in a fixed binary layout rather than JSON (the handle is built and opened on every
/// sign-in): version 1, expiry (milliseconds since 1970, big-endian Int64), user verification
/// (0 required, 1 preferred, 2 discouraged), the 32-byte challenge, the tenant (1-byte length)
/// and the username (2-byte length, 0xFFFF when absent).
struct SignInHandle: Equatable {
    static let purpose = "signet.webauthn.authentication.v2"
    static let userVerificationValues = ["required", "preferred", "discouraged"]

    var tenant: String
    var username: String?
    var challenge: [UInt8]
    var expiresAt: Date
    var userVerification: String

    func encoded() -> [UInt8] {
        var out: [UInt8] = [1]
        out.reserveCapacity(48 + tenant.utf8.count + (username?.utf8.count ?? 0))
        let ms = UInt64(bitPattern: Int64((expiresAt.timeIntervalSince1970 * 1000).rounded()))
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ms >> UInt64(shift))) }
        out.append(UInt8(Self.userVerificationValues.firstIndex(of: userVerification) ?? 1))
        out += challenge
        out.append(UInt8(tenant.utf8.count))
        out += tenant.utf8
        if let username {
            let n = username.utf8.count
            out += [UInt8(n >> 8), UInt8(n & 0xFF)]
            out += username.utf8
        } else {
            out += [0xFF, 0xFF]
        }
        return out
    }

    /// Decodes what `encoded()` produced; nil for anything else.
    init?(decoding b: [UInt8]) {
        guard b.count >= 1 + 8 + 1 + 32 + 1 + 2, b[0] == 1 else { return nil }
        var ms: UInt64 = 0
        for i in 1...8 { ms = ms << 8 | UInt64(b[i]) }
        guard Int(b[9]) < Self.userVerificationValues.count else { return nil }
        var i = 42
        let tenantLength = Int(b[i])
        i += 1
        guard b.count >= i + tenantLength + 2, let tenant = String(validating: b[i..<(i + tenantLength)], as: UTF8.self) else { return nil }
        i += tenantLength
        let userLength = Int(b[i]) << 8 | Int(b[i + 1])
        i += 2
        var username: String?
        if userLength != 0xFFFF {
            guard b.count == i + userLength, let u = String(validating: b[i..<(i + userLength)], as: UTF8.self) else { return nil }
            username = u
        } else {
            guard b.count == i else { return nil }
        }
        self.init(
            tenant: tenant, username: username, challenge: Array(b[10..<42]),
            expiresAt: Date(timeIntervalSince1970: Double(Int64(bitPattern: ms)) / 1000), userVerification: Self.userVerificationValues[Int(b[9])])
    }

    init(tenant: String, username: String?, challenge: [UInt8], expiresAt: Date, userVerification: String) {
        self.tenant = tenant
        self.username = username
        self.challenge = challenge
        self.expiresAt = expiresAt
        self.userVerification = userVerification
    }

    func sealed(with handles: CeremonyHandles) throws -> String {
        try handles.seal(bytes: encoded(), purpose: Self.purpose)
    }

    /// Opens a handle; anything that is not a sign-in handle is `invalid_handle`.
    static func open(_ handle: String, with handles: CeremonyHandles) throws -> SignInHandle {
        guard let state = SignInHandle(decoding: try handles.openBytes(handle, purpose: purpose)) else {
            throw HTTPError(ProblemCode.invalidHandle, detail: "The ceremony handle is not valid.")
        }
        return state
    }
}

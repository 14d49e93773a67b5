/// An AES-256-GCM key that seals, and the keys that still open what was sealed before it.
///
/// A service's sealing key (`SIGNET_METHOD_SECRET_KEY`, `SIGNET_OOB_KEY_SEAL`, …) is changed
/// without losing what the old key sealed: the old key is listed in the variable's
/// `_ACCEPTED` companion, values are opened under the sealing key first and then under each
/// accepted one, and new values are always sealed under the sealing key. A service whose
/// values live long re-seals them under the sealing key in the background (`KeyResealer`), so
/// the old key can be dropped once that is done.
public struct SealingKeys: Sendable {
    /// At most this many accepted keys: each one is a decryption more for a value that opens
    /// under none.
    public static let maxAccepted = 4

    private let current: AES256GCM
    private let accepted: [AES256GCM]

    /// - Throws: ``CryptoError`` unless every key is 32 bytes.
    public init(key: [UInt8], accepted: [[UInt8]] = []) throws {
        current = try AES256GCM(key: key)
        self.accepted = try accepted.map(AES256GCM.init(key:))
    }

    /// Whether keys other than the sealing one are accepted (so values may need re-sealing).
    public var acceptsOthers: Bool { !accepted.isEmpty }

    /// Seals under the sealing key.
    public func seal(_ plaintext: [UInt8], associatedData: [UInt8] = []) throws -> [UInt8] {
        try current.seal(plaintext, associatedData: associatedData)
    }

    /// Opens under the sealing key or, failing that, the first accepted key that opens it.
    public func open(_ sealed: [UInt8], associatedData: [UInt8] = []) throws -> [UInt8] {
        try opening(sealed, associatedData: associatedData).plaintext
    }

    /// Opens as ``open(_:associatedData:)`` does and says whether the sealing key opened it
    /// (false: an accepted key did, and the value should be sealed again).
    public func opening(_ sealed: [UInt8], associatedData: [UInt8] = []) throws -> (plaintext: [UInt8], underSealingKey: Bool) {
        if let plain = try? current.open(sealed, associatedData: associatedData) { return (plain, true) }
        for key in accepted {
            if let plain = try? key.open(sealed, associatedData: associatedData) { return (plain, false) }
        }
        throw CryptoError("authentication failed")
    }
}

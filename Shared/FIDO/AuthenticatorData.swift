/// Authenticator data (WebAuthn L3 §6.1), parsed strictly.
///
/// Layout: `rpIdHash` (32) ‖ `flags` (1) ‖ `signCount` (4, big-endian) ‖ attested credential data
/// (if AT) ‖ extensions (a CBOR map, if ED). Lengths are checked exactly: the AT and ED flags
/// must account for every byte, nothing may follow the extensions, and with neither flag the
/// data is exactly 37 bytes. The credential public key is framed with
/// ``CBORDecoder/decodePrefix(_:from:)`` because the extensions follow it with no length.
///
/// RFU bits are exposed but not refused: they are reserved for future flags, and refusing them
/// would break authenticators that implement a later revision.
public struct AuthenticatorData: Sendable {
    /// The flags byte.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Bit 0, UP: user present.
        public static let userPresent = Flags(rawValue: 0x01)
        /// Bit 1, RFU1.
        public static let reserved1 = Flags(rawValue: 0x02)
        /// Bit 2, UV: user verified.
        public static let userVerified = Flags(rawValue: 0x04)
        /// Bit 3, BE: backup eligible (multi-device credential).
        public static let backupEligible = Flags(rawValue: 0x08)
        /// Bit 4, BS: currently backed up.
        public static let backupState = Flags(rawValue: 0x10)
        /// Bit 5, RFU2.
        public static let reserved2 = Flags(rawValue: 0x20)
        /// Bit 6, AT: attested credential data included.
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// Bit 7, ED: extension data included.
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// Attested credential data (WebAuthn L3 §6.5.1).
    public struct AttestedCredentialData: Sendable {
        /// The authenticator model.
        public let aaguid: AAGUID
        /// The credential ID (at most ``AuthenticatorData/maximumCredentialIDLength`` bytes).
        public let credentialID: [UInt8]
        /// The credential public key: its exact COSE_Key bytes …
        public let credentialPublicKeyBytes: [UInt8]
        /// … and their decoded form (see ``COSEKey`` to interpret it).
        public let credentialPublicKey: CBORValue
    }

    /// Longest credential ID accepted (WebAuthn L3 §7.1 step 25).
    public static let maximumCredentialIDLength = 1023

    /// The authenticator data exactly as received (it is what signatures cover).
    public let bytes: [UInt8]
    /// SHA-256 of the RP ID the credential is scoped to.
    public let rpIDHash: [UInt8]
    /// The flags.
    public let flags: Flags
    /// The signature counter.
    public let signCount: UInt32
    /// Present if and only if the AT flag is set.
    public let attestedCredentialData: AttestedCredentialData?
    /// The extensions map (text keys), present if and only if the ED flag is set.
    public let extensions: CBORValue?

    /// Whether UP is set.
    public var userPresent: Bool { flags.contains(.userPresent) }
    /// Whether UV is set.
    public var userVerified: Bool { flags.contains(.userVerified) }
    /// Whether BE is set.
    public var backupEligible: Bool { flags.contains(.backupEligible) }
    /// Whether BS is set.
    public var backupState: Bool { flags.contains(.backupState) }
    /// False when BS is set without BE, a combination L3 §6.1.3 forbids.
    public var hasConsistentBackupFlags: Bool { backupEligible || !backupState }

    /// Parses authenticator data.
    ///
    /// - Parameters:
    ///   - bytes: The raw authenticator data.
    ///   - requiringConsistentBackupFlags: Refuse BS without BE here (default). The ceremony
    ///     verifiers pass false and make the same check at its own step, so that errors come out
    ///     in the order of the specification.
    /// - Throws: ``WebAuthnError`` with ``WebAuthnError/Code/malformedAuthenticatorData``,
    ///   ``WebAuthnError/Code/credentialIDTooLong`` or ``WebAuthnError/Code/backupStateInconsistent``.
    public init(bytes: [UInt8], requiringConsistentBackupFlags: Bool = true) throws(WebAuthnError) {
        let step = "§6.1 authenticator data"
        func malformed(_ detail: String) -> WebAuthnError { WebAuthnError(.malformedAuthenticatorData, step: step, detail) }

        guard bytes.count >= 37 else { throw malformed("shorter than 37 bytes") }
        self.bytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = UInt32(bytes[33]) << 24 | UInt32(bytes[34]) << 16 | UInt32(bytes[35]) << 8 | UInt32(bytes[36])
        var position = 37
        let decoder = CBORDecoder()

        if flags.contains(.attestedCredentialData) {
            // §6.5.1: aaguid (16) ‖ credentialIdLength (2, big-endian) ‖ credentialId ‖ credentialPublicKey.
            guard bytes.count - position >= 18 else { throw malformed("attested credential data truncated") }
            guard let aaguid = AAGUID(bytes: Array(bytes[position..<(position + 16)])) else { throw malformed("AAGUID") }
            let idLength = Int(bytes[position + 16]) << 8 | Int(bytes[position + 17])
            position += 18
            guard idLength <= Self.maximumCredentialIDLength else {
                throw WebAuthnError(.credentialIDTooLong, step: step, "credentialIdLength over 1023")
            }
            guard bytes.count - position >= idLength else { throw malformed("credential ID truncated") }
            let credentialID = Array(bytes[position..<(position + idLength)])
            position += idLength
            let key: (value: CBORValue, consumed: Int)
            do {
                key = try decoder.decodePrefix(bytes, from: position)
            } catch {
                throw malformed("credential public key is not well-formed CBOR (\(error.code))")
            }
            let keyBytes = Array(bytes[position..<(position + key.consumed)])
            position += key.consumed
            attestedCredentialData = AttestedCredentialData(
                aaguid: aaguid, credentialID: credentialID, credentialPublicKeyBytes: keyBytes, credentialPublicKey: key.value)
        } else {
            attestedCredentialData = nil
        }

        if flags.contains(.extensionData) {
            guard position < bytes.count else { throw malformed("ED is set but there is no extensions map") }
            let ext: (value: CBORValue, consumed: Int)
            do {
                ext = try decoder.decodePrefix(bytes, from: position)
            } catch {
                throw malformed("extensions are not well-formed CBOR (\(error.code))")
            }
            guard let entries = ext.value.mapValue else { throw malformed("extensions are not a CBOR map") }
            guard entries.allSatisfy({ $0.key.textValue != nil }) else { throw malformed("extension identifiers are text") }
            position += ext.consumed
            extensions = ext.value
        } else {
            extensions = nil
        }

        guard position == bytes.count else {
            throw malformed(flags.contains(.extensionData) ? "bytes after the extensions map" : "bytes not accounted for by the AT/ED flags")
        }
        if requiringConsistentBackupFlags, !hasConsistentBackupFlags {
            throw WebAuthnError(.backupStateInconsistent, step: step, "BS is set but BE is not")
        }
    }
}

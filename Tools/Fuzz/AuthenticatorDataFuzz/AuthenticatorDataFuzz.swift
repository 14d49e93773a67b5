import FIDO
import FuzzSupport

/// Authenticator data (`AuthenticatorData(bytes:)`, WebAuthn L3 §6.1), read on every
/// registration and assertion.
///
/// Properties: a refusal is a `WebAuthnError` (typed throws); accepted data keeps its input as
/// `bytes`, its fields agree with their bytes (rpIdHash, flags, counter), the attested
/// credential data is present exactly when the AT flag is, the extensions exactly when ED is,
/// and the credential public key decodes again from the bytes it came from.
@main
enum AuthenticatorDataFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        let consistent = bytes.last.map { $0 & 1 == 0 } ?? true
        guard let authData = try? AuthenticatorData(bytes: bytes, requiringConsistentBackupFlags: consistent) else { return 0 }
        if authData.bytes != bytes { Fuzz.fail("bytes differ from the input") }
        if bytes.count < 37 { Fuzz.fail("accepted \(bytes.count) bytes") }
        if authData.rpIDHash != Array(bytes[0..<32]) { Fuzz.fail("rpIdHash") }
        if authData.flags.rawValue != bytes[32] { Fuzz.fail("flags") }
        let counter = bytes[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        if authData.signCount != counter { Fuzz.fail("signCount") }
        if (authData.attestedCredentialData != nil) != (bytes[32] & 0x40 != 0) { Fuzz.fail("AT flag and attested credential data disagree") }
        if (authData.extensions != nil) != (bytes[32] & 0x80 != 0) { Fuzz.fail("ED flag and extensions disagree") }
        if consistent, !authData.hasConsistentBackupFlags { Fuzz.fail("BS without BE accepted") }
        if let attested = authData.attestedCredentialData {
            // Decoding its bytes again gives the same key (not byte equality: `encoded` writes
            // floats as doubles).
            if (try? CBORDecoder().decode(attested.credentialPublicKeyBytes)) != attested.credentialPublicKey {
                Fuzz.fail("credential public key bytes")
            }
            if attested.credentialID.count > 1023 { Fuzz.fail("credential id longer than 1023 bytes") }
        }
        return 0
    }
}

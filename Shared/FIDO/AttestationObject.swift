/// An attestation object (WebAuthn L3 §6.5.4): `{ fmt: text, attStmt: map, authData: bytes }`.
///
/// Parsed strictly: exactly those three members, `fmt` a printable US-ASCII identifier of at
/// most 32 bytes (§8.1), `attStmt` a map (its contents are the format verifier's), and
/// `authData` well-formed ``AuthenticatorData``.
public struct AttestationObject: Sendable {
    /// The attestation statement format identifier.
    public let format: String
    /// The attestation statement (a CBOR map).
    public let statement: CBORValue
    /// The authenticator data.
    public let authenticatorData: AuthenticatorData

    /// Parses an attestation object.
    ///
    /// - Parameters:
    ///   - bytes: The CBOR encoding.
    ///   - requiringConsistentBackupFlags: Passed to ``AuthenticatorData/init(bytes:requiringConsistentBackupFlags:)``.
    /// - Throws: ``WebAuthnError`` with ``WebAuthnError/Code/malformedAttestationObject``, or
    ///   the authenticator-data codes.
    public init(bytes: [UInt8], requiringConsistentBackupFlags: Bool = true) throws(WebAuthnError) {
        let step = "§6.5.4 attestation object"
        func malformed(_ detail: String) -> WebAuthnError { WebAuthnError(.malformedAttestationObject, step: step, detail) }

        let value: CBORValue
        do {
            value = try CBORDecoder().decode(bytes)
        } catch {
            throw malformed("not a single well-formed CBOR item (\(error.code))")
        }
        guard let entries = value.mapValue else { throw malformed("not a CBOR map") }
        var format: String?
        var statement: CBORValue?
        var authData: [UInt8]?
        for entry in entries {
            switch entry.key.textValue {
            case "fmt"?:
                guard let f = entry.value.textValue else { throw malformed("fmt must be text") }
                format = f
            case "attStmt"?:
                guard entry.value.isMap else { throw malformed("attStmt must be a map") }
                statement = entry.value
            case "authData"?:
                guard let b = entry.value.bytesValue else { throw malformed("authData must be a byte string") }
                authData = b
            default:
                throw malformed("unexpected member")
            }
        }
        guard let format, let statement, let authData else { throw malformed("fmt, attStmt and authData are required") }
        // §8.1: at most 32 octets of printable US-ASCII, excluding backslash and double quote.
        let fmtBytes = Array(format.utf8)
        guard !fmtBytes.isEmpty, fmtBytes.count <= 32,
            fmtBytes.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E && $0 != 0x22 && $0 != 0x5C })
        else { throw malformed("fmt is not a valid attestation statement format identifier") }

        self.format = format
        self.statement = statement
        self.authenticatorData = try AuthenticatorData(bytes: authData, requiringConsistentBackupFlags: requiringConsistentBackupFlags)
    }
}

/// The fields of a `RegistrationResponseJSON` (WebAuthn L3 §5.1) that registration verifies,
/// base64url already decoded.
///
/// `id`/`rawId` are deliberately absent: the credential ID is taken from the authenticator data,
/// which the attestation covers, never from the unsigned JSON around it.
public struct RegistrationResponse: Sendable {
    /// `response.clientDataJSON`.
    public var clientDataJSON: [UInt8]
    /// `response.attestationObject`.
    public var attestationObject: [UInt8]
    /// `response.transports` (e.g. `usb`, `internal`, `hybrid`): unauthenticated hints, passed
    /// through for `allowCredentials`.
    public var transports: [String]

    public init(clientDataJSON: [UInt8], attestationObject: [UInt8], transports: [String] = []) {
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
    }
}

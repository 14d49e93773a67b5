/// The fields of an `AuthenticationResponseJSON` (WebAuthn L3 §5.1), base64url already decoded.
public struct AuthenticationResponse: Sendable {
    /// `id`: the credential ID in base64url, when the caller has it; it must encode ``rawID``.
    public var id: String?
    /// `rawId`: the credential ID.
    public var rawID: [UInt8]
    /// `response.clientDataJSON`.
    public var clientDataJSON: [UInt8]
    /// `response.authenticatorData`.
    public var authenticatorData: [UInt8]
    /// `response.signature`.
    public var signature: [UInt8]
    /// `response.userHandle`, when the authenticator returned one (discoverable credentials).
    public var userHandle: [UInt8]?

    public init(
        id: String? = nil, rawID: [UInt8], clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8],
        userHandle: [UInt8]? = nil
    ) {
        self.id = id
        self.rawID = rawID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
}

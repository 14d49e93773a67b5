/// What the relying party stored about a credential at registration and keeps up to date
/// (WebAuthn L3 §4 "credential record"), as the assertion verifier needs it.
public struct CredentialRecord: Sendable {
    /// The credential ID.
    public var id: [UInt8]
    /// The credential public key as stored: its COSE_Key bytes.
    public var publicKey: [UInt8]
    /// The same key already parsed, when the caller caches parsed keys (saves an OpenSSL key
    /// import per assertion).
    public var parsedPublicKey: COSEKey?
    /// The last signature counter seen.
    public var signCount: UInt32
    /// BE as recorded at registration (it must never change).
    public var backupEligible: Bool
    /// BS as last seen.
    public var backupState: Bool
    /// The user handle of the account the credential belongs to.
    public var userHandle: [UInt8]

    /// A record whose key is parsed during verification.
    public init(
        id: [UInt8], publicKey: [UInt8], signCount: UInt32, backupEligible: Bool, backupState: Bool = false,
        userHandle: [UInt8]
    ) {
        self.id = id
        self.publicKey = publicKey
        self.parsedPublicKey = nil
        self.signCount = signCount
        self.backupEligible = backupEligible
        self.backupState = backupState
        self.userHandle = userHandle
    }

    /// A record with an already parsed key.
    public init(
        id: [UInt8], parsedPublicKey: COSEKey, signCount: UInt32, backupEligible: Bool, backupState: Bool = false,
        userHandle: [UInt8]
    ) {
        self.init(
            id: id, publicKey: parsedPublicKey.bytes, signCount: signCount, backupEligible: backupEligible,
            backupState: backupState, userHandle: userHandle)
        self.parsedPublicKey = parsedPublicKey
    }
}

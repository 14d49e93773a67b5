import Crypto
import FIDO
import Foundation

/// A software P-256 authenticator for building responses, so that each verification step can be
/// broken on its own.
struct TestAuthenticator {
    static let rpID = "example.org"
    static let origin = "https://example.org"

    let key: PrivateKey
    let credentialID: [UInt8]
    let aaguid: [UInt8]
    let x: [UInt8]
    let y: [UInt8]

    init(credentialID: [UInt8] = Array(0..<32), aaguid: [UInt8] = Array(repeating: 0xA1, count: 16)) throws {
        key = try PrivateKey.generateP256()
        // P-256 SubjectPublicKeyInfo: 26 bytes of header, then 04 ‖ x ‖ y.
        let spki = try key.publicKey().subjectPublicKeyInfo
        x = Array(spki[27..<59])
        y = Array(spki[59..<91])
        self.credentialID = credentialID
        self.aaguid = aaguid
    }

    /// The credential public key as a COSE_Key map; `alg` and extra entries can be changed.
    func coseKeyValue(alg: Int = -7, extra: [(key: CBORValue, value: CBORValue)] = []) -> CBORValue {
        .map([
            (key: .int(1), value: .int(2)), (key: .int(3), value: .int(alg)), (key: .int(-1), value: .int(1)),
            (key: .int(-2), value: .bytes(x)), (key: .int(-3), value: .bytes(y)),
        ] + extra)
    }

    var coseKey: [UInt8] { coseKeyValue().encoded }

    // MARK: Authenticator data

    static let up: UInt8 = 0x01
    static let uv: UInt8 = 0x04
    static let be: UInt8 = 0x08
    static let bs: UInt8 = 0x10
    static let at: UInt8 = 0x40
    static let ed: UInt8 = 0x80

    /// rpIdHash ‖ flags ‖ signCount ‖ [attested credential data] ‖ [extensions].
    func authenticatorData(
        rpID: String = rpID, flags: UInt8 = up | uv, signCount: UInt32 = 1, attested: Bool = false,
        credentialPublicKey: [UInt8]? = nil, extensions: CBORValue? = nil
    ) -> [UInt8] {
        var out = SHA256.hash(Array(rpID.utf8))
        var f = flags
        if attested { f |= Self.at }
        if extensions != nil { f |= Self.ed }
        out.append(f)
        out += [UInt8(signCount >> 24), UInt8(signCount >> 16 & 0xFF), UInt8(signCount >> 8 & 0xFF), UInt8(signCount & 0xFF)]
        if attested {
            out += aaguid
            out += [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)]
            out += credentialID
            out += credentialPublicKey ?? coseKey
        }
        if let extensions { out += extensions.encoded }
        return out
    }

    // MARK: Client data

    /// clientDataJSON with the usual members; `extra` is appended raw (e.g. `,"topOrigin":"…"`).
    static func clientData(
        type: String = "webauthn.get", challenge: [UInt8], origin: String = origin, crossOrigin: Bool? = false,
        extra: String = ""
    ) -> [UInt8] {
        var json = #"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge))","origin":"\#(origin)""#
        if let crossOrigin { json += #","crossOrigin":\#(crossOrigin)"# }
        json += extra + "}"
        return Array(json.utf8)
    }

    /// ES256 (DER) signature over authenticatorData ‖ SHA-256(clientDataJSON).
    func sign(authenticatorData: [UInt8], clientDataJSON: [UInt8]) throws -> [UInt8] {
        try key.sign(authenticatorData + SHA256.hash(clientDataJSON), algorithm: .es256)
    }

    // MARK: Whole responses

    func assertion(
        challenge: [UInt8], authenticatorData: [UInt8]? = nil, clientDataJSON: [UInt8]? = nil, userHandle: [UInt8]? = nil
    ) throws -> AuthenticationResponse {
        let authData = authenticatorData ?? self.authenticatorData()
        let clientData = clientDataJSON ?? Self.clientData(challenge: challenge)
        return AuthenticationResponse(
            id: Base64URL.encode(credentialID), rawID: credentialID, clientDataJSON: clientData, authenticatorData: authData,
            signature: try sign(authenticatorData: authData, clientDataJSON: clientData), userHandle: userHandle)
    }

    func record(signCount: UInt32 = 0, backupEligible: Bool = false, userHandle: [UInt8] = [9, 9, 9]) -> CredentialRecord {
        CredentialRecord(id: credentialID, publicKey: coseKey, signCount: signCount, backupEligible: backupEligible, userHandle: userHandle)
    }

    /// An attestation object `{fmt, attStmt, authData}` (members can be replaced through `members`).
    static func attestationObject(fmt: String = "none", attStmt: CBORValue = .map([]), authData: [UInt8]) -> [UInt8] {
        attestationObjectValue(fmt: fmt, attStmt: attStmt, authData: authData).encoded
    }

    static func attestationObjectValue(fmt: String, attStmt: CBORValue, authData: [UInt8]) -> CBORValue {
        .map([(key: .text("fmt"), value: .text(fmt)), (key: .text("attStmt"), value: attStmt), (key: .text("authData"), value: .bytes(authData))])
    }

    /// A packed self-attestation statement over `authData` and `clientDataJSON`.
    func packedSelf(authData: [UInt8], clientDataJSON: [UInt8], alg: Int = -7) throws -> CBORValue {
        .map([
            (key: .text("alg"), value: .int(alg)),
            (key: .text("sig"), value: .bytes(try sign(authenticatorData: authData, clientDataJSON: clientDataJSON))),
        ])
    }
}

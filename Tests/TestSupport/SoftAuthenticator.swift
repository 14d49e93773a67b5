import Crypto
import FIDO
import Foundation
import Schema

/// A software WebAuthn authenticator and client for stack tests: makes real P-256
/// credentials, `none` attestation objects and signed assertions, with the client data a
/// browser would produce for `origin`. (The browser end-to-end test uses Chromium's virtual
/// authenticator instead.)
public final class SoftAuthenticator: @unchecked Sendable {
    // @unchecked Sendable: used by one test at a time; signCount is its only mutable state.
    public let key: PrivateKey
    public let credentialID: [UInt8]
    public var signCount: UInt32 = 0
    public var userHandle: [UInt8] = []
    public var backupEligible = true
    /// The AAGUID put in the attested credential data (zeros, as most passkey providers do
    /// with `none` attestation, unless a test names a model).
    public var aaguid = [UInt8](repeating: 0, count: 16)
    let x: [UInt8]
    let y: [UInt8]

    public init() throws {
        key = try PrivateKey.generateP256()
        credentialID = SecureRandom.bytes(32)
        let point = Array(try key.publicKey().subjectPublicKeyInfo.suffix(64))
        x = Array(point[..<32])
        y = Array(point[32...])
    }

    public var credentialIDBase64URL: String { Base64URL.encode(credentialID) }

    public var coseKey: [UInt8] {
        CBORValue.map([
            (.unsigned(1), .unsigned(2)), (.unsigned(3), .negative(6)), (.negative(0), .unsigned(1)),
            (.negative(1), .bytes(x)), (.negative(2), .bytes(y)),
        ]).encoded
    }

    func authenticatorData(rpID: String, attested: Bool, userVerified: Bool, userPresent: Bool = true) -> [UInt8] {
        var flags: UInt8 = userPresent ? 0x01 : 0  // UP
        if userVerified { flags |= 0x04 }
        if backupEligible { flags |= 0x08 | 0x10 }
        if attested { flags |= 0x40 }
        var out = SHA256.hash(Array(rpID.utf8)) + [flags]
        out += withUnsafeBytes(of: signCount.bigEndian) { Array($0) }
        if attested {
            out += aaguid
            out += [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)] + credentialID + coseKey
        }
        return out
    }

    static func clientData(type: String, challenge: String, origin: String) -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    /// `navigator.credentials.create()` then `toJSON()`.
    /// `userPresent: false` is a conditional create (WebAuthn L3), made without a user gesture.
    public func create(_ options: CreationOptionsJSON, origin: String, userVerified: Bool = true, userPresent: Bool = true) -> RegistrationResponseJSON {
        response(options, origin: origin, userVerified: userVerified, userPresent: userPresent) { _, _ in ("none", .map([])) }
    }

    /// The response with a `packed` attestation signed by `attestation`'s key, with its x5c.
    public func create(_ options: CreationOptionsJSON, origin: String, packed attestation: PackedAttestation) throws -> RegistrationResponseJSON {
        try response(options, origin: origin, userVerified: true, userPresent: true) { authData, clientData in
            try attestation.statement(authData: authData, clientData: clientData)
        }
    }

    func response(
        _ options: CreationOptionsJSON, origin: String, userVerified: Bool, userPresent: Bool,
        statement: (_ authData: [UInt8], _ clientData: [UInt8]) throws -> (fmt: String, attStmt: CBORValue)
    ) rethrows -> RegistrationResponseJSON {
        userHandle = Base64URL.decode(options.user.id) ?? []
        let authData = authenticatorData(rpID: options.rp.id, attested: true, userVerified: userVerified, userPresent: userPresent)
        let clientData = Self.clientData(type: "webauthn.create", challenge: options.challenge, origin: origin)
        let (fmt, attStmt) = try statement(authData, clientData)
        let attestation = CBORValue.map([
            (.text("fmt"), .text(fmt)), (.text("attStmt"), attStmt), (.text("authData"), .bytes(authData)),
        ]).encoded
        return RegistrationResponseJSON(
            id: credentialIDBase64URL, rawId: credentialIDBase64URL,
            response: .init(clientDataJSON: Base64URL.encode(clientData), attestationObject: Base64URL.encode(attestation), transports: ["internal"]),
            authenticatorAttachment: "platform")
    }

    /// `navigator.credentials.get()` then `toJSON()`; the counter goes up by one.
    public func get(_ options: RequestOptionsJSON, origin: String, userVerified: Bool = true, advanceCounter: Bool = true) throws -> AuthenticationResponseJSON {
        if advanceCounter { signCount += 1 }
        let authData = authenticatorData(rpID: options.rpId, attested: false, userVerified: userVerified)
        let clientData = Self.clientData(type: "webauthn.get", challenge: options.challenge, origin: origin)
        let signature = try key.sign(authData + SHA256.hash(clientData), algorithm: .es256)
        return AuthenticationResponseJSON(
            id: credentialIDBase64URL, rawId: credentialIDBase64URL,
            response: .init(
                clientDataJSON: Base64URL.encode(clientData), authenticatorData: Base64URL.encode(authData),
                signature: Base64URL.encode(signature), userHandle: Base64URL.encode(userHandle)))
    }

    /// Secure Payment Confirmation: `PaymentRequest.show()` with the `secure-payment-confirmation`
    /// method, as a browser reports it (client data type `payment.get` with what it displayed),
    /// called from `origin` inside `topOrigin`.
    public func getPayment(
        _ options: RequestOptionsJSON, origin: String, topOrigin: String, payeeName: String, currency: String, value: String,
        instrument: String = "Signet test card"
    ) throws -> AuthenticationResponseJSON {
        signCount += 1
        let authData = authenticatorData(rpID: options.rpId, attested: false, userVerified: true)
        func q(_ s: String) -> String { String(decoding: try! JSONEncoder().encode(s), as: UTF8.self) }
        let clientData = Array(
            (#"{"type":"payment.get","challenge":"\#(options.challenge)","origin":\#(q(origin)),"crossOrigin":true,"topOrigin":\#(q(topOrigin)),"#
                + #""payment":{"rpId":\#(q(options.rpId)),"topOrigin":\#(q(topOrigin)),"payeeName":\#(q(payeeName)),"#
                + #""total":{"currency":\#(q(currency)),"value":\#(q(value))},"instrument":{"displayName":\#(q(instrument)),"icon":"https://bank.example/card.png"}}}"#).utf8)
        let signature = try key.sign(authData + SHA256.hash(clientData), algorithm: .es256)
        return AuthenticationResponseJSON(
            id: credentialIDBase64URL, rawId: credentialIDBase64URL,
            response: .init(
                clientDataJSON: Base64URL.encode(clientData), authenticatorData: Base64URL.encode(authData),
                signature: Base64URL.encode(signature), userHandle: Base64URL.encode(userHandle)))
    }
}

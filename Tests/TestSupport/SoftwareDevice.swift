import Crypto
import Foundation
import JSON
import Schema
import Tokens

/// A phone in software for the oob-notification service's tests: a device key (signs without
/// user presence) and a user-auth key (would need the passcode on a real phone), both P-256.
/// It builds the create-or-update body, the `Device-Proof` header of every call, and the
/// signed decisions on approvals, as the mobile SDK does.
public struct SoftwareDevice: Sendable {
    public let deviceKey: PrivateKey
    public let userAuthKey: PrivateKey
    public let platform: String
    public var pushToken: String

    public init(platform: String = "ios", pushToken: String? = nil) throws {
        deviceKey = try PrivateKey.generateP256()
        userAuthKey = try PrivateKey.generateP256()
        self.platform = platform
        self.pushToken = pushToken ?? Hex.encode(SecureRandom.bytes(32))
    }

    private init(deviceKey: PrivateKey, userAuthKey: PrivateKey, platform: String, pushToken: String) {
        self.deviceKey = deviceKey
        self.userAuthKey = userAuthKey
        self.platform = platform
        self.pushToken = pushToken
    }

    /// The same phone (the same device key) with a new user-auth key: as after a change of its
    /// biometrics, or as whoever holds only the device key would make one.
    public func withNewUserAuthKey() throws -> SoftwareDevice {
        SoftwareDevice(deviceKey: deviceKey, userAuthKey: try PrivateKey.generateP256(), platform: platform, pushToken: pushToken)
    }

    public static func jwkJSON(_ key: PrivateKey) throws -> String {
        JSONValue.object(try JWK(publicKey: try key.publicKey()).jsonObject).jsonString
    }

    /// The create-or-update body, with the user-auth key unless `security` is false.
    public func upsertBody(security: Bool = true, appId: String = "com.example.bank", model: String = "iPhone15,2", locale: String? = nil) throws -> String {
        var members = [
            #""deviceKey":\#(try Self.jwkJSON(deviceKey))"#, #""platform":"\#(platform)""#, #""appId":"\#(appId)""#, #""model":"\#(model)""#,
            #""osVersion":"18.1""#, #""pushToken":"\#(pushToken)""#,
        ]
        if security { members.append(#""userAuthKey":\#(try Self.jwkJSON(userAuthKey))"#) }
        if let locale { members.append(#""locale":"\#(locale)""#) }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// The `Device-Proof` header for `method` `path` (the service's path, without the gateway
    /// prefix or the query) and `body`, with a new nonce unless one is given.
    public func proof(_ method: String, _ path: String, body: [UInt8] = [], nonce: String? = nil, issuedAt: Date = Date(), key: PrivateKey? = nil)
        throws -> String
    {
        var claims: [String: JSONValue] = [
            "htm": .string(method), "htu": .string(path), "nonce": .string(nonce ?? Base64URL.encode(SecureRandom.bytes(18))),
            "iat": .int(Int64(issuedAt.timeIntervalSince1970)),
        ]
        if !body.isEmpty { claims["bh"] = .string(Base64URL.encode(SHA256.hash(body))) }
        let payload = Array(JSONValue.object(claims).jsonString.utf8)
        return try JWS.sign(payload: payload, header: JWSHeader(algorithm: .es256, type: "device-proof+jwt"), key: key ?? deviceKey)
    }

    /// A signed decision body (``ApprovalDecisionRequest``).
    public func decision(
        _ decision: String, approvalId: String, detailsHash: String, number: Int? = nil, withUserAuthKey: Bool = false
    ) throws -> String {
        let key = withUserAuthKey ? userAuthKey : deviceKey
        let message = ApprovalSignature.message(approvalId: approvalId, detailsHash: detailsHash, decision: decision, number: number)
        let der = try key.sign(message, algorithm: .es256)
        guard let raw = ECDSASignature.raw(fromDER: der, size: 32) else { throw CryptoError("signature") }
        let numberMember = number.map { #","number":\#($0)"# } ?? ""
        return #"{"decision":"\#(decision)","signedWith":"\#(withUserAuthKey ? "userAuthKey" : "deviceKey")","signature":"\#(Base64URL.encode(raw))"\#(numberMember)}"#
    }

    /// A QR sign-in code's answer (``QRSessionDecisionRequest``): an `ACCEPT` signed by the
    /// user-auth key (or `key`) over ``QRSignInSignature``; a `REJECT` (or `signed: false`)
    /// without a signature.
    public func qrDecision(_ decision: String, qrSessionId: String, key: PrivateKey? = nil, signed: Bool? = nil) throws -> String {
        guard signed ?? (decision == "ACCEPT") else { return JSONValue.object(["decision": .string(decision)]).jsonString }
        let der = try (key ?? userAuthKey).sign(QRSignInSignature.message(qrSessionId: qrSessionId, decision: decision), algorithm: .es256)
        guard let raw = ECDSASignature.raw(fromDER: der, size: 32) else { throw CryptoError("signature") }
        return JSONValue.object(["decision": .string(decision), "signature": .string(Base64URL.encode(raw))]).jsonString
    }

    /// A signed identity document submission (``IdentityDocumentSubmission``): the scanned
    /// `text`, signed by the user-auth key (or `key`) over ``IdentityDocumentSignature``.
    public func identityDocument(format: String, text: String, deviceId: String, key: PrivateKey? = nil) throws -> String {
        let message = IdentityDocumentSignature.message(deviceId: deviceId, textHash: Base64URL.encode(SHA256.hash(Array(text.utf8))))
        let der = try (key ?? userAuthKey).sign(message, algorithm: .es256)
        guard let raw = ECDSASignature.raw(fromDER: der, size: 32) else { throw CryptoError("signature") }
        return JSONValue.object(["format": .string(format), "text": .string(text), "signature": .string(Base64URL.encode(raw))]).jsonString
    }
}

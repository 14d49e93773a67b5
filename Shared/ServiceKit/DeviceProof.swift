import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Tokens

/// Proof of possession of a device key, sent by a mobile app with every call after it has
/// created its device: a short-lived compact JWS in the `Device-Proof` header, signed (ES256)
/// by the device key, that binds the request.
///
/// - header: `alg: ES256`, `typ: device-proof+jwt` (RFC 8725 §3.11 explicit typing);
/// - claims: `htm` (the request method), `htu` (the request path as the service receives it,
///   without the gateway prefix or the query), `nonce` (16-128 base64url characters, new for
///   every request), `iat` (seconds; within ``maximumAge`` of the server's clock either way),
///   and `bh`, the base64url SHA-256 of the body, when the request has one.
///
/// The proof is checked here (signature, type, binding, freshness); the nonce is then
/// remembered by the ``DeviceKeyDirectory`` until the proof could no longer be fresh, so a
/// proof works once: a replayed one is refused even within its minute. Modelled on DPoP
/// (RFC 9449 §4.2-4.3) with a client nonce and a body hash instead of a server nonce.
public enum DeviceProof {
    /// The request header carrying the proof.
    public static let headerName = "device-proof"
    /// The JWS `typ`.
    public static let type = "device-proof+jwt"
    /// How far `iat` may be from the server's clock, either way.
    public static let maximumAge: TimeInterval = 60
    /// Proofs are small: a header, five claims and a signature.
    static let limits = JWS.Limits(maximumLength: 2048, maximumHeaderLength: 512)

    /// What a verified proof gives the guard: the nonce to remember and until when.
    public struct Verified: Sendable {
        public let nonce: String
        public let rememberUntil: Date
    }

    /// Verifies the request's proof against `key` (a P-256 public JWK).
    ///
    /// - Throws: 401 `unauthorized` naming the failed check (never the proof's content).
    public static func verify(_ request: HTTPRequest, key: JWK, now: Date = Date()) throws(HTTPError) -> Verified {
        guard let text = request.header(headerName) else { throw refused("no Device-Proof header") }
        let jws: JWS
        do throws(JOSEError) {
            jws = try JWS(compact: text, limits: limits)
            let verification = try JWSVerificationKey(jwk: key, allowedAlgorithms: [.es256])
            try jws.verify(with: verification)
        } catch {
            throw refused("the proof does not verify (\(error.code.rawValue))")
        }
        guard let type = jws.header.type, type.lowercased() == Self.type else { throw refused("typ is not \(Self.type)") }
        guard case .object(let claims)? = try? JSONParser.parse(jws.payload, maximumDepth: 4) else { throw refused("the claims are not a JSON object") }
        guard claims["htm"]?.stringValue == request.method else { throw refused("htm is not the request's method") }
        guard claims["htu"]?.stringValue == request.path else { throw refused("htu is not the request's path") }
        guard let nonce = claims["nonce"]?.stringValue, (16...128).contains(nonce.utf8.count), nonce.utf8.allSatisfy(Self.isBase64URLByte) else {
            throw refused("nonce must be 16-128 base64url characters")
        }
        guard let iat = claims["iat"]?.doubleValue, iat.isFinite else { throw refused("iat is missing") }
        let issued = Date(timeIntervalSince1970: iat)
        guard abs(issued.timeIntervalSince(now)) <= maximumAge else { throw refused("iat is not within \(Int(maximumAge)) s of now") }
        if !request.body.isEmpty {
            let expected = Base64URL.encode(SHA256.hash(request.body))
            guard let bh = claims["bh"]?.stringValue, ConstantTime.equals(bh, expected) else { throw refused("bh is not the body's SHA-256") }
        }
        return Verified(nonce: nonce, rememberUntil: max(issued, now).addingTimeInterval(maximumAge))
    }

    /// Whether `c` is a base64url alphabet byte (RFC 4648 §5).
    public static func isBase64URLByte(_ c: UInt8) -> Bool {
        (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || c == 0x2D || c == 0x5F
    }

    static func refused(_ reason: String) -> HTTPError {
        HTTPError(.unauthorized, detail: "The device proof is not valid: \(reason).", headers: [("WWW-Authenticate", "Device-Proof")])
    }
}

/// Where the device guards find device keys and remember the nonces of the proofs they
/// accepted (the oob service's device store).
public protocol DeviceKeyDirectory: Sendable {
    /// The device key of the tenant's device `deviceId`, or nil when there is no such device
    /// or it was revoked.
    func deviceKey(tenant: String, deviceId: String) async throws -> JWK?
    /// Records a proof's nonce for `holder` (a device id or a key thumbprint) until `until`.
    ///
    /// - Returns: false when the nonce was already recorded (a replay).
    func rememberNonce(_ nonce: String, tenant: String, holder: String, until: Date) async throws -> Bool
}

extension DeviceKeyDirectory {
    /// Verifies the proof with `key` and records its nonce.
    func admit(_ request: HTTPRequest, key: JWK, tenant: String, holder: String) async throws {
        let verified = try DeviceProof.verify(request, key: key)
        guard try await rememberNonce(verified.nonce, tenant: tenant, holder: holder, until: verified.rememberUntil) else {
            throw DeviceProof.refused("the proof was used before")
        }
    }
}

/// The member of a device create-or-update body the `deviceKeyHolder` guard reads.
struct DeviceKeyHolderBody: Decodable {
    let deviceKey: JSONValue
}

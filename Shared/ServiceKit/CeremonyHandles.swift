import JSON
import Crypto
import FoundationEssentials
import HTTPServer
import Platform

/// Sealed, stateless ceremony handles: the state a WebAuthn ceremony needs between its
/// options call and its finish call (challenge, user, policy, expiry) travels to the client
/// encrypted and authenticated with AES-256-GCM, so starting a ceremony writes nothing to the
/// database. Single use is enforced at finish, where the challenge's hash is recorded in the
/// same transaction as the ceremony's effect.
///
/// The key comes from `SIGNET_CEREMONY_KEY` (32 bytes, base64url); every replica of a service
/// must share it. Without it a random key is generated: fine for one development process,
/// and logged as a warning.
public struct CeremonyHandles: Sendable {
    let box: AES256GCM
    /// The key of ``tag(_:purpose:)``: derived from the handle key (HKDF-SHA256, its own
    /// label), never the AES key itself.
    private let tagKey: [UInt8]

    public init(key: [UInt8]) throws {
        box = try AES256GCM(key: key)
        tagKey = HKDF.sha256(inputKey: key, salt: [], info: Array("signet ceremony tags v1".utf8), outputByteCount: 32)
    }

    /// From `SIGNET_CEREMONY_KEY`, or a random key with a warning.
    public static func fromEnvironment(_ env: Environment = Environment(), logger: Logger) throws -> CeremonyHandles {
        if let text = env.optionalString("SIGNET_CEREMONY_KEY") {
            guard let key = Base64URL.decode(text), key.count == 32 else {
                throw Environment.ConfigurationError(variable: "SIGNET_CEREMONY_KEY", reason: "must be 32 bytes, base64url")
            }
            return try CeremonyHandles(key: key)
        }
        guard ServiceConfiguration.isLoopback(env.string("SIGNET_HTTP_HOST", default: "127.0.0.1")) else {
            throw Environment.ConfigurationError(variable: "SIGNET_CEREMONY_KEY", reason: "required off loopback (32 bytes, base64url)")
        }
        logger.warning("SIGNET_CEREMONY_KEY is not set: using a random key; ceremonies will not survive a restart or span replicas")
        return try CeremonyHandles(key: SecureRandom.bytes(32))
    }

    /// An authentication tag (HMAC-SHA-256) of `message` for `purpose`, under a key every
    /// replica shares: for values this service hands out and must later recognise as its own
    /// without having stored them (the direct sign-in's session ids). Compare with
    /// ``ConstantTime``.
    public func tag(_ message: [UInt8], purpose: String) -> [UInt8] {
        HMAC.authenticationCode(.sha256, key: tagKey, message: Array(purpose.utf8) + [0] + message)
    }

    /// Seals `state` for `purpose` (bound as associated data, so a handle of one ceremony
    /// kind can never be used as another).
    public func seal<T: Encodable>(_ state: T, purpose: String) throws -> String {
        let json = try JSONValueEncoder().encodeToBytes(state)
        return Base64URL.encode(try box.seal(json, associatedData: Array(purpose.utf8)))
    }

    /// Seals bytes the caller encoded itself (a compact binary state: JSON coding of the state
    /// showed up in profiles of the sign-in hot path).
    public func seal(bytes: [UInt8], purpose: String) throws -> String {
        Base64URL.encode(try box.seal(bytes, associatedData: Array(purpose.utf8)))
    }

    /// Opens a handle sealed by `seal(bytes:purpose:)`; any tampering, another purpose or
    /// garbage is `invalid_handle`.
    public func openBytes(_ handle: String, purpose: String) throws -> [UInt8] {
        guard handle.utf8.count <= 8192, let sealed = Base64URL.decode(handle),
            let plain = try? box.open(sealed, associatedData: Array(purpose.utf8))
        else {
            throw HTTPError(ProblemCode.invalidHandle, detail: "The ceremony handle is not valid.")
        }
        return plain
    }

    /// Opens a handle; any tampering, another purpose or garbage is `invalid_handle`.
    public func open<T: Decodable>(_ handle: String, as: T.Type, purpose: String) throws -> T {
        guard handle.utf8.count <= 8192, let sealed = Base64URL.decode(handle),
            let plain = try? box.open(sealed, associatedData: Array(purpose.utf8)),
            let state = try? JSONValueDecoder().decode(T.self, from: plain)
        else {
            throw HTTPError(ProblemCode.invalidHandle, detail: "The ceremony handle is not valid.")
        }
        return state
    }
}

extension ProblemCode {
    public static let invalidHandle = ProblemCode("invalid_handle", status: 400, title: "Invalid ceremony handle")
    public static let handleExpired = ProblemCode("handle_expired", status: 400, title: "Ceremony expired")
    public static let challengeReplayed = ProblemCode("challenge_replayed", status: 400, title: "Challenge already used")
}

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
/// The key comes from `SIGNET_CEREMONY_KEY`; every replica of a service must share it.
/// Without it a random key is generated: fine for one development process, and logged as a
/// warning. `SIGNET_CEREMONY_KEY_ACCEPTED` lists other keys (comma-separated) that open
/// handles and recognise tags but never seal or make them, so the key can be changed without
/// failing the ceremonies in flight or the direct sessions still to be revoked: first every
/// replica accepts the new key, then every replica seals with it and accepts the old one, and
/// once the old one's handles and sessions have expired it is dropped.
public struct CeremonyHandles: Sendable {
    /// The sealing key first, then the accepted ones.
    private let keys: [Key]

    struct Key: Sendable {
        let box: AES256GCM
        /// The key of ``tag(_:purpose:)``: derived from the handle key (HKDF-SHA256, its own
        /// label), never the AES key itself.
        let tagKey: [UInt8]

        init(_ key: [UInt8]) throws {
            box = try AES256GCM(key: key)
            tagKey = HKDF.sha256(inputKey: key, salt: [], info: Array("signet ceremony tags v1".utf8), outputByteCount: 32)
        }

        func tag(_ message: [UInt8], purpose: String) -> [UInt8] {
            HMAC.authenticationCode(.sha256, key: tagKey, message: Array(purpose.utf8) + [0] + message)
        }
    }

    /// - Parameters:
    ///   - key: seals handles and makes tags.
    ///   - accepted: open handles and recognise tags too, never seal or make them.
    public init(key: [UInt8], accepted: [[UInt8]] = []) throws {
        keys = try ([key] + accepted).map(Key.init)
    }

    /// From `SIGNET_CEREMONY_KEY` (or a random key with a warning, on loopback only) and
    /// `SIGNET_CEREMONY_KEY_ACCEPTED`.
    public static func fromEnvironment(_ env: Environment = Environment(), logger: Logger) throws -> CeremonyHandles {
        let accepted = try ServiceKeys.acceptedKeys("SIGNET_CEREMONY_KEY", env)
        if let text = env.optionalString("SIGNET_CEREMONY_KEY") {
            guard let key = Base64URL.decode(text), key.count == 32 else {
                throw Environment.ConfigurationError(variable: "SIGNET_CEREMONY_KEY", reason: "must be 32 bytes, base64url")
            }
            guard !accepted.contains(key) else {
                throw Environment.ConfigurationError(variable: "SIGNET_CEREMONY_KEY_ACCEPTED", reason: "lists SIGNET_CEREMONY_KEY itself")
            }
            if !accepted.isEmpty {
                logger.info("ceremony handles: sealing with SIGNET_CEREMONY_KEY, also accepting \(accepted.count) key(s) of SIGNET_CEREMONY_KEY_ACCEPTED")
            }
            return try CeremonyHandles(key: key, accepted: accepted)
        }
        guard ServiceConfiguration.isLoopback(env.string("SIGNET_HTTP_HOST", default: "127.0.0.1")) else {
            throw Environment.ConfigurationError(variable: "SIGNET_CEREMONY_KEY", reason: "required off loopback (32 bytes, base64url)")
        }
        logger.warning("SIGNET_CEREMONY_KEY is not set: using a random key; ceremonies will not survive a restart or span replicas")
        return try CeremonyHandles(key: SecureRandom.bytes(32), accepted: accepted)
    }

    /// An authentication tag (HMAC-SHA-256) of `message` for `purpose`, under a key every
    /// replica shares: for values this service hands out and must later recognise as its own
    /// without having stored them (the direct sign-in's session ids). Compare with
    /// ``ConstantTime``.
    public func tag(_ message: [UInt8], purpose: String) -> [UInt8] {
        keys[0].tag(message, purpose: purpose)
    }

    /// Whether `candidate` is the first `candidate.count` bytes (at least 8) of the tag of
    /// `message` for `purpose` under the sealing key or an accepted one, compared in constant
    /// time with each.
    public func isTag(_ candidate: [UInt8], of message: [UInt8], purpose: String) -> Bool {
        guard candidate.count >= 8, candidate.count <= 32 else { return false }
        var found = false
        for key in keys where ConstantTime.equals(candidate, Array(key.tag(message, purpose: purpose).prefix(candidate.count))) {
            found = true
        }
        return found
    }

    /// Seals `state` for `purpose` (bound as associated data, so a handle of one ceremony
    /// kind can never be used as another).
    public func seal<T: Encodable>(_ state: T, purpose: String) throws -> String {
        let json = try JSONValueEncoder().encodeToBytes(state)
        return Base64URL.encode(try keys[0].box.seal(json, associatedData: Array(purpose.utf8)))
    }

    /// Seals bytes the caller encoded itself (a compact binary state: JSON coding of the state
    /// showed up in profiles of the sign-in hot path).
    public func seal(bytes: [UInt8], purpose: String) throws -> String {
        Base64URL.encode(try keys[0].box.seal(bytes, associatedData: Array(purpose.utf8)))
    }

    /// Opens a handle sealed by `seal(bytes:purpose:)`; any tampering, another purpose or
    /// garbage is `invalid_handle`.
    public func openBytes(_ handle: String, purpose: String) throws -> [UInt8] {
        guard handle.utf8.count <= 8192, let sealed = Base64URL.decode(handle),
            let plain = opened(sealed, purpose: purpose)
        else {
            throw HTTPError(ProblemCode.invalidHandle, detail: "The ceremony handle is not valid.")
        }
        return plain
    }

    /// Opens a handle; any tampering, another purpose or garbage is `invalid_handle`.
    public func open<T: Decodable>(_ handle: String, as: T.Type, purpose: String) throws -> T {
        guard handle.utf8.count <= 8192, let sealed = Base64URL.decode(handle),
            let plain = opened(sealed, purpose: purpose),
            let state = try? JSONValueDecoder().decode(T.self, from: plain)
        else {
            throw HTTPError(ProblemCode.invalidHandle, detail: "The ceremony handle is not valid.")
        }
        return state
    }
}

extension CeremonyHandles {
    /// The plaintext of `sealed` under the sealing key, else the first accepted key that opens
    /// it; nil when none does.
    fileprivate func opened(_ sealed: [UInt8], purpose: String) -> [UInt8]? {
        let associatedData = Array(purpose.utf8)
        for key in keys {
            if let plain = try? key.box.open(sealed, associatedData: associatedData) { return plain }
        }
        return nil
    }
}

extension ProblemCode {
    public static let invalidHandle = ProblemCode("invalid_handle", status: 400, title: "Invalid ceremony handle")
    public static let handleExpired = ProblemCode("handle_expired", status: 400, title: "Ceremony expired")
    public static let challengeReplayed = ProblemCode("challenge_replayed", status: 400, title: "Challenge already used")
}

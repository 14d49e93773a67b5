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
    /// Seals handles with the key, opens them with it or an accepted one.
    private let boxes: SealingKeys
    /// The keys of ``tag(_:purpose:)``, the sealing key's first: each derived from its handle
    /// key (HKDF-SHA256, its own label), never the AES key itself.
    private let tagKeys: [[UInt8]]

    /// - Parameters:
    ///   - key: seals handles and makes tags.
    ///   - accepted: open handles and recognise tags too, never seal or make them.
    public init(key: [UInt8], accepted: [[UInt8]] = []) throws {
        boxes = try SealingKeys(key: key, accepted: accepted)
        tagKeys = ([key] + accepted).map {
            HKDF.sha256(inputKey: $0, salt: [], info: Array("signet ceremony tags v1".utf8), outputByteCount: 32)
        }
    }

    /// From `SIGNET_CEREMONY_KEY` (or a random key with a warning, on loopback only) and
    /// `SIGNET_CEREMONY_KEY_ACCEPTED` (``ServiceKeys/keyWithAccepted(_:_:logger:)``).
    public static func fromEnvironment(_ env: Environment = Environment(), logger: Logger) throws -> CeremonyHandles {
        let (key, accepted) = try ServiceKeys.keyWithAccepted("SIGNET_CEREMONY_KEY", env, logger: logger)
        return try CeremonyHandles(key: key, accepted: accepted)
    }

    private static func tag(_ message: [UInt8], purpose: String, key: [UInt8]) -> [UInt8] {
        HMAC.authenticationCode(.sha256, key: key, message: Array(purpose.utf8) + [0] + message)
    }

    /// An authentication tag (HMAC-SHA-256) of `message` for `purpose`, under a key every
    /// replica shares: for values this service hands out and must later recognise as its own
    /// without having stored them (the direct sign-in's session ids). Compare with
    /// ``ConstantTime``.
    public func tag(_ message: [UInt8], purpose: String) -> [UInt8] {
        Self.tag(message, purpose: purpose, key: tagKeys[0])
    }

    /// Whether `candidate` is the first `candidate.count` bytes (at least 8) of the tag of
    /// `message` for `purpose` under the sealing key or an accepted one, compared in constant
    /// time with each.
    public func isTag(_ candidate: [UInt8], of message: [UInt8], purpose: String) -> Bool {
        guard candidate.count >= 8, candidate.count <= 32 else { return false }
        var found = false
        for key in tagKeys where ConstantTime.equals(candidate, Array(Self.tag(message, purpose: purpose, key: key).prefix(candidate.count))) {
            found = true
        }
        return found
    }

    /// Seals `state` for `purpose` (bound as associated data, so a handle of one ceremony
    /// kind can never be used as another).
    public func seal<T: Encodable>(_ state: T, purpose: String) throws -> String {
        let json = try JSONValueEncoder().encodeToBytes(state)
        return Base64URL.encode(try boxes.seal(json, associatedData: Array(purpose.utf8)))
    }

    /// Seals bytes the caller encoded itself (a compact binary state: JSON coding of the state
    /// showed up in profiles of the sign-in hot path).
    public func seal(bytes: [UInt8], purpose: String) throws -> String {
        Base64URL.encode(try boxes.seal(bytes, associatedData: Array(purpose.utf8)))
    }

    /// Opens a handle sealed by `seal(bytes:purpose:)`; any tampering, another purpose or
    /// garbage is `invalid_handle`.
    public func openBytes(_ handle: String, purpose: String) throws -> [UInt8] {
        guard handle.utf8.count <= 8192, let sealed = Base64URL.decode(handle),
            let plain = try? boxes.open(sealed, associatedData: Array(purpose.utf8))
        else {
            throw HTTPError(ProblemCode.invalidHandle, detail: "The ceremony handle is not valid.")
        }
        return plain
    }

    /// Opens a handle; any tampering, another purpose or garbage is `invalid_handle`.
    public func open<T: Decodable>(_ handle: String, as: T.Type, purpose: String) throws -> T {
        guard handle.utf8.count <= 8192, let sealed = Base64URL.decode(handle),
            let plain = try? boxes.open(sealed, associatedData: Array(purpose.utf8)),
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

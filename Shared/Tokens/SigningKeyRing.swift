import Crypto
import FoundationEssentials
import Platform

/// The keys an issuer signs with: one current signer and the public halves of previous keys.
///
/// Rotation: ``rotated(to:)`` makes a new key current and keeps the old one's public half,
/// so that tokens it signed still verify and its JWK stays in the published JWKS until
/// they have expired; then ``removingKey(withID:)`` drops it. Every `kid` is the key's
/// RFC 7638 thumbprint unless given explicitly.
///
/// A value type: a service that rotates while running keeps its ring in an actor (or, read on
/// every request, behind a `PlainLock`) and swaps the whole ring.
public struct SigningKeyRing: Sendable {
    /// Where keys come from.
    ///
    /// Environment variables read by ``init(environment:)``:
    /// - `SIGNET_SIGNING_KEY_FILE`: PEM (PKCS#8 or SEC1) of the current P-256 key.
    /// - `SIGNET_PREVIOUS_SIGNING_KEY_FILES`: comma-separated PEM files of previous keys,
    ///   still published and accepted.
    /// - `SIGNET_EPHEMERAL_SIGNING_KEY`: `1`/`true` to generate a key at start-up when no key
    ///   file is named (development only: tokens do not survive a restart and replicas do
    ///   not share it).
    public struct Configuration: Sendable, Hashable {
        /// PEM file of the current key.
        public var currentKeyFile: String?
        /// PEM files of previous keys.
        public var previousKeyFiles: [String]
        /// Whether a missing ``currentKeyFile`` means "generate one" rather than an error.
        public var allowEphemeralKey: Bool

        /// An explicit configuration.
        public init(currentKeyFile: String?, previousKeyFiles: [String] = [], allowEphemeralKey: Bool = false) {
            self.currentKeyFile = currentKeyFile
            self.previousKeyFiles = previousKeyFiles
            self.allowEphemeralKey = allowEphemeralKey
        }

        /// The configuration named by the environment (see ``Configuration``).
        public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
            func value(_ name: String) -> String? {
                guard let v = environment[name]?.trimmingWhitespace(), !v.isEmpty else { return nil }
                return v
            }
            self.currentKeyFile = value("SIGNET_SIGNING_KEY_FILE")
            self.previousKeyFiles = (value("SIGNET_PREVIOUS_SIGNING_KEY_FILES") ?? "")
                .split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
            let ephemeral = value("SIGNET_EPHEMERAL_SIGNING_KEY")?.lowercased()
            self.allowEphemeralKey = ephemeral == "1" || ephemeral == "true" || ephemeral == "yes"
        }
    }

    /// The key new tokens are signed with.
    public let current: JWTSigner
    /// Previous keys (public halves), newest first: they still verify and are published.
    public let previous: [JWSVerificationKey]
    /// The published keys: current first, then previous.
    public let keySet: JWKSet

    /// A ring from its keys.
    ///
    /// - Throws: `invalid_key` if two keys share a `kid` or a previous key has none;
    ///   `too_large` over ``JWKSet/maximumKeyCount`` keys.
    public init(current: JWTSigner, previous: [JWSVerificationKey] = []) throws(JOSEError) {
        guard previous.allSatisfy({ $0.keyID != nil }) else { throw JOSEError(.invalidKey, "previous keys need a kid") }
        var jwks = [current.publicJWK]
        for key in previous {
            jwks.append(try JWK(publicKey: key.publicKey, keyID: key.keyID, algorithm: key.algorithm))
        }
        self.keySet = try JWKSet(keys: jwks)
        self.current = current
        self.previous = previous
    }

    /// Loads the keys named by `configuration`, or generates an ephemeral current key when
    /// none is named and that is allowed.
    ///
    /// - Important: Reads files synchronously: call it at start-up, not on the cooperative
    ///   pool while serving.
    /// - Throws: `key_file_unreadable`; `invalid_key` (not a PEM private key, or no key file
    ///   while ephemeral keys are not allowed); `unsupported_key` (not P-256).
    public static func load(_ configuration: Configuration) throws(JOSEError) -> SigningKeyRing {
        let current: JWTSigner
        if let path = configuration.currentKeyFile {
            current = try JWTSigner(privateKey: loadPrivateKey(path))
        } else if configuration.allowEphemeralKey {
            current = try ephemeralSigner()
        } else {
            throw JOSEError(.invalidKey, "no signing key file configured and ephemeral keys not allowed")
        }
        var previous: [JWSVerificationKey] = []
        for path in configuration.previousKeyFiles {
            // Only the public half of a previous key is kept: it never signs again.
            previous.append(try JWTSigner(privateKey: loadPrivateKey(path)).verificationKey)
        }
        return try SigningKeyRing(current: current, previous: previous)
    }

    /// A ring with one freshly generated key, for development and tests.
    public static func ephemeral() throws(JOSEError) -> SigningKeyRing {
        try SigningKeyRing(current: ephemeralSigner())
    }

    private static func ephemeralSigner() throws(JOSEError) -> JWTSigner {
        let key: PrivateKey
        do {
            key = try PrivateKey.generateP256()
        } catch {
            throw JOSEError(.signingFailed, "P-256 key generation failed")
        }
        return try JWTSigner(privateKey: key)
    }

    private static func loadPrivateKey(_ path: String) throws(JOSEError) -> PrivateKey {
        let pem: String
        do {
            pem = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw JOSEError(.keyFileUnreadable, "key file \(path) could not be read")
        }
        do {
            return try PrivateKey.fromPEM(pem)
        } catch {
            throw JOSEError(.invalidKey, "key file \(path) is not a supported PEM private key")
        }
    }

    // MARK: - Rotation

    /// A ring where `signer` is current and the current key becomes the newest previous key.
    public func rotated(to signer: JWTSigner) throws(JOSEError) -> SigningKeyRing {
        try SigningKeyRing(current: signer, previous: [current.verificationKey] + previous)
    }

    /// A ring without the previous key `kid`: its tokens stop verifying.
    ///
    /// - Throws: `invalid_key` when `kid` is the current key; `unknown_key` when no previous
    ///   key has it.
    public func removingKey(withID keyID: String) throws(JOSEError) -> SigningKeyRing {
        guard keyID != current.keyID else { throw JOSEError(.invalidKey, "the current key cannot be removed") }
        guard previous.contains(where: { $0.keyID == keyID }) else { throw JOSEError(.unknownKey, "no previous key with this kid") }
        return try SigningKeyRing(current: current, previous: previous.filter { $0.keyID != keyID })
    }

    // MARK: - Publishing and verifying

    /// The body of `/.well-known/jwks.json`.
    public var jwksJSON: String { keySet.jsonString }

    /// A verifier for this issuer's tokens (current and previous keys).
    public func verifier(options: JWTValidationOptions) -> JWTVerifier {
        JWTVerifier(keySet: keySet, options: options)
    }
}

import Crypto
import Foundation
import Testing
import Tokens

/// Signing keys: loading, ephemeral keys, the published JWKS, round trips and rotation.
@Suite struct SigningKeyRingTests {
    /// A fresh temporary folder, removed by the caller.
    static func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("signet-tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func writeKey(_ key: PrivateKey, to folder: URL, name: String) throws -> String {
        let url = folder.appendingPathComponent(name)
        try key.pemPKCS8().write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    @Test func roundTripThroughThePublishedJWKS() throws {
        let ring = try SigningKeyRing.ephemeral()
        let claims = Scenario.claims(extra: ["amr": ["hwk"]])
        let token = try ring.current.sign(claims)

        // A relying party fetches the JWKS document and verifies with it alone.
        let published = try JWKSet(json: ring.jwksJSON)
        #expect(published.keys.count == 1)
        let jwk = try #require(published.key(withID: ring.current.keyID))
        #expect(jwk.use == "sig" && jwk.jwsAlgorithm == .es256)
        #expect(jwk.keyID == jwk.thumbprintBase64URL)
        let jwt = try JWTVerifier(keySet: published, options: Scenario.options()).verify(token, now: Scenario.now)
        #expect(jwt.claims == claims)
        #expect(try ring.verifier(options: Scenario.options()).verify(token, now: Scenario.now).claims == claims)
    }

    @Test func rotationKeepsPreviousKeysUntilRemoved() throws {
        let first = try SigningKeyRing.ephemeral()
        let oldToken = try first.current.sign(Scenario.claims())

        let second = try first.rotated(to: JWTSigner(privateKey: PrivateKey.generateP256()))
        #expect(second.current.keyID != first.current.keyID)
        #expect(second.previous.map(\.keyID) == [first.current.keyID])
        #expect(second.keySet.keys.map(\.keyID) == [second.current.keyID, first.current.keyID])
        let newToken = try second.current.sign(Scenario.claims())

        // While the previous key is in the ring, both tokens verify, through the ring and
        // through its published JWKS.
        let during = second.verifier(options: Scenario.options())
        #expect(try during.verify(oldToken, now: Scenario.now).header.keyID == first.current.keyID)
        #expect(try during.verify(newToken, now: Scenario.now).header.keyID == second.current.keyID)
        let fromJWKS = JWTVerifier(keySet: try JWKSet(json: second.jwksJSON), options: Scenario.options())
        #expect(try fromJWKS.verify(oldToken, now: Scenario.now).claims.subject == "user-42")

        // Once its tokens have expired the previous key is removed, and its tokens stop verifying.
        let third = try second.removingKey(withID: first.current.keyID)
        #expect(third.keySet.keys.count == 1)
        let verifier = third.verifier(options: Scenario.options())
        expectJOSEError(.unknownKey) { try verifier.verify(oldToken, now: Scenario.now) }
        #expect(try verifier.verify(newToken, now: Scenario.now).claims.subject == "user-42")
        expectJOSEError(.unknownKey) { try JWTVerifier(keySet: JWKSet(json: third.jwksJSON), options: Scenario.options()).verify(oldToken, now: Scenario.now) }

        expectJOSEError(.invalidKey) { try third.removingKey(withID: third.current.keyID) }
        expectJOSEError(.unknownKey) { try third.removingKey(withID: "never-there") }
        // The same key cannot be both current and previous.
        expectJOSEError(.invalidKey) { try third.rotated(to: third.current) }
    }

    @Test func loadsKeysFromPEMFilesNamedByConfiguration() throws {
        let folder = try SigningKeyRingTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let currentKey = try PrivateKey.generateP256()
        let previousKey = try PrivateKey.generateP256()
        let currentPath = try SigningKeyRingTests.writeKey(currentKey, to: folder, name: "current.pem")
        let previousPath = try SigningKeyRingTests.writeKey(previousKey, to: folder, name: "previous.pem")

        let configuration = SigningKeyRing.Configuration(environment: [
            "SIGNET_SIGNING_KEY_FILE": currentPath, "SIGNET_PREVIOUS_SIGNING_KEY_FILES": " \(previousPath) ,",
        ])
        #expect(configuration.currentKeyFile == currentPath)
        #expect(configuration.previousKeyFiles == [previousPath])
        #expect(!configuration.allowEphemeralKey)

        let ring = try SigningKeyRing.load(configuration)
        // kid = thumbprint, so every replica loading the same file publishes the same kid.
        let expectedKid = try JWK(publicKey: currentKey.publicKey()).thumbprintBase64URL
        #expect(ring.current.keyID == expectedKid)
        #expect(try SigningKeyRing.load(configuration).current.keyID == expectedKid)
        #expect(ring.previous.first?.keyID == (try JWK(publicKey: previousKey.publicKey()).thumbprintBase64URL))

        // A token signed elsewhere with the previous key still verifies.
        let oldSigner = try JWTSigner(privateKey: previousKey)
        let oldToken = try oldSigner.sign(Scenario.claims())
        #expect(try ring.verifier(options: Scenario.options()).verify(oldToken, now: Scenario.now).claims.subject == "user-42")
    }

    @Test func keyLoadingFailuresHaveTheirCodes() throws {
        let folder = try SigningKeyRingTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("missing.pem").path
        expectJOSEError(.keyFileUnreadable) { try SigningKeyRing.load(.init(currentKeyFile: missing)) }

        let garbage = folder.appendingPathComponent("garbage.pem")
        try "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".write(to: garbage, atomically: true, encoding: .utf8)
        expectJOSEError(.invalidKey) { try SigningKeyRing.load(.init(currentKeyFile: garbage.path)) }

        let good = try SigningKeyRingTests.writeKey(PrivateKey.generateP256(), to: folder, name: "good.pem")
        expectJOSEError(.keyFileUnreadable) {
            try SigningKeyRing.load(.init(currentKeyFile: good, previousKeyFiles: [missing]))
        }
        // The same file as current and previous: one kid twice.
        expectJOSEError(.invalidKey) { try SigningKeyRing.load(.init(currentKeyFile: good, previousKeyFiles: [good])) }

        // No key file: an error unless ephemeral keys are explicitly allowed.
        expectJOSEError(.invalidKey) { try SigningKeyRing.load(.init(currentKeyFile: nil)) }
        let development = SigningKeyRing.Configuration(environment: ["SIGNET_EPHEMERAL_SIGNING_KEY": "true"])
        #expect(development.allowEphemeralKey)
        let ring = try SigningKeyRing.load(development)
        #expect(ring.current.keyID == ring.current.publicJWK.thumbprintBase64URL)
    }

    @Test func signerRefusesNonP256KeysAndExplicitKidsAreKept() throws {
        let signer = try JWTSigner(privateKey: PrivateKey.generateP256(), keyID: "2026-11-signing")
        #expect(signer.keyID == "2026-11-signing")
        #expect(signer.publicJWK.keyID == "2026-11-signing")
        expectJOSEError(.invalidKey) { try JWTSigner(privateKey: PrivateKey.generateP256(), keyID: "") }

        // An Ed25519 key (PKCS#8, RFC 8410 §7) is not an ES256 key.
        let pkcs8 = DER.sequence(
            DER.tlv(0x02, [0]), DER.sequence(DER.oid("1.3.101.112")),
            DER.tlv(0x04, DER.tlv(0x04, [UInt8](repeating: 9, count: 32))))
        let pem = "-----BEGIN PRIVATE KEY-----\n\(Data(pkcs8).base64EncodedString())\n-----END PRIVATE KEY-----\n"
        expectJOSEError(.unsupportedKey) { try JWTSigner(privateKey: PrivateKey.fromPEM(pem)) }
    }
}

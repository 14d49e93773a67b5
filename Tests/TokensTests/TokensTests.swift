import Crypto
import Foundation
import Testing
import Tokens
import JSON

// Shared fixtures of the Tokens test suites: the RFC vector file, token forging, and a
// standard issuer/audience/clock.

/// `../shared/vectors/rfc_jose.json` next to the repository (see /work/shared/vectors/README.md).
///
/// Present: the vector tests run. Absent: they are skipped with a message, unless `CI` is
/// set, in which case they run and fail on the missing file.
enum JOSEVectors {
    /// Tests/TokensTests/TokensTests.swift → three levels up is the repository root.
    /// Symlinks are resolved so that the path holds when the folder is linked elsewhere.
    static let repositoryRoot = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let file = repositoryRoot.appendingPathComponent("../shared/vectors/rfc_jose.json").standardizedFileURL

    static var isAvailable: Bool { FileManager.default.fileExists(atPath: file.path) }
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] != nil }

    /// The condition for vector tests: run when the file is there, and always under CI.
    static var shouldRun: Bool { isAvailable || isCI }
    static let skipMessage: Comment =
        "RFC JOSE vectors skipped: \(file.path) not found (set CI=1 to make this a failure)"

    struct Missing: Error, CustomStringConvertible {
        var description: String { "RFC JOSE vectors not found at \(JOSEVectors.file.path)" }
    }

    /// Every vector, by name.
    static func all() throws -> [String: [String: Any]] {
        guard isAvailable else { throw Missing() }
        let data = try Data(contentsOf: file)
        let list = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        var byName: [String: [String: Any]] = [:]
        for entry in list {
            byName[try #require(entry["name"] as? String)] = entry
        }
        return byName
    }

    static func vector(_ name: String) throws -> [String: Any] {
        try #require(try all()[name], "vector \(name) missing from rfc_jose.json")
    }

    /// The vector's JWK as JSON text, without its private members (a public JWK refuses them).
    static func publicJWKJSON(_ vector: [String: Any]) throws -> String {
        var jwk = try #require(vector["jwk"] as? [String: Any])
        for name in ["d", "p", "q", "dp", "dq", "qi"] { jwk.removeValue(forKey: name) }
        return String(decoding: try JSONSerialization.data(withJSONObject: jwk, options: [.sortedKeys]), as: UTF8.self)
    }
}

/// Builds compact JWS text with any header, for tests that need tokens Signet would never
/// sign.
enum Forge {
    static func b64(_ s: String) -> String { Base64URL.encode(Array(s.utf8)) }

    /// `b64(header).b64(payload).b64(signature)` where the signature is made by `key` under
    /// `algorithm` over the real signing input (r‖s for ECDSA), or is `signature` verbatim.
    static func token(
        header: String, payload: String, key: PrivateKey? = nil, algorithm: SignatureAlgorithm = .es256,
        signature: [UInt8]? = nil
    ) throws -> String {
        let input = b64(header) + "." + b64(payload)
        if let signature { return input + "." + Base64URL.encode(signature) }
        guard let key else { return input + "." }
        var sig = try key.sign(Array(input.utf8), algorithm: algorithm)
        if algorithm == .es256 { sig = try #require(ECDSASignature.raw(fromDER: sig, size: 32)) }
        return input + "." + Base64URL.encode(sig)
    }

    /// Replaces one of the three parts of a compact token.
    static func replacing(part index: Int, of token: String, with text: String) -> String {
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[index] = text
        return parts.joined(separator: ".")
    }
}

/// A fixed issuer, audience and clock.
enum Scenario {
    static let issuer = "https://signet.test/authentication"
    static let audience = "rp-demo"
    /// 2027-01-15T08:00:00Z.
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func claims(
        lifetime: TimeInterval = 300, issuedAt: Date = now, issuer: String = issuer, audience: [String] = [audience],
        extra: [String: JSONValue] = [:]
    ) -> JWTClaims {
        JWTClaims(
            issuer: issuer, subject: "user-42", audience: audience, expiresAt: issuedAt.addingTimeInterval(lifetime),
            notBefore: nil, issuedAt: issuedAt, id: UUID().uuidString, extra: extra)
    }

    static func options(
        allowedAlgorithms: Set<JWSAlgorithm> = [.es256], configure: (inout JWTValidationOptions) -> Void = { _ in }
    ) -> JWTValidationOptions {
        var options = JWTValidationOptions(issuer: issuer, audience: audience, allowedAlgorithms: allowedAlgorithms)
        configure(&options)
        return options
    }

    /// The payload JSON of `claims`, for forged tokens.
    static func payload(_ claims: JWTClaims) -> String { JSONValue.object(claims.jsonObject).jsonString }
}

/// Expects `body` to throw a `JOSEError` with exactly `code`.
func expectJOSEError<R>(
    _ code: JOSEError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> R
) {
    let error = #expect(throws: JOSEError.self, comment, sourceLocation: sourceLocation) { _ = try body() }
    #expect(
        error?.code == code, "expected \(code), got \(error.map { String(reflecting: $0) } ?? "no JOSEError")",
        sourceLocation: sourceLocation)
}

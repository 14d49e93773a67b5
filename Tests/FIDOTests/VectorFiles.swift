import Crypto
import Foundation
import Testing

/// The shared test vectors in `<repository root>/../shared/vectors` (never copied into the repo).
///
/// Suites that read them are enabled only when the folder exists; ``VectorFilesPresenceTests``
/// fails instead of skipping when the `CI` environment variable is set.
enum VectorFiles {
    /// `<root>/../shared/vectors`, the root found from this file: Tests/FIDOTests/VectorFiles.swift.
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // FIDOTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // repository root
        .appendingPathComponent("../shared/vectors")
        .standardizedFileURL

    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] != nil }

    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    static func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: url(name).path) }

    /// Whether the vectors this target uses are all there.
    static var available: Bool {
        ["webauthn_authentication.json", "webauthn_registration.json", "cose_keys.json"].allSatisfy(exists)
    }

    static let skipMessage: Comment = "skipped: shared vectors not found at ../shared/vectors (set CI to make this a failure)"

    /// The parsed JSON of `name`, or nil when it is absent or unreadable.
    static func json(_ name: String) -> Any? {
        guard let data = try? Data(contentsOf: url(name)) else { return nil }
        return try? JSONSerialization.jsonObject(with: data)
    }

    /// The list at the top of `name` (or at `key` in its top-level object).
    static func entries(_ name: String, key: String? = nil) -> [[String: Any]] {
        let root = json(name)
        if let key { return ((root as? [String: Any])?[key] as? [[String: Any]]) ?? [] }
        return (root as? [[String: Any]]) ?? []
    }
}

@Suite struct VectorFilesPresenceTests {
    /// Under CI the vectors are part of the environment: their absence is a failure, not a skip.
    @Test(.enabled(if: VectorFiles.available || VectorFiles.isCI, VectorFiles.skipMessage))
    func vectorsArePresent() {
        #expect(VectorFiles.available, "shared vectors missing at \(VectorFiles.directory.path)")
        #expect(VectorFiles.entries("webauthn_authentication.json").count == 37)
        #expect(VectorFiles.entries("webauthn_registration.json").count == 78)
        #expect(VectorFiles.entries("cose_keys.json", key: "webauthn_credential_public_keys").count == 11)
    }
}

// MARK: - Decoding helpers for vector fields

enum Lenient {
    /// base64url, also accepting the standard alphabet and padding that some entries keep
    /// (their `encoding_note` says so).
    static func bytes(_ s: String) -> [UInt8]? {
        let normalised = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        if let bytes = Base64URL.decode(normalised) { return bytes }
        // Some negative entries hold a non-canonical spelling (SimpleWebAuthn's expected
        // challenge "shouldhavebeenthisvalue" has non-zero trailing bits), which Signet's decoder
        // refuses: decode it here, dropping those bits, so the entry can still be run.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for c in normalised.utf8 {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            accumulator = (accumulator << 6 | UInt32(v)) & 0xFFFF
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return out
    }

    /// A string or a list of strings.
    static func strings(_ any: Any?) -> [String]? {
        if let s = any as? String { return [s] }
        return any as? [String]
    }

    static func bool(_ any: Any?) -> Bool? {
        (any as? NSNumber).map(\.boolValue)
    }
}

extension Array where Element == UInt8 {
    var base64url: String { Base64URL.encode(self) }
}

import Foundation
import Testing
@testable import Crypto

/// The shared vectors folder (`../shared/vectors` next to the repository root) and what the
/// X.509 tests take from it. Suites that need it carry ``X509TestVectors/trait``: skipped with a
/// message when the folder is absent, but run (and fail) when `CI` is set.
enum X509TestVectors {
    /// Tests/CryptoTests/X509TestVectors.swift → three levels up is the repository root.
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("../shared/vectors").standardized

    static let isCI = ProcessInfo.processInfo.environment["CI"] != nil
    static let isPresent = FileManager.default.fileExists(atPath: directory.appendingPathComponent("README.md").path)

    static var trait: ConditionTrait {
        .enabled(
            if: isPresent || isCI,
            "test vectors not found at \(directory.path): skipped (with CI set this is a failure)")
    }

    struct Missing: Error, CustomStringConvertible {
        let path: String
        var description: String { "test vector file missing: \(path) (CI is set, so vectors are required)" }
    }

    static func json(_ file: String) throws -> Any {
        let url = directory.appendingPathComponent(file)
        guard FileManager.default.fileExists(atPath: url.path) else { throw Missing(path: url.path) }
        return try JSONSerialization.jsonObject(with: Data(contentsOf: url))
    }

    static func text(_ file: String) throws -> String {
        let url = directory.appendingPathComponent(file)
        guard FileManager.default.fileExists(atPath: url.path) else { throw Missing(path: url.path) }
        return try String(contentsOf: url, encoding: .utf8)
    }

    // MARK: - Trust anchors (webauthn_trust_anchors.json)

    struct Anchor: Sendable, CustomTestStringConvertible {
        let name: String
        let pem: String
        let subject: String
        let notBefore: Date
        let notAfter: Date
        let fingerprint: String
        var testDescription: String { name }
    }

    static func loadAnchors() throws -> [Anchor] {
        guard let list = try json("webauthn_trust_anchors.json") as? [[String: Any]] else { throw Missing(path: "anchors: not a list") }
        return try list.map { entry in
            let info = entry["info"] as? [String: Any] ?? [:]
            guard let name = entry["name"] as? String, let pem = entry["pem"] as? String,
                let subject = info["subject"] as? String, let fingerprint = info["sha256_fingerprint"] as? String,
                let nb = (info["notBefore"] as? String).flatMap(date), let na = (info["notAfter"] as? String).flatMap(date)
            else { throw Missing(path: "anchors: malformed entry") }
            return Anchor(name: name, pem: pem, subject: subject, notBefore: nb, notAfter: na, fingerprint: fingerprint)
        }
    }

    static let anchors: [Anchor] = (try? loadAnchors()) ?? []

    static func anchor(_ prefix: String) throws -> X509Certificate {
        let found = try #require(anchors.first { $0.name.hasPrefix(prefix) }, "no anchor named \(prefix)")
        return try X509Certificate(pem: found.pem)
    }

    // MARK: - Registration vectors (webauthn_registration.json)

    struct Registration: Sendable, CustomTestStringConvertible {
        let index: Int
        let name: String
        let format: String
        let valid: Bool
        let verificationTime: Date?
        let aaguid: [UInt8]?
        let clientDataJSON: [UInt8]
        let authData: [UInt8]
        /// attStmt.x5c, or for android-safetynet the x5c of the JWS header.
        let x5c: [[UInt8]]
        var testDescription: String { "#\(index) \(name)" }
    }

    static func loadRegistrations() throws -> [Registration] {
        guard let list = try json("webauthn_registration.json") as? [[String: Any]] else { throw Missing(path: "registrations: not a list") }
        var out: [Registration] = []
        for (index, entry) in list.enumerated() {
            let response = (entry["response"] as? [String: Any])?["response"] as? [String: Any] ?? [:]
            guard let aoText = response["attestationObject"] as? String, let ao = base64(aoText), !ao.isEmpty,
                let cdj = (response["clientDataJSON"] as? String).flatMap(base64)
            else { continue }
            let object = try TestCBOR.decode(ao)
            let statement = object["attStmt"]
            let format = object["fmt"]?.text ?? ""
            var x5c = statement?["x5c"]?.array?.compactMap(\.bytes) ?? []
            if format == "android-safetynet", let jws = statement?["response"]?.bytes {
                x5c = try safetyNetX5C(jws)
            }
            let expected = entry["expected"] as? [String: Any] ?? [:]
            let decoded = expected["decoded"] as? [String: Any] ?? [:]
            out.append(
                Registration(
                    index: index, name: entry["name"] as? String ?? "?", format: format,
                    valid: expected["valid"] as? Bool ?? false,
                    verificationTime: (expected["verification_time_utc"] as? String).flatMap(date),
                    aaguid: (decoded["aaguid"] as? String).flatMap { Hex.decode($0.replacingOccurrences(of: "-", with: "")) },
                    clientDataJSON: cdj, authData: object["authData"]?.bytes ?? [], x5c: x5c))
        }
        return out
    }

    static let registrations: [Registration] = (try? loadRegistrations()) ?? []
    static let registrationsWithX5C = registrations.filter { !$0.x5c.isEmpty }

    static func registration(named suffix: String) throws -> Registration {
        try #require(registrations.first { $0.name.hasSuffix(suffix) }, "no registration vector named …\(suffix)")
    }

    /// The x5c of a SafetyNet JWS's protected header (standard base64 DER).
    static func safetyNetX5C(_ jws: [UInt8]) throws -> [[UInt8]] {
        let header = String(decoding: jws, as: UTF8.self).split(separator: ".").first.map(String.init) ?? ""
        guard let headerJSON = base64(header),
            let object = try JSONSerialization.jsonObject(with: Data(headerJSON)) as? [String: Any],
            let x5c = object["x5c"] as? [String]
        else { return [] }
        return x5c.compactMap(base64)
    }

    // MARK: - MDS (mds.json and the BLOBs)

    struct MDSStatement: Sendable, CustomTestStringConvertible {
        let name: String
        let x5c: [[UInt8]]
        let roots: [[UInt8]]
        let verificationTime: Date?
        var testDescription: String { name }
    }

    static func loadMDSStatements() throws -> [MDSStatement] {
        guard let mds = try json("mds.json") as? [String: Any], let list = mds["statements_with_attestation"] as? [[String: Any]] else {
            throw Missing(path: "mds.json: malformed")
        }
        return list.map { entry in
            let statement = entry["metadata_statement"] as? [String: Any] ?? [:]
            let expected = entry["expected"] as? [String: Any] ?? [:]
            return MDSStatement(
                name: entry["name"] as? String ?? "?",
                x5c: (entry["x5c_b64"] as? [String] ?? []).compactMap(base64),
                roots: (statement["attestationRootCertificates"] as? [String] ?? []).compactMap(base64),
                verificationTime: (expected["verification_time_utc"] as? String).flatMap(date))
        }
    }

    static let mdsStatements: [MDSStatement] = (try? loadMDSStatements()) ?? []

    /// The root named `prefix` in mds.json's root_certificates.
    static func mdsRoot(_ prefix: String) throws -> X509Certificate {
        let mds = try #require(try json("mds.json") as? [String: Any])
        let roots = try #require(mds["root_certificates"] as? [[String: Any]])
        let pem = try #require(roots.first { ($0["name"] as? String)?.hasPrefix(prefix) == true }?["pem"] as? String)
        return try X509Certificate(pem: pem)
    }

    /// The x5c of a BLOB's JWS header.
    static func blobX5C(_ file: String) throws -> [X509Certificate] {
        // Only the first segment is needed; the BLOB itself is megabytes of payload.
        let jwt = Array(try text(file).utf8)
        let end = try #require(jwt.firstIndex(of: UInt8(ascii: ".")))
        let header = try #require(base64(String(decoding: jwt[..<end], as: UTF8.self)))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(header)) as? [String: Any])
        let x5c = try #require(object["x5c"] as? [String])
        return try x5c.map { try X509Certificate(derEncoded: try #require(base64($0))) }
    }

    // MARK: - Encodings

    /// base64url or standard base64, padded or not (some vectors keep standard base64).
    static func base64(_ s: String) -> [UInt8]? {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        t = t.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        while t.utf8.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t).map(Array.init)
    }

    /// ISO 8601 with or without fractional seconds, "Z" or "+00:00".
    static func date(_ s: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let d = plain.date(from: s) { return d }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: s)
    }

    /// A UTC instant, for tests: `utc(2021, 9, 1)`.
    static func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour))!
    }
}

// MARK: - A test-only CBOR walker

/// Just enough CBOR (RFC 8949) to pull x5c, authData and fmt out of attestation objects.
/// Definite lengths only; the production decoder lives in the FIDO module.
indirect enum TestCBOR {
    case unsigned(UInt64), negative(UInt64), bytes([UInt8]), text(String), array([TestCBOR])
    case map([(key: TestCBOR, value: TestCBOR)]), tagged(UInt64, TestCBOR), simple(UInt64)

    struct Malformed: Error {}

    subscript(key: String) -> TestCBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { if case .text(key) = $0.key { true } else { false } }?.value
    }

    var bytes: [UInt8]? { if case .bytes(let b) = self { b } else { nil } }
    var text: String? { if case .text(let t) = self { t } else { nil } }
    var array: [TestCBOR]? { if case .array(let a) = self { a } else { nil } }

    static func decode(_ data: [UInt8]) throws -> TestCBOR {
        var i = 0
        let value = try item(data, &i, depth: 0)
        return value
    }

    private static func item(_ d: [UInt8], _ i: inout Int, depth: Int) throws -> TestCBOR {
        guard depth < 32, i < d.count else { throw Malformed() }
        let initial = d[i]
        i += 1
        let major = initial >> 5
        let info = initial & 0x1F
        var argument: UInt64
        switch info {
        case 0..<24: argument = UInt64(info)
        case 24...27:
            let n = 1 << Int(info - 24)
            guard i + n <= d.count else { throw Malformed() }
            argument = d[i..<(i + n)].reduce(0) { $0 << 8 | UInt64($1) }
            i += n
        default: throw Malformed()
        }
        func take(_ n: UInt64) throws -> [UInt8] {
            guard n <= UInt64(d.count - i) else { throw Malformed() }
            defer { i += Int(n) }
            return Array(d[i..<(i + Int(n))])
        }
        switch major {
        case 0: return .unsigned(argument)
        case 1: return .negative(argument)
        case 2: return .bytes(try take(argument))
        case 3: return .text(String(decoding: try take(argument), as: UTF8.self))
        case 4:
            guard argument <= UInt64(d.count) else { throw Malformed() }
            return .array(try (0..<argument).map { _ in try item(d, &i, depth: depth + 1) })
        case 5:
            guard argument <= UInt64(d.count) else { throw Malformed() }
            return .map(try (0..<argument).map { _ in (try item(d, &i, depth: depth + 1), try item(d, &i, depth: depth + 1)) })
        case 6: return .tagged(argument, try item(d, &i, depth: depth + 1))
        default: return .simple(argument)
        }
    }
}

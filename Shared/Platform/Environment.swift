import FoundationEssentials

/// Reads configuration from environment variables, with defaults, and reports bad values
/// clearly instead of silently falling back.
public struct Environment: Sendable {
    public let values: [String: String]
    /// `<NAME>_FILE` variables that could not be used (unreadable, too large, or set together
    /// with `<NAME>`), by `<NAME>`: start-up refuses them (``checkFiles()``).
    public let fileProblems: [String: String]

    /// Secrets that may come from a file instead (a mounted Kubernetes Secret or compose
    /// secret): `<NAME>_FILE` names the file, whose content, without surrounding white space,
    /// is the value.
    public static let fileVariables = [
        "SIGNET_ADMIN_TOKEN", "SIGNET_INTERNAL_TOKEN", "SIGNET_SUBJECT_KEY", "SIGNET_CEREMONY_KEY", "SIGNET_CEREMONY_KEY_ACCEPTED", "SIGNET_METHOD_SECRET_KEY", "SIGNET_DELIVERY_KEY",
        "SIGNET_OTP_HASH_KEY", "SIGNET_TCTOKEN_KEY_SEAL", "SIGNET_PII_KEK", "SIGNET_DATABASE_URL", "SIGNET_KAFKA_PROPERTIES",
        "SIGNET_SMTP_PASSWORD", "SIGNET_SMS_TOKEN", "SIGNET_OOB_KEY_SEAL", "SIGNET_CONSOLE_RP_API_KEY", "SIGNET_CONSOLE_ENROLMENT_CODE",
        // The earlier keys still accepted while a key is being changed (`ServiceKeys.sealingKeys`).
        "SIGNET_METHOD_SECRET_KEY_ACCEPTED", "SIGNET_DELIVERY_KEY_ACCEPTED", "SIGNET_OTP_HASH_KEY_ACCEPTED", "SIGNET_TCTOKEN_KEY_SEAL_ACCEPTED",
        "SIGNET_PII_KEK_ACCEPTED", "SIGNET_OOB_KEY_SEAL_ACCEPTED",
    ]
    /// The largest secret file read.
    public static let maximumFileBytes = 64 * 1024

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        var resolved = values
        var problems: [String: String] = [:]
        for name in Self.fileVariables {
            guard let path = values["\(name)_FILE"], !path.isEmpty else { continue }
            if let direct = values[name], !direct.isEmpty {
                problems[name] = "set either \(name) or \(name)_FILE, not both"
                continue
            }
            guard let data = FileManager.default.contents(atPath: path), data.count <= Self.maximumFileBytes else {
                problems[name] = "\(name)_FILE names a file that cannot be read (or is over \(Self.maximumFileBytes) bytes)"
                continue
            }
            let text = String(decoding: data, as: UTF8.self).trimmingWhitespaceAndNewlines()
            if text.isEmpty {
                problems[name] = "\(name)_FILE names an empty file"
            } else {
                resolved[name] = text
            }
        }
        self.values = resolved
        self.fileProblems = problems
    }

    /// Throws when a `<NAME>_FILE` variable could not be used (naming every such variable).
    public func checkFiles() throws {
        guard !fileProblems.isEmpty else { return }
        let names = fileProblems.keys.sorted()
        throw ConfigurationError(variable: names.joined(separator: ", "), reason: names.map { fileProblems[$0]! }.joined(separator: "; "))
    }

    /// A configuration error names the variable and what was wrong, never its value
    /// (it may be a secret).
    public struct ConfigurationError: Error, CustomStringConvertible {
        public let variable: String
        public let reason: String
        public init(variable: String, reason: String) {
            self.variable = variable
            self.reason = reason
        }
        public var description: String { "invalid configuration \(variable): \(reason)" }
    }

    public func string(_ name: String, default value: String) -> String {
        if let v = values[name], !v.isEmpty { return v }
        return value
    }

    public func optionalString(_ name: String) -> String? {
        if let v = values[name], !v.isEmpty { return v }
        return nil
    }

    public func int(_ name: String, default value: Int, range: ClosedRange<Int> = 0...Int.max) throws -> Int {
        guard let raw = optionalString(name) else { return value }
        guard let v = Int(raw) else { throw ConfigurationError(variable: name, reason: "not an integer") }
        guard range.contains(v) else {
            throw ConfigurationError(variable: name, reason: "must be within \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    public func bool(_ name: String, default value: Bool) throws -> Bool {
        guard let raw = optionalString(name)?.lowercased() else { return value }
        switch raw {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError(variable: name, reason: "not a boolean")
        }
    }
}

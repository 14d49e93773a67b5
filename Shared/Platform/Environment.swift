import Foundation

/// Reads configuration from environment variables, with defaults, and reports bad values
/// clearly instead of silently falling back.
public struct Environment: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
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

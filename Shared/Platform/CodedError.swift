/// The shape of Signet's errors: a stable `code` (a struct over a private enum, so that codes
/// can be added without breaking callers), a `detail` for debugging, and where the error was
/// raised. The defaults give every conforming type the same behaviour:
///
/// - `description` names the type and the code only: safe for logs, metrics and problem
///   bodies (never a secret, a presented value or SQL);
/// - `debugDescription` adds the detail and the place, for debugging;
/// - two errors are equal when their codes and details are (where they were raised does not
///   count).
public protocol CodedError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    associatedtype Code: Hashable, Sendable, CustomStringConvertible
    /// The stable code.
    var code: Code { get }
    /// What exactly was wrong, for debugging: names, limits and positions, never secrets.
    var detail: String { get }
    /// The file where the error was raised (`#fileID`).
    var file: String { get }
    /// The line where the error was raised.
    var line: Int { get }
}

extension CodedError {
    public var description: String { "\(Self.self)(\(code))" }
    public var debugDescription: String { "\(Self.self)(\(code)): \(detail) [\(file):\(line)]" }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.code == rhs.code && lhs.detail == rhs.detail
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(detail)
    }
}

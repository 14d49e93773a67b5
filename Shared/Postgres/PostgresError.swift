/// A PostgreSQL failure. `description` names the kind and SQLSTATE only; the server's message
/// (which may quote values) is in `debugDescription`, for debugging, not for logs.
public struct PostgresError: Error, CustomStringConvertible, CustomDebugStringConvertible, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: String, Sendable { case connectFailed, connectionLost, server, protocolViolation, poolClosed }
        let base: Base
        public static let connectFailed = Code(base: .connectFailed)
        public static let connectionLost = Code(base: .connectionLost)
        public static let server = Code(base: .server)
        public static let protocolViolation = Code(base: .protocolViolation)
        public static let poolClosed = Code(base: .poolClosed)
        public var description: String { base.rawValue }
    }

    public let code: Code
    /// The SQLSTATE, for server errors (`23505` unique violation, `40001` serialization…).
    public let sqlState: String?
    let message: String
    public let file: String
    public let line: Int

    init(_ code: Code, sqlState: String? = nil, message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
        self.file = file
        self.line = line
    }

    public var description: String {
        "PostgresError(\(code)\(sqlState.map { ", sqlstate \($0)" } ?? ""))"
    }

    public var debugDescription: String { "\(description): \(message) [\(file):\(line)]" }

    /// A unique-constraint violation.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// Worth retrying on a fresh connection: the connection broke.
    public var isConnectionError: Bool { code == .connectionLost || code == .connectFailed }
}

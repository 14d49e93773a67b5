import Platform

/// A PostgreSQL failure. `description` names the kind and SQLSTATE only; the server's message
/// (which may quote values) is in `debugDescription`, for debugging, not for logs.
public struct PostgresError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: String, Sendable { case connectFailed, connectionLost, commitOutcomeUnknown, server, protocolViolation, poolClosed, textContainsNUL, queryCancelled }
        let base: Base
        public static let connectFailed = Code(base: .connectFailed)
        /// The session ended (server restart, terminated backend, network) before the
        /// statement's outcome was known, or while a transaction was open (it rolled back).
        public static let connectionLost = Code(base: .connectionLost)
        /// The connection was lost while COMMIT was on its way: the transaction may or may
        /// not have committed. Never retried by the pool.
        public static let commitOutcomeUnknown = Code(base: .commitOutcomeUnknown)
        public static let server = Code(base: .server)
        public static let protocolViolation = Code(base: .protocolViolation)
        public static let poolClosed = Code(base: .poolClosed)
        /// A bound text value contains U+0000, which PostgreSQL text cannot hold (and a C
        /// string would silently cut short): refused before anything is sent.
        public static let textContainsNUL = Code(base: .textContainsNUL)
        /// The task awaiting the statement on an event loop was cancelled (its request's
        /// deadline passed): the connection was closed mid-statement, so the server rolled back
        /// any open transaction. Never retried by the pool (the caller is gone).
        public static let queryCancelled = Code(base: .queryCancelled)
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

    /// The server's or libpq's message (for debugging; may name tables and constraints).
    public var detail: String { message }
    public var debugDescription: String { "\(description): \(message) [\(file):\(line)]" }

    /// A unique-constraint violation.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// The database could not be reached or the connection broke (the outcome of a COMMIT
    /// included): the database is unavailable for now, not the request at fault.
    public var isConnectionError: Bool { code == .connectionLost || code == .connectFailed || code == .commitOutcomeUnknown }

    /// Nothing can have taken effect: the connection could not be made, or a transaction
    /// lost its connection before COMMIT was sent (see ``PostgresPool/withTransaction(retryingOnConnectionLoss:isolation:_:)``).
    var isRetryableTransactionFailure: Bool { code == .connectionLost || code == .connectFailed }
}

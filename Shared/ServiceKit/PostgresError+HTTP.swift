import HTTPServer
import Postgres

extension ProblemCode {
    /// The database cannot be reached right now (a restart, a lost connection): retry after
    /// `Retry-After`. Never a 500: the request was not at fault and may well succeed again.
    public static let databaseUnavailable = ProblemCode("database_unavailable", status: 503, title: "Database unavailable")
}

/// A lost or refused database connection answers 503 `database_unavailable` with
/// `Retry-After` (after the pool's one transparent retry where that was safe, see
/// ``PostgresPool``); text with a NUL character is the client's 400 `invalid_field`; every
/// other database error stays a logged 500.
extension PostgresError: HTTPErrorConvertible {
    /// Seconds a client should wait: a restart of PostgreSQL takes about a second.
    static let retryAfterSeconds = 1

    public var httpError: HTTPError? {
        let retry = [(name: "Retry-After", value: String(Self.retryAfterSeconds))]
        if code == .commitOutcomeUnknown {
            return HTTPError(
                .databaseUnavailable, detail: "The database connection was lost while the change was being committed; it may or may not have been applied.",
                headers: retry)
        }
        if code == .textContainsNUL {
            // Client input that no text column can hold (JSON allows \u0000 in strings).
            return HTTPError(.invalidField, detail: "A text value contains the NUL character (U+0000), which cannot be stored.")
        }
        guard isConnectionError || code == .poolClosed else { return nil }
        return HTTPError(.databaseUnavailable, detail: "The database is unavailable; retry.", headers: retry)
    }
}

import CLibPQ
#if canImport(Glibc)
import Glibc
#endif

// MARK: - The rules of a statement with parameters, shared by exec and execOnLoop

/// How one statement with bound parameters runs on a connection: decided once by
/// ``PQConnection/plan(_:)``, then carried out by ``PQConnection/exec(_:)`` (blocking calls on
/// the connection's queue) or ``PQConnection/execOnLoop(_:loop:)`` (libpq's non-blocking API
/// on an event loop). Only the sending and the waiting differ between the two.
struct PQStatementPlan {
    let sql: String
    let binds: [String?]
    /// The prepared statement's name on this session; nil runs the statement unnamed (the
    /// cache of prepared statements is full).
    let name: String?
    /// `name` is new: the statement must be prepared under it before it runs.
    let mustPrepare: Bool

    var parameterCount: Int32 { Int32(binds.count) }
}

extension PQConnection {
    /// Checks `query`'s parameters and names its prepared statement.
    ///
    /// A NUL byte would end the C string early: the server would receive (and store, or match
    /// on) a shorter value than the caller gave. Refused instead, nothing sent. A statement
    /// seen before on this session runs under its name; a new one gets the next name (taken
    /// even if its preparation fails), unless ``maxPreparedStatements`` are already prepared.
    ///
    /// - Throws: ``PostgresError/Code-swift.struct/textContainsNUL``.
    func plan(_ query: PostgresQuery) throws -> PQStatementPlan {
        let binds = query.binds
        if binds.contains(where: { $0.map(Self.containsNUL) == true }) {
            throw PostgresError(.textContainsNUL, message: "a bound text value contains U+0000")
        }
        if let name = prepared[query.sql] {
            return PQStatementPlan(sql: query.sql, binds: binds, name: name, mustPrepare: false)
        }
        guard prepared.count < Self.maxPreparedStatements else {
            return PQStatementPlan(sql: query.sql, binds: binds, name: nil, mustPrepare: false)
        }
        let name = "s\(nextStatement)"
        nextStatement += 1
        return PQStatementPlan(sql: query.sql, binds: binds, name: name, mustPrepare: true)
    }

    /// Records that `plan`'s statement is now prepared on this session.
    func didPrepare(_ plan: PQStatementPlan) {
        prepared[plan.sql] = plan.name
    }

    /// After `error`: when the server refused `plan`'s prepared statement with 0A000 ("cached
    /// plan must not change result type": the table changed under it, a migration by another
    /// replica), forgets it, so that the next use prepares it afresh, and returns the
    /// statement that frees it on the server. Nil for any other error.
    func forgetIfStale(_ plan: PQStatementPlan, after error: PostgresError) -> String? {
        guard error.sqlState == "0A000", let name = plan.name else { return nil }
        prepared[plan.sql] = nil
        return "DEALLOCATE \(name)"
    }

    /// Whether `text` holds a NUL byte (a scan of its UTF-8 in place when it is contiguous, as
    /// every native string is).
    static func containsNUL(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in bytes.baseAddress.map { memchr($0, 0, bytes.count) != nil } ?? false }
            ?? text.utf8.contains(0)
    }

    /// Runs `body` with `binds` as the C strings libpq takes (NULL for SQL NULL), alive for the
    /// duration of the call only (libpq copies them into its output buffer). The strings are
    /// laid end to end, each NUL-terminated, in one buffer (on the stack when small), not one
    /// `strdup` each.
    static func withParameters<R>(_ binds: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        let size = binds.reduce(0) { $0 + ($1.map { $0.utf8.count + 1 } ?? 0) }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(size, 1)) { text in
            withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: max(binds.count, 1)) { pointers in
                var offset = 0
                for (i, bind) in binds.enumerated() {
                    guard let bind else {
                        pointers[i] = nil
                        continue
                    }
                    let start = text.baseAddress! + offset
                    let count = bind.utf8.count
                    text.withMemoryRebound(to: UInt8.self) { bytes in
                        _ = UnsafeMutableBufferPointer(rebasing: bytes[offset..<offset + count]).initialize(from: bind.utf8)
                    }
                    text[offset + count] = 0
                    pointers[i] = UnsafePointer(start)
                    offset += count + 1
                }
                return body(UnsafePointer(pointers.baseAddress))
            }
        }
    }
}

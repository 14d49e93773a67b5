import Foundation
import Testing

@testable import Postgres

/// The C strings handed to libpq for a statement's parameters, and the NUL check before them.
@Suite struct PostgresParameterTests {
    /// Each parameter arrives as its own NUL-terminated copy, NULL where SQL NULL was bound,
    /// whatever the mix of lengths (small ones on the stack, one of 64 KiB beyond it).
    @Test func parametersArriveAsTheGivenCStrings() {
        let long = String(repeating: "ab€", count: 20_000)
        let binds: [String?] = ["alice", nil, "", "Zoë 🙂", long, nil, "x"]
        let seen: [String?] = PQConnection.withParameters(binds) { params in
            (0..<binds.count).map { i in params?[i].map { String(cString: $0) } }
        }
        #expect(seen == binds)
        #expect(PQConnection.withParameters([]) { _ in 7 } == 7)
        let onlyNulls: [String?] = PQConnection.withParameters([nil, nil]) { params in (0..<2).map { params?[$0].map { String(cString: $0) } } }
        #expect(onlyNulls == [nil, nil])
    }

    @Test func aNULIsFoundWhereverItIs() {
        #expect(!PQConnection.containsNUL(""))
        #expect(!PQConnection.containsNUL("alice"))
        #expect(PQConnection.containsNUL("\u{0}"))
        #expect(PQConnection.containsNUL("alice\u{0}mallory"))
        #expect(PQConnection.containsNUL(String(repeating: "é", count: 5_000) + "\u{0}"))
        // A bridged or otherwise non-contiguous string takes the element-wise scan.
        let bridged = NSString(string: "a\u{0}b") as String
        #expect(PQConnection.containsNUL(bridged))
        #expect(!PQConnection.containsNUL(NSString(string: "abc") as String))
    }
}

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

/// The text forms bound for `bytea` and for a statement's parameters.
@Suite struct PostgresParameterTextTests {
    /// `bytea`'s hex form: `\x` then two lower-case digits per byte, for every byte value.
    @Test func bytesAreBoundAsHex() {
        let all = (0...255).map(UInt8.init)
        let expected = "\\x" + all.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        #expect(PostgresBytes(all).postgresText == expected)
        #expect(PostgresBytes([]).postgresText == "\\x")
        #expect(PostgresBytes([0xDE, 0xAD, 0xBE, 0xEF]).postgresText == "\\xdeadbeef")
    }

    /// Interpolated values become `$n` in order, whatever their number.
    @Test func interpolationsBecomeNumberedParameters() {
        let q: PostgresQuery = "SELECT \(1), \(PostgresBytes([1])), \(Optional<String>.none), \("x")"
        #expect(q.sql == "SELECT $1, $2, $3, $4")
        #expect(q.binds == ["1", "\\x01", nil, "x"])
    }
}

/// Reading a row's columns by name, without a database.
@Suite struct PostgresRowReadingTests {
    @Test func columnsAreFoundByNameAndTheLastOfTwoWins() {
        let row = PostgresRow(columns: ["id", "name", "note", "id"], values: ["1", "alice", nil, "2"])
        #expect(row["name"] == "alice")
        #expect(row["note"] == nil)
        #expect(row["missing"] == nil)
        #expect(row.int("id") == 2)
        #expect(PostgresRow(columns: [], values: [])["id"] == nil)
    }

    @Test func byteaHexIsDecodedInPlace() {
        func bytes(_ text: String?) -> [UInt8]? { PostgresRow(columns: ["b"], values: [text]).bytes("b") }
        #expect(bytes("\\xdeadBEEF00") == [0xDE, 0xAD, 0xBE, 0xEF, 0x00])
        #expect(bytes("\\x") == [])
        #expect(bytes("\\xabc") == nil)  // odd
        #expect(bytes("\\xzz") == nil)
        #expect(bytes("deadbeef") == nil)  // no prefix
        #expect(bytes("\\") == nil)
        #expect(bytes(nil) == nil)
        let all = (0...255).map(UInt8.init)
        #expect(bytes(PostgresBytes(all).postgresText) == all)
    }
}

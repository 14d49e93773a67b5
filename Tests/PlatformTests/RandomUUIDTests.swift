import Foundation
import Platform
import Testing

@Suite struct RandomUUIDTests {
    /// `string()` (the system generator: event ids) and `keyed()` (the keyed id source:
    /// request ids) give the same shape.
    static let generators: [(name: String, make: @Sendable () -> String)] = [
        ("string", { RandomUUID.string() }), ("keyed", { RandomUUID.keyed() }),
    ]

    @Test(arguments: [0, 1]) func isALowerCaseVersion4UUID(_ which: Int) throws {
        let make = Self.generators[which].make
        let pattern = try NSRegularExpression(pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        for _ in 0..<1000 {
            let s = make()
            #expect(pattern.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil, "\(Self.generators[which].name): \(s)")
            #expect(UUID(uuidString: s)?.uuidString.lowercased() == s)
        }
    }

    @Test(arguments: [0, 1]) func isRandomInEveryFreeDigit(_ which: Int) {
        let make = Self.generators[which].make
        let ids = (0..<4096).map { _ in Array(make().utf8) }
        #expect(Set(ids).count == ids.count)
        // Every position but the dashes and the version digit takes many values.
        for position in 0..<36 where ![8, 13, 14, 18, 23].contains(position) {
            let values = Set(ids.map { $0[position] })
            #expect(values.count >= (position == 19 ? 4 : 16), "\(Self.generators[which].name) position \(position): \(values.count) values")
        }
    }

    /// Keyed ids from many threads at once are all distinct (one atomic counter feeds them).
    @Test func keyedIDsAreDistinctAcrossThreads() async {
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 { group.addTask { (0..<2000).map { _ in RandomUUID.keyed() } } }
            var all: [String] = []
            for await part in group { all += part }
            return all
        }
        #expect(ids.count == 16000)
        #expect(Set(ids).count == ids.count)
    }
}

import Foundation
import Platform
import Testing

@Suite struct RandomUUIDTests {
    @Test func isALowerCaseVersion4UUID() throws {
        let pattern = try NSRegularExpression(pattern: "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        for _ in 0..<1000 {
            let s = RandomUUID.string()
            #expect(pattern.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil, "\(s)")
            #expect(UUID(uuidString: s)?.uuidString.lowercased() == s)
        }
    }

    @Test func isRandomInEveryFreeDigit() {
        let ids = (0..<4096).map { _ in Array(RandomUUID.string().utf8) }
        #expect(Set(ids).count == ids.count)
        // Every position but the dashes and the version digit takes many values.
        for position in 0..<36 where ![8, 13, 14, 18, 23].contains(position) {
            let values = Set(ids.map { $0[position] })
            #expect(values.count >= (position == 19 ? 4 : 16), "position \(position): \(values.count) values")
        }
    }
}

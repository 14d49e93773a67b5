import Platform
import Testing

@Suite struct BackoffTests {
    @Test func delaysDoubleUpToTheCapAndResetAfterASuccess() {
        var b = Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        #expect((0..<6).map { _ in b.next() } == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        b.reset()
        #expect(b.next() == .milliseconds(100))
        // Huge failure counts stop at the cap without overflowing.
        #expect(b.nominalDelay(afterFailures: .max) == .seconds(1))
    }

    @Test func jitterOnlyShortensTheNominalDelay() {
        let b = Backoff(initial: .seconds(1), factor: 3, maximum: .seconds(30), jitter: 0.5)
        var generator = SystemRandomNumberGenerator()
        for failures in 1...6 {
            let nominal = b.nominalDelay(afterFailures: failures)
            for _ in 0..<50 {
                let d = b.delay(afterFailures: failures, using: &generator)
                #expect(d <= nominal && d >= nominal / 2)
            }
        }
    }

    @Test func outOfRangeValuesAreBroughtIntoRange() {
        let b = Backoff(initial: .seconds(-1), factor: 0.5, maximum: .seconds(-5), jitter: 7)
        #expect(b.initial == .zero && b.factor == 1 && b.maximum == .zero && b.jitter == 1)
    }
}

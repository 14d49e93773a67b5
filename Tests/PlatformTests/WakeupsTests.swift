import Platform
import Testing

@Suite struct WakeupsTests {
    @Test func signalBeforeWaitIsNotLost() async {
        let w = Wakeups()
        var waiter = w.makeWaiter()
        w.signal()
        #expect(await waiter.wait())  // returns at once: the signal was pending
    }

    @Test func aBurstOfSignalsWakesOnce() async {
        let w = Wakeups()
        var waiter = w.makeWaiter()
        for _ in 0..<1000 { w.signal() }
        #expect(await waiter.wait(timeout: .seconds(30)))
        // Nothing pending any more: the next wait ends by its timeout, which it reports as a
        // wake-up like any other (the loop then looks for work, finds none and waits again).
        let start = ContinuousClock.now
        #expect(await waiter.wait(timeout: .milliseconds(50)))
        #expect(ContinuousClock.now - start >= .milliseconds(50))
    }

    @Test func signalFromAnotherTaskEndsAWait() async {
        let w = Wakeups()
        let waiting = Task {
            var waiter = w.makeWaiter()
            return await waiter.wait(timeout: .seconds(60))
        }
        try? await Task.sleep(for: .milliseconds(20))
        w.signal()
        #expect(await waiting.value)
    }

    @Test func finishEndsEveryLaterWait() async {
        let w = Wakeups()
        var waiter = w.makeWaiter()
        w.finish()
        #expect(await waiter.wait(timeout: .seconds(60)) == false)
        #expect(await waiter.wait() == false)
    }

    @Test func cancellationEndsAWait() async {
        let w = Wakeups()
        let waiting = Task {
            var waiter = w.makeWaiter()
            return await waiter.wait()
        }
        try? await Task.sleep(for: .milliseconds(20))
        waiting.cancel()
        #expect(await waiting.value == false)
    }

    @Test func periodicTaskStopsWhileWaiting() async {
        let task = PeriodicTask(interval: .seconds(3600))
        let loop = Task { await task.run(logger: Logger(label: "test", level: .error), failure: "pass failed") {} }
        try? await Task.sleep(for: .milliseconds(20))
        await task.stopRunning()
        await loop.value  // ends without waiting out the hour
    }
}

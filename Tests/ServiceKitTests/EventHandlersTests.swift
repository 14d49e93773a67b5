import Schema
import ServiceKit
import Testing

@Suite struct EventHandlersTests {
    /// A service whose handlers include a slow one (a delivery) is consumed a record per poll,
    /// whatever it is merged with; otherwise in batches.
    @Test func mergedHandlersKeepTheSmallestBatch() {
        var base = EventHandlers()
        #expect(base.maxBatch == 256)
        var slow = EventHandlers()
        slow.maxBatch = 1
        base.merge(slow)
        #expect(base.maxBatch == 1)
        var fast = EventHandlers()
        fast.merge(EventHandlers())
        #expect(fast.maxBatch == 256)
    }
}

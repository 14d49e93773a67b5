import Testing
@testable import AuthenticationService

/// A sent code's pending state: a wrong guess keeps it with one guess fewer, until the last.
@Suite struct OneTimeCodePendingTests {
    static let sent = OneTimeCodeMethod.Pending(
        expiry: 1_764_000_300, hash: Array(repeating: 7, count: 32), wrongGuesses: 0, methodID: "m_0f1e2d3c4b5a69788796a5b4c3d2e1f0")

    @Test func theStateReadsBackAsWritten() throws {
        #expect(OneTimeCodeMethod.Pending(Self.sent.bytes) == Self.sent)
        // A flow started before guesses were counted (tag 2, no count) reads as no guess yet.
        var legacy = Self.sent.bytes
        legacy[0] = 2
        legacy.remove(at: 41)
        #expect(OneTimeCodeMethod.Pending(legacy) == Self.sent)
        #expect(OneTimeCodeMethod.Pending([6, 1, 2]) == nil)
        #expect(OneTimeCodeMethod.Pending([3] + Array("m_1".utf8)) == nil)
    }

    @Test func aCodeAllowsExactlyMaximumAttemptsGuesses() throws {
        var pending = Self.sent.bytes
        var kept = 0
        while let next = OneTimeCodeMethod.pendingAfterMismatch(pending) {
            kept += 1
            pending = next
            let state = try #require(OneTimeCodeMethod.Pending(pending))
            #expect(state.wrongGuesses == UInt8(kept) && state.hash == Self.sent.hash && state.methodID == Self.sent.methodID)
        }
        // Four wrong guesses keep the code; the fifth guess is the last.
        #expect(kept == OneTimeCodeMethod.maximumAttempts - 1)
    }
}

import Foundation
import Platform
import Testing

/// The test helper itself: a connection that fails closes its descriptor once. All suites run
/// in one process, so a second close can end whatever another test opened meanwhile under the
/// same number (a database connection, an HTTP client's socket).
@Suite struct RawSocketTests {
    @Test func aFailedConnectionClosesItsDescriptorOnce() async throws {
        // Port 9 on loopback: nothing listens (the services' tests use it as a refused address).
        #expect(throws: (any Error).self) { _ = try RawSocket(port: 9, timeout: 1) }
        // While another thread makes failed connections, descriptors opened here must stay
        // open until closed here. Before the fix, about 1 in 200 of them was closed by the
        // other thread's second close (1,080 of 200,000 in a run of the same loop).
        let stop = AtomicFlag(false)
        let failing = Thread {
            while !stop.isSet { _ = try? RawSocket(port: 9, timeout: 1) }
        }
        failing.start()
        var closedUnderUs = 0
        for _ in 0..<50_000 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { continue }
            if fcntl(fd, F_GETFD) == -1 { closedUnderUs += 1 } else { close(fd) }
        }
        stop.set(true)
        #expect(closedUnderUs == 0)
    }
}

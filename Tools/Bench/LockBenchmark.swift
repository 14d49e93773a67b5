import Foundation
import Platform
import Synchronization

// `signet-bench locks [seconds]`: what a per-request critical section costs behind
// `PlainLock`, behind `Synchronization.Mutex`, and as a call into an actor, from tasks on a
// `BlockingExecutor` of 8 threads (the HTTP handlers' executor, `SIGNET_HANDLER_THREADS`), with
// one task (uncontended) and with 8 tasks (as many as handler threads, on this machine's cores).
// The section is the sign-in rate limiter's: a fixed-window counter in a dictionary keyed by a
// short string. Printed: nanoseconds of wall time and of process CPU per operation.

/// The rate limiter's critical section.
struct LockBenchWindows {
    var counts: [String: Int] = [:]
    mutating func admit(_ key: String) -> Bool {
        let n = counts[key, default: 0] + 1
        counts[key] = n
        return n <= 1_000_000_000
    }
}

actor LockBenchActor {
    var windows = LockBenchWindows()
    func admit(_ key: String) -> Bool { windows.admit(key) }
}

final class LockBenchMutex: Sendable {
    let windows = Mutex(LockBenchWindows())
}

func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

func lockBenchmark(seconds: Double) async {
    let executor = BlockingExecutor(threads: 8, name: "bench-handler")
    let keys = (0..<64).map { "ip/demo/10.0.0.\($0)" }
    let plain = PlainLock(LockBenchWindows())
    let mutex = LockBenchMutex()
    let actor = LockBenchActor()

    /// Runs `tasks` tasks on the executor, each calling `op` until the time is up; returns
    /// (wall ns per op, CPU ns per op).
    func measure(tasks: Int, _ op: @escaping @Sendable (String) async -> Bool) async -> (Double, Double) {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let cpu0 = processCPUSeconds()
        let start = ContinuousClock.now
        let total = await withTaskGroup(of: Int.self) { group in
            for t in 0..<tasks {
                group.addTask(executorPreference: executor) {
                    var n = 0
                    var i = t
                    while true {
                        for _ in 0..<256 {
                            _ = await op(keys[i & 63])
                            i &+= 1
                        }
                        n += 256
                        if ContinuousClock.now >= deadline { return n }
                    }
                }
            }
            var sum = 0
            for await n in group { sum += n }
            return sum
        }
        let wall = ContinuousClock.now - start
        let wallNs = Double(wall.components.seconds) * 1e9 + Double(wall.components.attoseconds) / 1e9
        let cpuNs = (processCPUSeconds() - cpu0) * 1e9
        return (wallNs / Double(total), cpuNs / Double(total))
    }

    let cases: [(String, @Sendable (String) async -> Bool)] = [
        ("plainlock", { key in plain.withLock { $0.admit(key) } }),
        ("mutex", { key in mutex.windows.withLock { $0.admit(key) } }),
        ("actor", { key in await actor.admit(key) }),
    ]
    for tasks in [1, 8] {
        for (name, op) in cases {
            _ = await measure(tasks: tasks, op)  // warm-up pass, not printed
            let (wall, cpu) = await measure(tasks: tasks, op)
            print(String(format: "lock_%@_tasks%d_ns_per_op %.0f cpu_ns_per_op %.0f", name, tasks, wall, cpu))
        }
    }
}

import Foundation

/// CPU time of the processes on this machine, grouped by part of the stack, read from
/// `/proc/<pid>/stat` (user + system, plus that of exited children, so that PostgreSQL
/// backends that came and went are counted in the postmaster).
struct ProcessCPU {
    /// Seconds of CPU by part.
    let seconds: [String: Double]
    /// Context switches (voluntary + involuntary, over the process's live threads) and
    /// threads, of the services' processes by part (not PostgreSQL's, nginx's or the client's).
    /// A thread that exited during the run takes its count with it (an undercount for a
    /// server whose threads come and go with connections).
    let switches: [String: Int]
    let threads: [String: Int]

    /// The part a process belongs to, from its name (`comm`, 15 characters at most).
    static func part(of comm: String, pid: Int32) -> String? {
        if pid == getpid() { return "client" }
        switch comm {
        case _ where comm.hasPrefix("signet-authenti"): return "authentication"
        case _ where comm.hasPrefix("signet-registra"): return "registration"
        case _ where comm.hasPrefix("signet-devbroke"): return "broker"
        case _ where comm.hasPrefix("signet-bench"): return nil
        case _ where comm.hasPrefix("signet-"): return "other-services"
        case _ where comm.hasPrefix("postgres"): return "postgres"
        case _ where comm.hasPrefix("nginx"): return "nginx"
        default: return nil
        }
    }

    static func snapshot() -> ProcessCPU {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var seconds: [String: Double] = [:]
        var switches: [String: Int] = [:]
        var threads: [String: Int] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }
            let comm = String(stat[stat.index(after: open)..<close])
            guard let part = part(of: comm, pid: pid) else { continue }
            // After "pid (comm) ": state is field 3; utime, stime, cutime, cstime are 14–17.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 15 else { continue }
            let t = fields[11...14].compactMap { Double($0) }.reduce(0, +)
            seconds[part, default: 0] += t / ticks
            guard part != "postgres", part != "nginx", part != "client" else { continue }
            for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(entry)/task")) ?? [] {
                guard let status = try? String(contentsOfFile: "/proc/\(entry)/task/\(task)/status", encoding: .utf8) else { continue }
                threads[part, default: 0] += 1
                for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                    switches[part, default: 0] += Int(line.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "") ?? 0
                }
            }
        }
        return ProcessCPU(seconds: seconds, switches: switches, threads: threads)
    }

    /// Context switches per unit of work between `self` and `later`, by part, with the threads
    /// each part has at `later`.
    func switchesPerUnit(until later: ProcessCPU, units: Int) -> [(part: String, switches: Double, threads: Int)] {
        later.switches.keys.sorted().map { part in
            (part, Double(later.switches[part, default: 0] - switches[part, default: 0]) / Double(max(units, 1)), later.threads[part, default: 0])
        }
    }

    /// Milliseconds of CPU per unit of work between `self` and `later`, by part.
    func millisecondsPerUnit(until later: ProcessCPU, units: Int) -> [(part: String, ms: Double)] {
        later.seconds.keys.sorted().map { part in
            (part, (later.seconds[part, default: 0] - seconds[part, default: 0]) * 1000 / Double(max(units, 1)))
        }
    }
}

import Foundation

/// The stack's PostgreSQL cluster, for tests that restart it or take it away
/// (`SIGNET_PG_DIR` and `SIGNET_PG_BIN`, which `scripts/stack.sh test` exports).
extension TestStack {
    /// Restarts the cluster (`pg_ctl restart -m fast`) and waits for it to accept connections.
    public static func restartPostgreSQL() async throws {
        let dir = try pgDirectory()
        try await pgctl(["-D", dir, "-m", "fast", "-w", "-t", "60", "-l", "\(dir)/server.log", "restart"])
    }

    /// Stops the cluster (`pg_ctl stop -m fast`: sessions are ended, nothing accepts a
    /// connection any more). Returns what ``startPostgreSQL(_:)`` needs to start it again as
    /// it was: the server's options as `postmaster.opts` records them.
    public static func stopPostgreSQL() async throws -> StoppedPostgreSQL {
        let dir = try pgDirectory()
        let recorded = try String(contentsOfFile: "\(dir)/postmaster.opts", encoding: .utf8)
        // `/path/to/postgres "-D" "dir" "-p" "54329" …`: the quoted arguments after the binary,
        // which pg_ctl's -o takes as they are (as its own restart does).
        guard let space = recorded.firstIndex(of: " ") else { throw TestStackError("postmaster.opts has no options") }
        let options = recorded[recorded.index(after: space)...].trimmingCharacters(in: .whitespacesAndNewlines)
        try await pgctl(["-D", dir, "-m", "fast", "-w", "-t", "60", "stop"])
        return StoppedPostgreSQL(options: options)
    }

    /// The cluster as ``stopPostgreSQL()`` left it.
    public struct StoppedPostgreSQL: Sendable {
        let options: String
    }

    /// Starts the cluster again with the options it had, and waits for it to accept connections.
    public static func startPostgreSQL(_ stopped: StoppedPostgreSQL) async throws {
        let dir = try pgDirectory()
        try await pgctl(["-D", dir, "-w", "-t", "60", "-l", "\(dir)/server.log", "-o", stopped.options, "start"])
    }

    private static func pgDirectory() throws -> String {
        guard let dir = environment["SIGNET_PG_DIR"] else { throw TestStackError("SIGNET_PG_DIR is not set (scripts/stack.sh test sets it)") }
        return dir
    }

    /// Runs pg_ctl, as the postgres user when root (as scripts/stack.sh runs it), and waits
    /// for it; throws unless it exits 0.
    private static func pgctl(_ arguments: [String]) async throws {
        guard let bin = environment["SIGNET_PG_BIN"] else { throw TestStackError("SIGNET_PG_BIN is not set") }
        let pgctl = ["\(bin)/pg_ctl"] + arguments
        let runuser = FileManager.default.fileExists(atPath: "/usr/sbin/runuser") ? "/usr/sbin/runuser" : "/sbin/runuser"
        let argv = getuid() == 0 ? [runuser, "-u", "postgres", "--"] + pgctl : pgctl
        // posix_spawn and a polled waitpid: Foundation's Process did not report this child's
        // exit here (it stayed a zombie), which hung the test.
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], nil, nil, &cArgs, environ)
        guard spawned == 0 else { throw TestStackError("could not start pg_ctl (\(spawned))") }
        // Waited for in a task of its own, which a caller's cancellation does not reach: a
        // service group past its shutdown bound cancels the service stopping PostgreSQL, and a
        // wait cut short there left the cluster stopping with nobody to start it again (every
        // suite after then failed to connect; CI of stop 42, on a loaded machine whose shutdown
        // checkpoint took longer than the group's 3 s).
        let pgPID = pid
        let status = try await Task { () async throws -> Int32 in
            var status: Int32 = 0
            let deadline = ContinuousClock.now + .seconds(90)
            while waitpid(pgPID, &status, WNOHANG) == 0 {
                guard ContinuousClock.now < deadline else { throw TestStackError("pg_ctl \(arguments.last ?? "") did not finish") }
                try await Task.sleep(for: .milliseconds(50))
            }
            return status
        }.value
        guard status == 0 else { throw TestStackError("pg_ctl \(arguments.last ?? "") exited with status \(status)") }
    }
}

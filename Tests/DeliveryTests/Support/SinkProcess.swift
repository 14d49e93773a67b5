import Foundation
import Synchronization

/// A sink script running as a subprocess on a free port, writing into its own directory.
///
/// Started with `--port 0`; ``start(script:arguments:)`` waits for the `listening <port>` line.
/// Always stop it with ``stop()``; ``withSink(_:arguments:_:)`` does that on every path.
final class SinkProcess: Sendable {
    /// The port the sink chose.
    let port: Int
    /// The directory it writes message files to.
    let directory: URL
    private let process: Process
    private let stderrPath: URL

    private init(port: Int, directory: URL, process: Process, stderrPath: URL) {
        self.port = port
        self.directory = directory
        self.process = process
        self.stderrPath = stderrPath
    }

    /// Runs `body` with a started sink and stops the sink afterwards, whatever happens.
    ///
    /// - Parameters:
    ///   - script: `smtp_sink.py` or `sms_sink.py`.
    ///   - arguments: Extra arguments (`--fail-first 2`).
    ///   - probe: The environment probe for this sink.
    ///   - body: The test.
    static func withSink<T>(
        _ script: String, arguments: [String] = [], probe: SinkEnvironment.Probe,
        _ body: (SinkProcess) async throws -> T
    ) async throws -> T {
        let sink = try await start(script: script, arguments: arguments, probe: probe)
        do {
            let result = try await body(sink)
            await sink.stop()
            return result
        } catch {
            await sink.stop()
            throw error
        }
    }

    /// Starts a sink and waits up to 15 s for its `listening <port>` line.
    static func start(script: String, arguments: [String], probe: SinkEnvironment.Probe) async throws -> SinkProcess {
        let (python, sinks) = try SinkEnvironment.require(probe)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("signet-delivery-\(UUID().uuidString)")
        let directory = root.appendingPathComponent("messages")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let stderrPath = root.appendingPathComponent("stderr.log")
        _ = FileManager.default.createFile(atPath: stderrPath.path, contents: nil)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-u", sinks.appendingPathComponent(script).path, "--host", "127.0.0.1", "--port", "0",
                             "--dir", directory.path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: stderrPath)
        let buffer = Mutex("")
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            buffer.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()

        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            let text = buffer.withLock { $0 }
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening ") }),
                let port = Int(line.dropFirst("listening ".count).trimmingCharacters(in: .whitespaces))
            {
                output.fileHandleForReading.readabilityHandler = nil
                return SinkProcess(port: port, directory: directory, process: process, stderrPath: stderrPath)
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        output.fileHandleForReading.readabilityHandler = nil
        if process.isRunning { process.terminate() }
        let log = (try? String(contentsOf: stderrPath, encoding: .utf8)) ?? ""
        throw SinkUnavailable(reason: "\(script) did not report its port within 15 s; stderr: \(log.suffix(2000))")
    }

    /// The message files written so far, oldest first (names start with a UTC timestamp).
    ///
    /// - Parameter suffix: `.eml` or `.json`.
    func messageFiles(suffix: String) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasSuffix(suffix) && !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// The sink's standard error so far, for failure messages.
    var log: String { (try? String(contentsOf: stderrPath, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM, waits up to 5 s (then SIGKILL), and removes the sink's files. The sinks
    /// unblock SIGTERM themselves: `Process` starts children with the parent's signal mask.
    func stop() async {
        if process.isRunning { process.terminate() }
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: directory.deletingLastPathComponent())
    }
}

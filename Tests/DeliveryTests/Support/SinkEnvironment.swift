import Foundation
import Synchronization

/// Finds the Python interpreter and the sink scripts the integration tests run.
///
/// - `SIGNET_SINK_PYTHON`: the interpreter. Without it: `<package>/.venv/bin/python` when it
///   exists, else the first `python3` on `PATH`.
/// - `SIGNET_SINKS_DIR`: the folder holding `smtp_sink.py` and `sms_sink.py`. Without it:
///   `<package>/sinks`, found from this file's path.
/// - `CI`: when set (and not `0` or `false`), a missing interpreter or package fails the tests
///   instead of skipping them, so CI can never pass without running them.
enum SinkEnvironment {
    /// What the probe found.
    enum Probe: Sendable {
        /// The interpreter and the sinks folder, both usable.
        case ready(python: String, sinks: URL)
        /// Why the sinks cannot run.
        case unavailable(String)
    }

    /// The package root: three levels above `Tests/DeliveryTests/Support/`.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Whether `CI` asks for loud failures.
    static let isCI: Bool = {
        guard let value = ProcessInfo.processInfo.environment["CI"]?.lowercased(), !value.isEmpty else { return false }
        return value != "0" && value != "false"
    }()

    /// The suites whose skip reason was printed.
    private static let reported = Mutex<Set<String>>([])

    /// The probe for the SMS sink (standard library only).
    static let smsProbe: Probe = probe(module: nil)
    /// The probe for the SMTP sink (needs aiosmtpd).
    static let smtpProbe: Probe = probe(module: "aiosmtpd")

    /// Whether a suite needing `probe` should run: always under CI (to fail loudly), else
    /// only when the probe succeeded. Prints the reason when it skips.
    static func shouldRun(_ probe: Probe, suite: String) -> Bool {
        if isCI { return true }
        if case .unavailable(let reason) = probe {
            // Evaluated for every test of the suite; say it once per suite.
            if reported.withLock({ $0.insert(suite).inserted }) {
                FileHandle.standardError.write(Data("\(suite) skipped (CI is not set): \(reason)\n".utf8))
            }
            return false
        }
        return true
    }

    /// The interpreter and sinks folder, or a failure naming what is missing.
    ///
    /// - Throws: ``SinkUnavailable`` with the reason and how to fix it.
    static func require(_ probe: Probe) throws -> (python: String, sinks: URL) {
        switch probe {
        case .ready(let python, let sinks): return (python, sinks)
        case .unavailable(let reason): throw SinkUnavailable(reason: reason)
        }
    }

    // MARK: - Probing

    private static func probe(module: String?) -> Probe {
        let environment = ProcessInfo.processInfo.environment
        let sinks = environment["SIGNET_SINKS_DIR"].map { URL(fileURLWithPath: $0) } ?? packageRoot.appendingPathComponent("Tools/Sinks")
        for script in ["smtp_sink.py", "sms_sink.py"] where !FileManager.default.fileExists(atPath: sinks.appendingPathComponent(script).path) {
            return .unavailable("\(script) not found in \(sinks.path) (set SIGNET_SINKS_DIR)")
        }
        guard let python = findPython(environment) else {
            return .unavailable(
                "no Python interpreter: set SIGNET_SINK_PYTHON, create \(packageRoot.path)/.venv "
                    + "(python3 -m venv .venv && .venv/bin/pip install -r sinks/requirements.txt), or put python3 on PATH")
        }
        if let module {
            let status = run(python, ["-c", "import \(module)"])
            guard status == 0 else {
                return .unavailable(
                    "\(python) cannot import \(module): install it with \(python) -m pip install -r \(sinks.path)/requirements.txt "
                        + "(or point SIGNET_SINK_PYTHON at an interpreter that has it)")
            }
        }
        return .ready(python: python, sinks: sinks)
    }

    private static func findPython(_ environment: [String: String]) -> String? {
        if let explicit = environment["SIGNET_SINK_PYTHON"], !explicit.isEmpty {
            return FileManager.default.isExecutableFile(atPath: explicit) ? explicit : nil
        }
        let venv = packageRoot.appendingPathComponent(".venv/bin/python").path
        if FileManager.default.isExecutableFile(atPath: venv) { return venv }
        for directory in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/python3"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    private static func run(_ executable: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return -1
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Thrown when a sink cannot run; under CI this fails the test with the reason.
struct SinkUnavailable: Error, CustomStringConvertible {
    /// What is missing and how to provide it.
    let reason: String
    var description: String { "sinks unavailable: \(reason)" }
}

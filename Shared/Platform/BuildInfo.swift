import FoundationEssentials

/// What this process was built from, as `/healthz` and `/readyz` tell it.
///
/// The version is the build's, handed to the process by whoever built it: the local stack sets
/// `SIGNET_VERSION` to `git describe --always --dirty` of the checkout it built, an image build
/// sets it from its build argument. Without it the version is `dev`. A value that is not
/// 1-64 printable ASCII characters is ignored (it is echoed on unauthenticated probes).
public enum BuildInfo {
    public static let version: String = version(from: ProcessInfo.processInfo.environment["SIGNET_VERSION"])

    /// `value` when it is 1-64 printable ASCII characters, else `dev`.
    public static func version(from value: String?) -> String {
        guard let value, (1...64).contains(value.utf8.count), value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return "dev" }
        return value
    }
}

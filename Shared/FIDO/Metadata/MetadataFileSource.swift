import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// A BLOB in a file (e.g. one downloaded by a cron job, or shipped with the deployment).
///
/// The read is blocking file I/O, so it runs on a dedicated queue, never on the cooperative
/// pool (two threads on these machines).
public struct MetadataFileSource: MetadataSource {
    /// The file's path.
    public let path: String

    public init(path: String) { self.path = path }

    /// Blocking reads happen here, one at a time.
    static let queue = DispatchQueue(label: "signet.fido.metadata.file")

    public func fetchBLOB(maximumSize: Int) async throws(MetadataError) -> String {
        let path = self.path
        let result: Result<String, MetadataError> = await withCheckedContinuation { continuation in
            // Blocking: stat + read of up to maximumSize bytes, off the cooperative pool.
            Self.queue.async { continuation.resume(returning: Self.read(path: path, maximumSize: maximumSize)) }
        }
        return try result.get()
    }

    /// Reads at most `maximumSize` + 1 bytes, so an oversized (or growing) file is refused
    /// without being read whole.
    static func read(path: String, maximumSize: Int) -> Result<String, MetadataError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            return .failure(MetadataError(.sourceUnavailable, "metadata file cannot be opened"))
        }
        defer { close(fd) }
        var data = [UInt8](repeating: 0, count: maximumSize + 1)
        var filled = 0
        while filled < data.count {
            let count = data.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(MetadataError(.sourceUnavailable, "metadata file cannot be read"))
            }
            filled += count
        }
        data.removeSubrange(filled...)
        guard data.count <= maximumSize else { return .failure(MetadataError(.tooLarge, "metadata file over \(maximumSize) bytes")) }
        guard let text = String(validating: data, as: UTF8.self) else {
            return .failure(MetadataError(.malformed, "metadata file is not UTF-8"))
        }
        return .success(text)
    }
}

import Dispatch
import Foundation

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
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return .failure(MetadataError(.sourceUnavailable, "metadata file cannot be opened"))
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumSize + 1) ?? Data()
        } catch {
            return .failure(MetadataError(.sourceUnavailable, "metadata file cannot be read"))
        }
        guard data.count <= maximumSize else { return .failure(MetadataError(.tooLarge, "metadata file over \(maximumSize) bytes")) }
        guard let text = String(validating: data, as: UTF8.self) else {
            return .failure(MetadataError(.malformed, "metadata file is not UTF-8"))
        }
        return .success(text)
    }
}

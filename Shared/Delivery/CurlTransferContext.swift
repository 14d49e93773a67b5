import CCurl
import Synchronization

/// A cancellation request shared between a Swift task and a libcurl transfer running on a
/// lane: the task's cancellation handler sets it, the transfer's progress callback reads it.
final class CancellationFlag: Sendable {
    private let cancelled = Atomic<Bool>(false)

    /// Asks the transfer to stop at its next progress callback.
    func cancel() { cancelled.store(true, ordering: .releasing) }

    /// Whether ``cancel()`` was called.
    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
}

/// The state libcurl's callbacks work on during one transfer: the bytes to upload, the
/// response collected so far, and the cancellation flag.
///
/// Reached from the C callbacks through `Unmanaged` user data. Not Sendable: the callbacks run
/// on the thread inside `curl_easy_perform`, the same lane that created the context and reads
/// it afterwards; only ``cancellation`` is shared, and it is atomic.
final class CurlTransferContext {
    /// The request body, sent by ``readCallback``.
    private let upload: [UInt8]
    /// How much of ``upload`` libcurl has taken.
    private var offset = 0
    /// The response body received by ``writeCallback``, up to ``responseLimit`` bytes.
    private(set) var response: [UInt8] = []
    /// Bytes of response kept; the rest is read and dropped.
    private let responseLimit: Int
    /// Set when the awaiting task is cancelled.
    let cancellation: CancellationFlag

    /// A context for one transfer.
    ///
    /// - Parameters:
    ///   - upload: The bytes to send (the message for SMTP; unused for HTTP POST, which
    ///     copies its fields).
    ///   - responseLimit: How much of the response body to keep.
    ///   - cancellation: The flag the awaiting task sets when cancelled.
    init(upload: [UInt8] = [], responseLimit: Int = 0, cancellation: CancellationFlag) {
        self.upload = upload
        self.responseLimit = responseLimit
        self.cancellation = cancellation
    }

    // MARK: - C callbacks

    // Each is a closure without captures, so it converts to a C function pointer; the context
    // comes back from the user-data pointer that `CurlEasy.install(_:)` registered.

    /// CURLOPT_READFUNCTION: copies the next part of the upload into libcurl's buffer;
    /// returning 0 ends the upload.
    static let readCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        buffer, size, count, userData in
        guard let buffer, let userData else { return 0 }
        let context = Unmanaged<CurlTransferContext>.fromOpaque(userData).takeUnretainedValue()
        let length = min(size * count, context.upload.count - context.offset)
        guard length > 0 else { return 0 }
        context.upload.withUnsafeBufferPointer { source in
            UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress! + context.offset, byteCount: length)
        }
        context.offset += length
        return length
    }

    /// CURLOPT_WRITEFUNCTION: keeps the response up to the limit and reports every byte as
    /// taken (a short count would abort the transfer).
    static let writeCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, userData in
        let length = size * count
        guard let data, let userData else { return length }
        let context = Unmanaged<CurlTransferContext>.fromOpaque(userData).takeUnretainedValue()
        let keep = min(length, context.responseLimit - context.response.count)
        if keep > 0 {
            let bytes = UnsafeRawBufferPointer(start: data, count: keep)
            context.response.append(contentsOf: bytes)
        }
        return length
    }

    /// CURLOPT_XFERINFOFUNCTION: called about once a second and on every chunk; a non-zero
    /// result aborts the transfer with CURLE_ABORTED_BY_CALLBACK, which is how task
    /// cancellation reaches a blocking `curl_easy_perform`.
    static let progressCallback: @convention(c) (UnsafeMutableRawPointer?, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> Int32 = {
        userData, _, _, _, _ in
        guard let userData else { return 0 }
        let context = Unmanaged<CurlTransferContext>.fromOpaque(userData).takeUnretainedValue()
        return context.cancellation.isCancelled ? 1 : 0
    }
}

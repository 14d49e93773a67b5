import CCurl
import CCurlShims

/// A libcurl failure before it is given a meaning: the `CURLcode`, libcurl's text for it and
/// the contents of the handle's error buffer.
struct CurlFailure: Error {
    /// The raw `CURLcode`.
    let code: CURLcode
    /// `curl_easy_strerror` and, when libcurl wrote one, the error buffer's detail. May quote a
    /// server reply; for ``DeliveryError``'s debug description only.
    let text: String
}

/// An owned libcurl easy handle (`CURL *`) for one transfer, freed in `deinit` together with
/// the string lists and the error buffer whose lifetime libcurl expects to match the handle's.
///
/// Not Sendable: a handle is created, configured, performed and dropped on one lane of
/// ``BlockingLanes`` (libcurl: "never share a handle between threads at the same time").
final class CurlEasy {
    /// The `CURL *`.
    private let handle: UnsafeMutableRawPointer
    /// CURLOPT_ERRORBUFFER's storage; libcurl writes into it during `perform`.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// `struct curl_slist *` lists handed to libcurl, which does not copy them.
    private var lists: [UnsafeMutableRawPointer] = []

    /// A fresh handle with the options every transfer here needs: no signals (libcurl would
    /// otherwise use SIGALRM for DNS timeouts, unsafe with threads) and an error buffer.
    ///
    /// - Throws: ``CurlFailure`` when libcurl cannot allocate a handle.
    init() throws {
        _ = CurlGlobal.initialised
        guard let handle = curl_easy_init() else {
            throw CurlFailure(code: CURLE_FAILED_INIT, text: "curl_easy_init failed")
        }
        self.handle = handle
        let size = Int(CURL_ERROR_SIZE)
        errorBuffer = .allocate(capacity: size)
        errorBuffer.initialize(repeating: 0, count: size)
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
    }

    deinit {
        curl_easy_cleanup(handle)
        for list in lists {
            curl_slist_free_all(list.assumingMemoryBound(to: curl_slist.self))
        }
        errorBuffer.deallocate()
    }

    // MARK: - Options

    /// Sets an option that takes a `long`.
    func set(_ option: CURLoption, _ value: Int) throws {
        try check(signet_curl_setopt_long(handle, Int32(option.rawValue), value), option)
    }

    /// Sets an option that takes a string; libcurl copies it.
    func set(_ option: CURLoption, _ value: String) throws {
        try check(signet_curl_setopt_str(handle, Int32(option.rawValue), value), option)
    }

    /// Sets an option that takes a data pointer, which must outlive ``perform()``.
    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws {
        try check(signet_curl_setopt_ptr(handle, Int32(option.rawValue), pointer), option)
    }

    /// Sets an option that takes a `struct curl_slist *`, built from `values` and kept alive
    /// by this handle.
    func set(_ option: CURLoption, list values: [String]) throws {
        var list: UnsafeMutablePointer<curl_slist>?
        for value in values {
            guard let appended = curl_slist_append(list, value) else {
                curl_slist_free_all(list)
                throw CurlFailure(code: CURLE_OUT_OF_MEMORY, text: "curl_slist_append failed")
            }
            list = appended
        }
        guard let list else { return }
        let raw = UnsafeMutableRawPointer(list)
        lists.append(raw)
        try check(signet_curl_setopt_slist(handle, Int32(option.rawValue), raw), option)
    }

    /// Sets an option that takes a C function pointer of the type the option expects.
    func set(_ option: CURLoption, callback: UnsafeMutableRawPointer) throws {
        try check(signet_curl_setopt_callback(handle, Int32(option.rawValue), callback), option)
    }

    /// Installs the read, write and progress callbacks with `context` as their user data.
    /// The context must stay alive until ``perform()`` returns.
    func install(_ context: CurlTransferContext) throws {
        let opaque = Unmanaged.passUnretained(context).toOpaque()
        try set(CURLOPT_READFUNCTION, callback: unsafeBitCast(CurlTransferContext.readCallback, to: UnsafeMutableRawPointer.self))
        try set(CURLOPT_READDATA, pointer: opaque)
        try set(CURLOPT_WRITEFUNCTION, callback: unsafeBitCast(CurlTransferContext.writeCallback, to: UnsafeMutableRawPointer.self))
        try set(CURLOPT_WRITEDATA, pointer: opaque)
        try set(CURLOPT_XFERINFOFUNCTION, callback: unsafeBitCast(CurlTransferContext.progressCallback, to: UnsafeMutableRawPointer.self))
        try set(CURLOPT_XFERINFODATA, pointer: opaque)
        try set(CURLOPT_NOPROGRESS, 0)
    }

    private func check(_ result: Int32, _ option: CURLoption) throws {
        guard result != 0 else { return }
        let code = CURLcode(rawValue: UInt32(bitPattern: result))
        throw CurlFailure(code: code, text: "setting option \(option.rawValue): \(Self.describe(code))")
    }

    // MARK: - Transfer

    /// Runs the transfer to its end.
    ///
    /// - Important: Blocks the calling thread for up to the configured timeout; call it only
    ///   on a lane of ``BlockingLanes``, never on the cooperative pool.
    /// - Throws: ``CurlFailure`` with the code and libcurl's detail when the transfer fails.
    func perform() throws {
        let code = curl_easy_perform(handle)
        guard code != CURLE_OK else { return }
        let detail = String(cString: errorBuffer)
        let text = detail.isEmpty ? Self.describe(code) : "\(Self.describe(code)): \(detail)"
        throw CurlFailure(code: code, text: text)
    }

    /// CURLINFO_RESPONSE_CODE: the last SMTP reply code or HTTP status, 0 when none came.
    var responseCode: Int {
        var value = 0
        guard signet_curl_getinfo_long(handle, Int32(CURLINFO_RESPONSE_CODE.rawValue), &value) == 0 else { return 0 }
        return value
    }

    /// CURLINFO_HTTP_VERSION: the HTTP version of the last response (a `CURL_HTTP_VERSION_*`
    /// value; `CURL_HTTP_VERSION_2_0` for HTTP/2), 0 when none came.
    var httpVersion: Int {
        var value = 0
        guard signet_curl_getinfo_long(handle, Int32(CURLINFO_HTTP_VERSION.rawValue), &value) == 0 else { return 0 }
        return value
    }

    private static func describe(_ code: CURLcode) -> String {
        "curl \(code.rawValue) \(String(cString: curl_easy_strerror(code)))"
    }
}

/// libcurl's process-wide initialisation, run once before the first handle. A global `let` is
/// initialised lazily under `swift_once`, which makes the call thread-safe whatever libcurl's
/// own guarantees for `curl_global_init` are.
enum CurlGlobal {
    /// Evaluating it initialises libcurl (CURL_GLOBAL_DEFAULT); the result is the CURLcode.
    static let initialised: CURLcode = curl_global_init(Int(CURL_GLOBAL_SSL | CURL_GLOBAL_WIN32))
}

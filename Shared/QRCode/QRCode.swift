import CQREncode

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A QR code symbol (ISO/IEC 18004): the square matrix of dark and light modules that encodes
/// a text, e.g. the otpauth URI that an authenticator app scans at enrolment.
///
/// Encoding goes through libqrencode, which picks the smallest version (size) that holds the
/// text at the requested error correction level and the best mask. Rendering to PNG and SVG is
/// in `QRCode+Rendering.swift`.
///
/// ```swift
/// let qr = try QRCode.encode(uri.absoluteString)
/// let png = qr.pngData(scale: 6)      // image/png, for an <img src="data:…">
/// let svg = qr.svg(scale: 6)          // image/svg+xml
/// ```
public struct QRCode: Sendable, Hashable {
    /// The share of the symbol that can be damaged or hidden and still be read.
    public enum ErrorCorrection: Sendable, Hashable, CaseIterable {
        /// About 7 % of codewords recoverable.
        case low
        /// About 15 %: the usual level for codes shown on a screen.
        case medium
        /// About 25 %.
        case quartile
        /// About 30 %: for printed codes that may be soiled or carry a logo.
        case high

        /// libqrencode's level.
        var level: QRecLevel {
            switch self {
            case .low: QR_ECLEVEL_L
            case .medium: QR_ECLEVEL_M
            case .quartile: QR_ECLEVEL_Q
            case .high: QR_ECLEVEL_H
            }
        }
    }

    /// The symbol version, 1…40; version v has 17 + 4v modules per side.
    public let version: Int
    /// The number of modules per side (21 for version 1, 177 for version 40).
    public let size: Int
    /// The error correction level the symbol was encoded with.
    public let errorCorrection: ErrorCorrection
    /// The modules row by row, `true` for dark.
    private let modules: [Bool]

    /// The longest text ``encode(_:errorCorrection:)`` accepts, in UTF-8 bytes. An enrolment
    /// URI is well under 300 bytes; the bound keeps hostile input from costing an encoding of
    /// the largest symbol, and fits version 40 at the low and medium levels.
    public static let maximumInputByteCount = 2048

    /// A symbol from its parts; `modules` has `size * size` entries, row by row.
    init(version: Int, size: Int, errorCorrection: ErrorCorrection, modules: [Bool]) {
        precondition(modules.count == size * size, "module count does not match the size")
        self.version = version
        self.size = size
        self.errorCorrection = errorCorrection
        self.modules = modules
    }

    // MARK: - Encoding

    /// Encodes `text` as a QR code of the smallest version that holds it.
    ///
    /// The text is encoded case-sensitively with libqrencode's `QRcode_encodeString` and the
    /// `QR_MODE_8` hint: digits and upper-case runs may use the compact numeric and
    /// alphanumeric modes, everything else is written as its UTF-8 bytes in 8-bit mode.
    ///
    /// - Parameters:
    ///   - text: The text, 1…``maximumInputByteCount`` UTF-8 bytes, without NUL characters.
    ///   - errorCorrection: The error correction level; medium by default.
    /// - Returns: The symbol.
    /// - Throws: ``QRCodeError`` with code ``QRCodeError/Code-swift.struct/emptyInput``,
    ///   ``QRCodeError/Code-swift.struct/inputTooLong`` or
    ///   ``QRCodeError/Code-swift.struct/invalidInput`` for text outside the bounds above,
    ///   ``QRCodeError/Code-swift.struct/capacityExceeded`` when it does not fit version 40 at
    ///   this level, and ``QRCodeError/Code-swift.struct/encodingFailed`` when libqrencode fails
    ///   otherwise.
    public static func encode(_ text: String, errorCorrection: ErrorCorrection = .medium) throws -> QRCode {
        let byteCount = text.utf8.count
        guard byteCount > 0 else { throw QRCodeError(.emptyInput, "empty text") }
        guard byteCount <= maximumInputByteCount else {
            throw QRCodeError(.inputTooLong, "\(byteCount) bytes, at most \(maximumInputByteCount)")
        }
        guard !text.utf8.contains(0) else { throw QRCodeError(.invalidInput, "text contains NUL") }

        // libqrencode is thread-safe (Debian builds it with pthread; its Reed-Solomon tables
        // are initialised under a mutex), so concurrent encodes need no lock here. It is
        // CPU-bound and takes well under a millisecond for URI-sized texts, so it runs inline.
        let (symbol, error) = text.withCString { cString -> (UnsafeMutablePointer<QRcode>?, Int32) in
            let result = QRcode_encodeString(cString, 0, errorCorrection.level, QR_MODE_8, 1)
            return (result, result == nil ? errno : 0)
        }
        guard let symbol else {
            if error == ERANGE {
                throw QRCodeError(.capacityExceeded, "\(byteCount) bytes do not fit version 40 at \(errorCorrection)")
            }
            throw QRCodeError(.encodingFailed, "QRcode_encodeString failed with errno \(error)")
        }
        defer { QRcode_free(symbol) }

        let size = Int(symbol.pointee.width)
        // Each byte of `data` describes one module; bit 0 is set for a dark module, the other
        // bits say which function pattern it belongs to (qrencode.h).
        let data = UnsafeBufferPointer(start: symbol.pointee.data, count: size * size)
        return QRCode(
            version: Int(symbol.pointee.version), size: size, errorCorrection: errorCorrection,
            modules: data.map { $0 & 1 == 1 })
    }

    // MARK: - Reading modules

    /// Whether the module at `row`, `column` (both 0-based from the top left) is dark.
    ///
    /// - Parameters:
    ///   - row: 0..<``size``.
    ///   - column: 0..<``size``.
    public subscript(row: Int, column: Int) -> Bool {
        precondition((0..<size).contains(row) && (0..<size).contains(column), "module out of range")
        return modules[row * size + column]
    }

    /// The number of dark modules.
    public var darkModuleCount: Int { modules.reduce(0) { $0 + ($1 ? 1 : 0) } }

    /// The modules of one row, left to right, `true` for dark.
    ///
    /// - Parameter row: 0..<``size``.
    public func row(_ row: Int) -> ArraySlice<Bool> {
        precondition((0..<size).contains(row), "row out of range")
        return modules[(row * size)..<((row + 1) * size)]
    }

    /// The runs of dark modules in a row as (first column, length), left to right; what the
    /// SVG path draws one rectangle for.
    ///
    /// - Parameter row: 0..<``size``.
    func darkRuns(inRow row: Int) -> [(column: Int, length: Int)] {
        var runs: [(column: Int, length: Int)] = []
        var start: Int?
        for (column, dark) in self.row(row).enumerated() {
            if dark, start == nil { start = column }
            if !dark, let first = start {
                runs.append((first, column - first))
                start = nil
            }
        }
        if let first = start { runs.append((first, size - first)) }
        return runs
    }
}

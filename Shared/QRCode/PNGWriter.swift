import CZlib

/// A minimal PNG encoder for 8-bit grayscale images (PNG specification, ISO/IEC 15948).
///
/// It writes the signature, an `IHDR` chunk, one `IDAT` chunk with the whole image compressed
/// by zlib's `compress2` (a zlib stream, as PNG requires), and `IEND`. Every row uses filter
/// type 0 (None): QR images are flat areas of two grey levels that deflate compresses well
/// unfiltered. Chunk CRCs come from zlib's `crc32`, which computes the CRC-32 that PNG uses.
struct PNGWriter: Sendable {
    /// The eight bytes that open every PNG file.
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The image width in pixels.
    let width: Int
    /// The image height in pixels.
    let height: Int

    /// A writer for an image of the given size.
    ///
    /// - Parameters:
    ///   - width: Pixels per row, at least 1 and below 2^31 (PNG's limit).
    ///   - height: Rows, at least 1 and below 2^31.
    init(width: Int, height: Int) {
        precondition(width > 0 && width < 1 << 31 && height > 0 && height < 1 << 31, "PNG size out of range")
        self.width = width
        self.height = height
    }

    /// The PNG file for an image whose rows `pixel(row, column)` describes, 0 black to 255
    /// white.
    ///
    /// - Parameter pixel: The grey level of each pixel, called row by row.
    /// - Returns: The complete file.
    /// - Important: Traps if zlib fails to compress, which happens only when it cannot
    ///   allocate memory; the caller bounds the image size.
    func encode(pixel: (_ row: Int, _ column: Int) -> UInt8) -> [UInt8] {
        // Each scanline is a filter-type byte followed by the row's pixels.
        var raw = [UInt8](repeating: 0, count: height * (1 + width))
        for row in 0..<height {
            let start = row * (1 + width)
            raw[start] = 0  // filter type None
            for column in 0..<width {
                raw[start + 1 + column] = pixel(row, column)
            }
        }

        var header: [UInt8] = []
        header += Self.bigEndian(UInt32(width))
        header += Self.bigEndian(UInt32(height))
        header += [
            8,  // bit depth
            0,  // colour type: greyscale
            0,  // compression method: deflate
            0,  // filter method: adaptive, with per-row filter types
            0,  // interlace method: none
        ]

        var file = Self.signature
        Self.appendChunk("IHDR", header, to: &file)
        Self.appendChunk("IDAT", Self.compress(raw), to: &file)
        Self.appendChunk("IEND", [], to: &file)
        return file
    }

    // MARK: - Chunks

    /// Appends one chunk: length, type, data, and the CRC-32 of type and data.
    static func appendChunk(_ type: String, _ data: [UInt8], to file: inout [UInt8]) {
        let typeBytes = Array(type.utf8)
        precondition(typeBytes.count == 4, "a PNG chunk type has four letters")
        file += bigEndian(UInt32(data.count))
        let typeAndData = typeBytes + data
        file += typeAndData
        file += bigEndian(crc32(typeAndData))
    }

    /// The CRC-32 (ISO 3309, as PNG specifies it) of `bytes`, through zlib.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc = CZlib.crc32(0, nil, 0)
        bytes.withUnsafeBufferPointer { buffer in
            // zlib takes the length as uInt (32 bits); chunks here are far below that limit.
            crc = CZlib.crc32(crc, buffer.baseAddress, uInt(buffer.count))
        }
        return UInt32(truncatingIfNeeded: crc)
    }

    /// `bytes` as a zlib stream at the best compression level.
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var capacity = compressBound(uLong(bytes.count))
        var out = [UInt8](repeating: 0, count: Int(capacity))
        let status = out.withUnsafeMutableBufferPointer { outBuffer in
            bytes.withUnsafeBufferPointer { inBuffer in
                compress2(outBuffer.baseAddress, &capacity, inBuffer.baseAddress, uLong(inBuffer.count), Z_BEST_COMPRESSION)
            }
        }
        precondition(status == Z_OK, "zlib compress2 failed with status \(status)")
        return Array(out.prefix(Int(capacity)))
    }

    /// `value` as four bytes, most significant first (PNG's byte order).
    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
         UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }
}

/// PNG files for tests, written without zlib (stored deflate blocks, a table-free CRC-32), so
/// that tests of the PNG checker do not share its zlib with it.
public enum TestPNG {
    /// A chunk: length, type, data, CRC-32 of type and data.
    public static func chunk(_ type: String, _ data: [UInt8], crc: UInt32? = nil) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return bigEndian(UInt32(data.count)) + typeBytes + data + bigEndian(crc ?? crc32(typeBytes + data))
    }

    /// A complete file: signature, IHDR, `extra` chunks (PLTE, tRNS, …), one IDAT holding
    /// `raw` (the scanlines with their filter bytes; by default every row filter 0 and pixels
    /// `0x5A`) as a zlib stream of stored blocks, and IEND.
    public static func make(
        width: UInt32, height: UInt32, bitDepth: UInt8 = 8, colorType: UInt8 = 0, interlace: UInt8 = 0, extra: [[UInt8]] = [],
        raw: [UInt8]? = nil
    ) -> [UInt8] {
        let ihdr = bigEndian(width) + bigEndian(height) + [bitDepth, colorType, 0, 0, interlace]
        let data = raw ?? defaultRaw(width: Int(width), height: Int(height), bitsPerPixel: Int(bitDepth) * samples(colorType))
        return signature + chunk("IHDR", ihdr) + extra.joined() + chunk("IDAT", zlibStored(data)) + chunk("IEND", [])
    }

    public static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Samples per pixel of a colour type.
    public static func samples(_ colorType: UInt8) -> Int { [0: 1, 2: 3, 3: 1, 4: 2, 6: 4][colorType] ?? 1 }

    /// Non-interlaced scanlines: filter byte 0, then the row's bytes.
    public static func defaultRaw(width: Int, height: Int, bitsPerPixel: Int) -> [UInt8] {
        let row = [0] + [UInt8](repeating: 0x5A, count: (width * bitsPerPixel + 7) / 8)
        return Array((0..<height).map { _ in row }.joined())
    }

    /// A zlib stream (RFC 1950) of stored deflate blocks (RFC 1951 §3.2.4).
    public static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let n = min(65_535, data.count - offset)
            let final: UInt8 = offset + n == data.count ? 1 : 0
            out += [final, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[offset..<(offset + n)]
            offset += n
        } while offset < data.count
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return out + bigEndian(b << 16 | a)
    }

    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    public static func bigEndian(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
}

import CZlib
import Testing
@testable import QRCode

/// One PNG chunk as read back from a file.
struct PNGChunk {
    /// The four-letter chunk type, e.g. `IHDR`.
    let type: String
    /// The chunk's data.
    let data: [UInt8]
    /// The CRC stored after the data.
    let crc: UInt32
}

/// The chunks of a PNG file after its signature; `nil` if a length runs past the end.
func readChunks(_ file: [UInt8]) -> [PNGChunk]? {
    var chunks: [PNGChunk] = []
    var offset = 8
    while offset < file.count {
        guard offset + 12 <= file.count else { return nil }
        let length = Int(readUInt32(file, at: offset))
        guard offset + 12 + length <= file.count else { return nil }
        let type = String(decoding: file[(offset + 4)..<(offset + 8)], as: UTF8.self)
        let data = Array(file[(offset + 8)..<(offset + 8 + length)])
        chunks.append(PNGChunk(type: type, data: data, crc: readUInt32(file, at: offset + 8 + length)))
        offset += 12 + length
    }
    return chunks
}

/// The big-endian 32-bit value at `offset`.
func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
}

/// `compressed` inflated with zlib's `uncompress` into a buffer of exactly `expected` bytes;
/// `nil` if zlib fails or the result has another length.
func inflate(_ compressed: [UInt8], expected: Int) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: expected + 1)
    var length = uLong(out.count)
    let status = out.withUnsafeMutableBufferPointer { o in
        compressed.withUnsafeBufferPointer { i in uncompress(o.baseAddress, &length, i.baseAddress, uLong(i.count)) }
    }
    guard status == Z_OK, Int(length) == expected else { return nil }
    return Array(out.prefix(expected))
}

/// PNG and SVG output, read back and checked module by module.
@Suite struct QRCodeRenderingTests {
    @Test(arguments: [(4, 4), (1, 0), (3, 2), (10, 4)])
    func pngIsAValidGrayscaleImage(_ scale: Int, _ border: Int) throws {
        let qr = try QRCode.encode(enrolmentURI)
        let png = qr.pngData(scale: scale, border: border)
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])

        let chunks = try #require(readChunks(png))
        #expect(chunks.map(\.type) == ["IHDR", "IDAT", "IEND"])
        for chunk in chunks {
            #expect(chunk.crc == PNGWriter.crc32(Array(chunk.type.utf8) + chunk.data), "CRC of \(chunk.type)")
        }

        let side = (qr.size + 2 * border) * scale
        #expect(qr.imageSize(scale: scale, border: border) == side)
        let ihdr = chunks[0].data
        #expect(ihdr.count == 13)
        #expect(Int(readUInt32(ihdr, at: 0)) == side)
        #expect(Int(readUInt32(ihdr, at: 4)) == side)
        #expect(Array(ihdr[8...]) == [8, 0, 0, 0, 0])  // 8-bit greyscale, deflate, no interlace
        #expect(chunks[2].data.isEmpty)

        let raw = try #require(inflate(chunks[1].data, expected: side * (1 + side)))
        for row in 0..<side {
            let start = row * (1 + side)
            #expect(raw[start] == 0, "filter byte of row \(row)")
            for column in 0..<side {
                let value = raw[start + 1 + column]
                let moduleRow = row / scale - border
                let moduleColumn = column / scale - border
                let inside = (0..<qr.size).contains(moduleRow) && (0..<qr.size).contains(moduleColumn)
                let dark = inside && qr[moduleRow, moduleColumn]
                if value != (dark ? 0 : 255) {
                    Issue.record("pixel (\(row), \(column)) is \(value)")
                    return
                }
            }
        }
    }

    @Test func pngCRCMatchesTheKnownIENDValue() {
        // Every IEND chunk has the CRC AE 42 60 82.
        #expect(PNGWriter.crc32(Array("IEND".utf8)) == 0xAE42_6082)
    }

    @Test func svgHasOneRectanglePerDarkRunCoveringEveryDarkModule() throws {
        let qr = try QRCode.encode(enrolmentURI)
        let svg = qr.svg(scale: 5, border: 4)
        let side = (qr.size + 8) * 5
        #expect(svg.hasPrefix("<?xml"))
        #expect(svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(svg.contains("width=\"\(side)\" height=\"\(side)\""))
        #expect(svg.contains("viewBox=\"0 0 \(qr.size + 8) \(qr.size + 8)\""))
        #expect(svg.hasSuffix("</svg>\n"))

        // Read the path back: every `M{x} {y}h{n}v1h-{n}z` marks n dark modules from (x, y).
        let parts = svg.split(separator: "\"", omittingEmptySubsequences: false)
        let pathIndex = try #require(parts.firstIndex { $0.hasSuffix(" d=") })
        let commands = parts[pathIndex + 1].split(separator: "z")
        var painted = Set<Int>()
        for command in commands {
            let numbers = command.split(whereSeparator: { "Mhv -".contains($0) }).compactMap { Int($0) }
            try #require(numbers.count == 5)
            let (x, y, length) = (numbers[0] - 4, numbers[1] - 4, numbers[2])
            #expect(numbers[3] == 1 && numbers[4] == length)
            for column in x..<(x + length) {
                #expect(qr[y, column])
                #expect(painted.insert(y * qr.size + column).inserted)
            }
        }
        #expect(painted.count == qr.darkModuleCount)
    }
}

import CZlib
import Platform
import Schema

/// An `image/png` transaction content (UAF Protocol §3.5.2), checked strictly before the server
/// sends it for the user to confirm: what the authenticator shows must be exactly one decodable
/// image of the size and pixel format its `tcDisplayPNGCharacteristics` announce, with nothing
/// hidden beside it.
///
/// The checks (PNG specification, ISO/IEC 15948, §5 and §11):
/// - the 8-byte signature, then chunks with exact lengths and correct CRC-32s, nothing after `IEND`;
/// - `IHDR` first (13 bytes): width and height 1…``maximumDimension``, a bit depth allowed for the
///   colour type, compression 0, filter 0, interlace 0 or 1;
/// - only `PLTE` (once, before the image data; required for colour type 3, refused for grey
///   types; at most 2^bitDepth entries for type 3), `tRNS` (before the image data, of the length
///   its colour type fixes), consecutive `IDAT`s and an empty `IEND`;
/// - and three ancillary chunks that common encoders (libpng, GIMP, Windows, Photoshop) write
///   and that change nothing of what the image shows (``RenderingChunks``), each at most once,
///   of its exact length and in the place §5.6 gives it: `sRGB` (a rendering intent 0…3),
///   `gAMA` (an encoding gamma between 1/2.6 and 1/1.8, the range of the sRGB and classic Mac
///   conventions: an extreme gamma could wash out a colour and hide text drawn in it) and
///   `pHYs` (square pixels only: a decoder honouring a non-square aspect ratio would stretch
///   the image);
/// - every other chunk, critical or ancillary, is refused: text (`tEXt`, `zTXt`, `iTXt`) and
///   `eXIf` carry content the user is not shown, `acTL`/`fcTL`/`fdAT` animate, and `iCCP`,
///   `cHRM`, `sBIT`, `bKGD`, `hIST`, `sPLT` can change the colours rendered, so that what is
///   displayed would depend on the decoder, not only on the hashed bytes;
/// - the zlib stream of the `IDAT`s inflates to exactly the size the header implies (every pass
///   of an interlaced image), each scanline starts with a filter type 0…4, and no byte follows
///   the stream. It is inflated in a fixed 16 KiB window, never held whole: a small file that
///   claims a large image costs time bounded by ``maximumRawBytes``, not memory.
///
/// ``check(_:)`` then compares the header (and the palette, when given) with the characteristics
/// the display announces.
public struct UAFTransactionPNG: Sendable, Hashable {
    /// Largest PNG file accepted: a transaction image's (`Schema.TransactionImage.maximumBytes`,
    /// which also sizes the request bodies that carry them).
    public static let maximumBytes = TransactionImage.maximumBytes
    /// Largest width or height accepted (transaction confirmation displays are small).
    public static let maximumDimension: UInt32 = 2048
    /// Largest decompressed image data (scanlines with their filter bytes) accepted.
    public static let maximumRawBytes = 4 * 1024 * 1024

    /// What the image is, in the terms a display announces it can show: the `IHDR` fields,
    /// and the `PLTE` entries as `plte` when the image has a palette (nil otherwise).
    public let characteristics: UAFDisplayPNGCharacteristics

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Parses and checks `bytes` as a PNG file (see the type's description).
    ///
    /// - Throws: ``UAFTransactionPNGError``: `tooLarge` for a file, a dimension or image data past
    ///   the bounds, `unsupportedChunk` for a chunk other than IHDR, PLTE, tRNS, IDAT, IEND, sRGB,
    ///   gAMA and pHYs, or an sRGB, gAMA or pHYs whose value PNG allows but this check does not
    ///   (a gamma outside 1/2.6…1/1.8, non-square pixels), `malformed` for everything else.
    public init(bytes: [UInt8]) throws(UAFTransactionPNGError) {
        guard bytes.count <= Self.maximumBytes else {
            throw UAFTransactionPNGError(.tooLarge, "the file is larger than \(Self.maximumBytes) bytes")
        }
        guard bytes.count >= 8, Array(bytes[0..<8]) == Self.signature else {
            throw UAFTransactionPNGError(.malformed, "no PNG signature")
        }
        var reader = ChunkReader(bytes: bytes, offset: 8)
        // IHDR (§11.2.2).
        let ihdr = try reader.next()
        guard ihdr.type == "IHDR", ihdr.data.count == 13 else {
            throw UAFTransactionPNGError(.malformed, "the first chunk is not a 13-byte IHDR")
        }
        let d = ihdr.data
        let width = Self.u32(d, 0)
        let height = Self.u32(d, 4)
        guard width >= 1, height >= 1, width < 1 << 31, height < 1 << 31 else {
            throw UAFTransactionPNGError(.malformed, "IHDR width or height is 0 or past 2^31-1")
        }
        guard width <= Self.maximumDimension, height <= Self.maximumDimension else {
            throw UAFTransactionPNGError(.tooLarge, "width or height past \(Self.maximumDimension)")
        }
        let (bitDepth, colorType) = (d[d.startIndex + 8], d[d.startIndex + 9])
        let allowedDepths: [UInt8]
        switch colorType {
        case 0: allowedDepths = [1, 2, 4, 8, 16]
        case 3: allowedDepths = [1, 2, 4, 8]
        case 2, 4, 6: allowedDepths = [8, 16]
        default: throw UAFTransactionPNGError(.malformed, "IHDR colour type \(colorType) does not exist")
        }
        guard allowedDepths.contains(bitDepth) else {
            throw UAFTransactionPNGError(.malformed, "IHDR bit depth \(bitDepth) is not allowed with colour type \(colorType)")
        }
        let (compression, filter, interlace) = (d[d.startIndex + 10], d[d.startIndex + 11], d[d.startIndex + 12])
        guard compression == 0, filter == 0, interlace <= 1 else {
            throw UAFTransactionPNGError(.malformed, "IHDR compression, filter or interlace method is not one PNG defines")
        }
        let layout = try Self.scanlines(width: width, height: height, bitDepth: bitDepth, colorType: colorType, interlaced: interlace == 1)

        // PLTE, tRNS, IDAT…, IEND (§5.6 chunk ordering).
        var palette: [UAFRGBPaletteEntry]?
        var sawTransparency = false
        var rendering = RenderingChunks()
        let inflater = try ScanlineInflater(layout: layout)
        var idat = IDATState.before
        while true {
            let chunk = try reader.next()
            switch chunk.type {
            case "PLTE":
                guard palette == nil, idat == .before, !sawTransparency else {
                    throw UAFTransactionPNGError(.malformed, "PLTE repeated, or after tRNS or the image data")
                }
                guard colorType != 0, colorType != 4 else {
                    throw UAFTransactionPNGError(.malformed, "PLTE in a greyscale image")
                }
                let entries = chunk.data.count / 3
                guard chunk.data.count % 3 == 0, (1...256).contains(entries), colorType != 3 || entries <= 1 << Int(bitDepth) else {
                    throw UAFTransactionPNGError(.malformed, "PLTE length is not 3 × 1…256 entries the bit depth can index")
                }
                let p = chunk.data
                palette = (0..<entries).map { i in
                    let at = p.startIndex + 3 * i
                    return UAFRGBPaletteEntry(r: UInt16(p[at]), g: UInt16(p[at + 1]), b: UInt16(p[at + 2]))
                }
            case "tRNS":
                guard !sawTransparency, idat == .before else {
                    throw UAFTransactionPNGError(.malformed, "tRNS repeated or after the image data")
                }
                let fits: Bool
                switch colorType {
                case 0: fits = chunk.data.count == 2
                case 2: fits = chunk.data.count == 6
                case 3: fits = palette.map { !chunk.data.isEmpty && chunk.data.count <= $0.count } ?? false
                default: fits = false
                }
                guard fits else { throw UAFTransactionPNGError(.malformed, "tRNS does not fit the colour type (or precedes PLTE)") }
                sawTransparency = true
            case "sRGB", "gAMA", "pHYs":
                try rendering.read(chunk.type, chunk.data, afterPalette: palette != nil, afterImageData: idat != .before)
            case "IDAT":
                guard idat != .after else { throw UAFTransactionPNGError(.malformed, "IDAT chunks are not consecutive") }
                if colorType == 3, palette == nil { throw UAFTransactionPNGError(.malformed, "a palette image without PLTE") }
                idat = .inside
                try inflater.feed(chunk.data)
            case "IEND":
                guard chunk.data.isEmpty else { throw UAFTransactionPNGError(.malformed, "IEND is not empty") }
                guard idat != .before else { throw UAFTransactionPNGError(.malformed, "no IDAT") }
                guard reader.atEnd else { throw UAFTransactionPNGError(.malformed, "bytes after IEND") }
                try inflater.finish()
                characteristics = UAFDisplayPNGCharacteristics(
                    width: width, height: height, bitDepth: bitDepth, colorType: colorType, compression: compression, filter: filter,
                    interlace: interlace, plte: palette)
                return
            default:
                throw UAFTransactionPNGError(.unsupportedChunk, "chunk \(chunk.type) is not one of IHDR, PLTE, tRNS, IDAT, IEND, sRGB, gAMA, pHYs")
            }
            if chunk.type != "IDAT", idat == .inside { idat = .after }
        }
    }

    /// Checks that the image is what `announced` (Metadata Statement
    /// `DisplayPNGCharacteristicsDescriptor`) says: every IHDR field, and the palette when
    /// `plte` is given.
    ///
    /// - Throws: ``UAFTransactionPNGError`` `characteristicsMismatch` naming the first field that differs.
    public func check(_ announced: UAFDisplayPNGCharacteristics) throws(UAFTransactionPNGError) {
        let image = characteristics
        let fields: [(String, UInt32, UInt32)] = [
            ("width", image.width, announced.width), ("height", image.height, announced.height),
            ("bitDepth", UInt32(image.bitDepth), UInt32(announced.bitDepth)), ("colorType", UInt32(image.colorType), UInt32(announced.colorType)),
            ("compression", UInt32(image.compression), UInt32(announced.compression)),
            ("filter", UInt32(image.filter), UInt32(announced.filter)), ("interlace", UInt32(image.interlace), UInt32(announced.interlace)),
        ]
        for (name, actual, expected) in fields where actual != expected {
            throw UAFTransactionPNGError(.characteristicsMismatch, "IHDR \(name) differs from tcDisplayPNGCharacteristics.\(name)")
        }
        if let plte = announced.plte, plte != (image.plte ?? []) {
            throw UAFTransactionPNGError(.characteristicsMismatch, "PLTE differs from tcDisplayPNGCharacteristics.plte")
        }
    }

    // MARK: - Layout

    /// Rows of one length: a pass of an interlaced image, or the whole image.
    struct Scanlines: Hashable {
        /// Bytes per row, its filter-type byte included.
        let rowLength: Int
        let rows: Int
    }

    /// The scanlines the image data must inflate to (§7.2, §8.2 Adam7 passes), empty passes left out.
    static func scanlines(width: UInt32, height: UInt32, bitDepth: UInt8, colorType: UInt8, interlaced: Bool) throws(UAFTransactionPNGError) -> [Scanlines] {
        let samples: UInt64 = [0: 1, 2: 3, 3: 1, 4: 2, 6: 4][colorType] ?? 1
        let bitsPerPixel = samples * UInt64(bitDepth)
        // (x start, y start, x step, y step) of each pass.
        let passes: [(UInt64, UInt64, UInt64, UInt64)] =
            interlaced ? [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)] : [(0, 0, 1, 1)]
        var layout: [Scanlines] = []
        var total: UInt64 = 0
        for (x0, y0, dx, dy) in passes {
            let w = UInt64(width) > x0 ? (UInt64(width) - x0 + dx - 1) / dx : 0
            let h = UInt64(height) > y0 ? (UInt64(height) - y0 + dy - 1) / dy : 0
            guard w > 0, h > 0 else { continue }
            let rowLength = 1 + (w * bitsPerPixel + 7) / 8
            total += rowLength * h
            guard total <= UInt64(maximumRawBytes) else {
                throw UAFTransactionPNGError(.tooLarge, "the image data would inflate past \(maximumRawBytes) bytes")
            }
            layout.append(Scanlines(rowLength: Int(rowLength), rows: Int(h)))
        }
        return layout
    }

    private enum IDATState { case before, inside, after }

    // MARK: - Rendering chunks

    /// The ancillary chunks accepted beside the image (see the type's description), read strictly:
    /// the PNG specification's length, value and ordering rules (§11.3.3.2 gAMA, §11.3.3.5 sRGB,
    /// §11.3.5.3 pHYs, §5.6), then the narrower values a transaction image may carry.
    struct RenderingChunks {
        /// Encoding gammas accepted, ×100000 as gAMA stores them: 1/2.6 … 1/1.8 (45455, sRGB's
        /// 1/2.2, is what libpng, GIMP and Windows write beside an sRGB chunk).
        static let gammas: ClosedRange<UInt32> = 38_462...55_556
        private(set) var sawSRGB = false
        private(set) var sawGamma = false
        private(set) var sawPhysical = false

        /// Checks one sRGB, gAMA or pHYs chunk.
        ///
        /// - Parameters:
        ///   - afterPalette: a PLTE came before (sRGB and gAMA must precede it).
        ///   - afterImageData: an IDAT came before (all three must precede the image data).
        mutating func read(_ type: String, _ data: ArraySlice<UInt8>, afterPalette: Bool, afterImageData: Bool) throws(UAFTransactionPNGError) {
            switch type {
            case "sRGB":
                guard !sawSRGB, !afterPalette, !afterImageData else {
                    throw UAFTransactionPNGError(.malformed, "sRGB repeated, or after PLTE or the image data")
                }
                // One byte: the rendering intent, 0 perceptual … 3 absolute colorimetric.
                guard data.count == 1, data[data.startIndex] <= 3 else {
                    throw UAFTransactionPNGError(.malformed, "sRGB is not one byte of rendering intent 0-3")
                }
                sawSRGB = true
            case "gAMA":
                guard !sawGamma, !afterPalette, !afterImageData else {
                    throw UAFTransactionPNGError(.malformed, "gAMA repeated, or after PLTE or the image data")
                }
                guard data.count == 4 else { throw UAFTransactionPNGError(.malformed, "gAMA is not 4 bytes") }
                let gamma = UAFTransactionPNG.u32(data, 0)
                guard gamma != 0, gamma < 1 << 31 else { throw UAFTransactionPNGError(.malformed, "gAMA is 0 or past 2^31-1") }
                guard Self.gammas.contains(gamma) else {
                    throw UAFTransactionPNGError(.unsupportedChunk, "gAMA is outside 1/2.6-1/1.8")
                }
                sawGamma = true
            default:  // pHYs
                guard !sawPhysical, !afterImageData else {
                    throw UAFTransactionPNGError(.malformed, "pHYs repeated or after the image data")
                }
                // Pixels per unit on x and on y (each at most 2^31-1), then the unit: 0 unknown
                // (an aspect ratio only), 1 the metre.
                guard data.count == 9 else { throw UAFTransactionPNGError(.malformed, "pHYs is not 9 bytes") }
                let x = UAFTransactionPNG.u32(data, 0)
                let y = UAFTransactionPNG.u32(data, 4)
                let unit = data[data.startIndex + 8]
                guard x < 1 << 31, y < 1 << 31, unit <= 1 else {
                    throw UAFTransactionPNGError(.malformed, "pHYs pixels per unit past 2^31-1, or a unit other than 0 and 1")
                }
                guard x != 0, x == y else {
                    throw UAFTransactionPNGError(.unsupportedChunk, "pHYs does not describe square pixels")
                }
                sawPhysical = true
            }
        }
    }

    private static func u32(_ b: ArraySlice<UInt8>, _ at: Int) -> UInt32 {
        let i = b.startIndex + at
        return UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }

    // MARK: - Chunks

    /// Reads chunks (§5.3): length, type, data, CRC-32 over type and data.
    struct ChunkReader {
        let bytes: [UInt8]
        var offset: Int
        var atEnd: Bool { offset == bytes.count }

        mutating func next() throws(UAFTransactionPNGError) -> (type: String, data: ArraySlice<UInt8>) {
            guard bytes.count - offset >= 12 else { throw UAFTransactionPNGError(.malformed, "a chunk is cut short, or IEND is missing") }
            let length = Int(UAFTransactionPNG.u32(bytes[...], offset))
            guard length < 1 << 31, length <= bytes.count - offset - 12 else {
                throw UAFTransactionPNGError(.malformed, "a chunk length runs past the end")
            }
            let typeBytes = bytes[(offset + 4)..<(offset + 8)]
            // Four ASCII letters, the third (reserved bit) upper case (§5.4).
            guard typeBytes.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }),
                (0x41...0x5A).contains(typeBytes[typeBytes.startIndex + 2])
            else { throw UAFTransactionPNGError(.malformed, "a chunk type is not four letters with the reserved bit clear") }
            let data = bytes[(offset + 8)..<(offset + 8 + length)]
            let crc = bytes.withUnsafeBufferPointer { buffer in
                UInt32(truncatingIfNeeded: CZlib.crc32(0, buffer.baseAddress! + offset + 4, uInt(4 + length)))
            }
            guard crc == UAFTransactionPNG.u32(bytes[...], offset + 8 + length) else {
                throw UAFTransactionPNGError(.malformed, "a chunk CRC does not match")
            }
            offset += 12 + length
            return (String(decoding: typeBytes, as: UTF8.self), data)
        }
    }

    // MARK: - Image data

    /// Inflates the concatenated IDAT data through a fixed window, checking each scanline's
    /// filter type byte and the exact total (§9.2, §10).
    ///
    /// A class: zlib keeps a pointer back to its `z_stream` and refuses one that moved, so the
    /// stream lives in memory of its own, freed in `deinit`.
    final class ScanlineInflater {
        private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        private var output = [UInt8](repeating: 0, count: 16 * 1024)
        private let layout: [Scanlines]
        private var segment = 0
        private var rowsLeft: Int
        private var positionInRow = 0
        private var ended = false

        init(layout: [Scanlines]) throws(UAFTransactionPNGError) {
            self.layout = layout
            rowsLeft = layout.first?.rows ?? 0
            stream.initialize(to: z_stream())
            guard inflateInit_(stream, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
                stream.deinitialize(count: 1)
                stream.deallocate()
                throw UAFTransactionPNGError(.malformed, "zlib could not start")
            }
        }

        deinit {
            inflateEnd(stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
        }

        func feed(_ data: ArraySlice<UInt8>) throws(UAFTransactionPNGError) {
            guard !data.isEmpty else { return }
            guard !ended else { throw UAFTransactionPNGError(.malformed, "image data after the end of the zlib stream") }
            var failure: UAFTransactionPNGError?
            data.withUnsafeBufferPointer { input in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress!)
                stream.pointee.avail_in = uInt(input.count)
                while stream.pointee.avail_in > 0, failure == nil, !ended {
                    let before = stream.pointee.avail_in
                    let (status, produced) = output.withUnsafeMutableBufferPointer { out in
                        stream.pointee.next_out = out.baseAddress!
                        stream.pointee.avail_out = uInt(out.count)
                        let status = inflate(stream, Z_NO_FLUSH)
                        return (status, out.count - Int(stream.pointee.avail_out))
                    }
                    guard status == Z_OK || status == Z_STREAM_END, status == Z_STREAM_END || produced > 0 || stream.pointee.avail_in < before else {
                        failure = UAFTransactionPNGError(.malformed, "the image data is not a valid zlib stream")
                        break
                    }
                    do throws(UAFTransactionPNGError) { try consume(produced) } catch { failure = error }
                    if status == Z_STREAM_END {
                        ended = true
                        if stream.pointee.avail_in > 0, failure == nil {
                            failure = UAFTransactionPNGError(.malformed, "bytes after the end of the zlib stream")
                        }
                    }
                }
                stream.pointee.next_in = nil
                stream.pointee.avail_in = 0
            }
            if let failure { throw failure }
        }

        /// The stream ended and gave exactly every scanline.
        func finish() throws(UAFTransactionPNGError) {
            guard ended else { throw UAFTransactionPNGError(.malformed, "the zlib stream is cut short") }
            guard segment == layout.count else {
                throw UAFTransactionPNGError(.malformed, "the image data is shorter than the header implies")
            }
        }

        /// Walks the first `count` bytes of `output` along the scanlines.
        private func consume(_ count: Int) throws(UAFTransactionPNGError) {
            var i = 0
            while i < count {
                guard segment < layout.count else {
                    throw UAFTransactionPNGError(.malformed, "the image data is longer than the header implies")
                }
                if positionInRow == 0, output[i] > 4 {
                    throw UAFTransactionPNGError(.malformed, "a scanline's filter type is not 0-4")
                }
                let rowLength = layout[segment].rowLength
                let take = min(rowLength - positionInRow, count - i)
                i += take
                positionInRow += take
                if positionInRow == rowLength {
                    positionInRow = 0
                    rowsLeft -= 1
                    if rowsLeft == 0 {
                        segment += 1
                        rowsLeft = segment < layout.count ? layout[segment].rows : 0
                    }
                }
            }
        }
    }
}

/// A refused `image/png` transaction content: which rule (``code``) and a fixed detail (chunk
/// names, fields and bounds; never the content).
public struct UAFTransactionPNGError: CodedError {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, CaseIterable {
            case malformed = "png_malformed"
            case unsupportedChunk = "png_unsupported_chunk"
            case tooLarge = "png_too_large"
            case characteristicsMismatch = "png_characteristics_mismatch"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        /// Not a PNG file the specification allows (signature, chunk, CRC, header, order, image data).
        public static let malformed = Code(.malformed)
        /// A chunk other than IHDR, PLTE, tRNS, IDAT, IEND, sRGB, gAMA and pHYs, or one of the
        /// last three with a value a transaction image may not carry.
        public static let unsupportedChunk = Code(.unsupportedChunk)
        /// The file, a dimension or the image data is past the bounds.
        public static let tooLarge = Code(.tooLarge)
        /// The image is not what tcDisplayPNGCharacteristics announce.
        public static let characteristicsMismatch = Code(.characteristicsMismatch)
        public static var allCases: [Code] { Base.allCases.map(Code.init) }
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let detail: String
    public let file: String
    public let line: Int

    public init(_ code: Code, _ detail: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }
}

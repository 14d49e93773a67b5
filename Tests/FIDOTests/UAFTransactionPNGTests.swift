import Crypto
import FIDO
import JSON
import Schema
import Testing
import TestSupport

/// `image/png` transaction content (UAF Protocol §3.5.2): `UAFTransactionPNG`'s strict checks,
/// each refusal with its code, and verification against every form shown.
@Suite struct UAFTransactionPNGTests {
    typealias P = TestPNG

    func code(_ bytes: [UInt8], _ characteristics: UAFDisplayPNGCharacteristics? = nil) -> UAFTransactionPNGError.Code? {
        do throws(UAFTransactionPNGError) {
            let png = try UAFTransactionPNG(bytes: bytes)
            if let characteristics { try png.check(characteristics) }
            return nil
        } catch { return error.code }
    }

    static let palette = P.chunk("PLTE", [0, 0, 0, 255, 255, 255, 255, 0, 0])
    /// Two entries: what a 1-bit palette image can index.
    static let twoColours = P.chunk("PLTE", [0, 0, 0, 255, 255, 255])

    @Test(arguments: [
        (UInt8(0), UInt8(1)), (0, 2), (0, 4), (0, 8), (0, 16), (2, 8), (2, 16), (3, 1), (3, 2), (3, 4), (3, 8), (4, 8), (4, 16), (6, 8), (6, 16),
    ])
    func everyColourTypeAndBitDepthPNGAllowsIsAccepted(colorType: UInt8, bitDepth: UInt8) throws {
        let bytes = P.make(width: 7, height: 3, bitDepth: bitDepth, colorType: colorType, extra: colorType == 3 ? [Self.twoColours] : [])
        let png = try UAFTransactionPNG(bytes: bytes).characteristics
        #expect(png.width == 7 && png.height == 3 && png.bitDepth == bitDepth && png.colorType == colorType)
        #expect(png.compression == 0 && png.filter == 0 && png.interlace == 0)
        try UAFTransactionPNG(bytes: bytes).check(UAFDisplayPNGCharacteristics(width: 7, height: 3, bitDepth: bitDepth, colorType: colorType))
        #expect(png.plte?.count == (colorType == 3 ? 2 : nil))
    }

    @Test func anInterlacedImageInflatesToItsSevenPasses() throws {
        // 3×3, 8-bit grey, Adam7: passes 1, 4, 5, 6 (two rows) and 7 are non-empty: 2+2+3+2·2+4 bytes.
        let exact = P.make(width: 3, height: 3, interlace: 1, raw: [UInt8](repeating: 0, count: 15))
        #expect(code(exact, UAFDisplayPNGCharacteristics(width: 3, height: 3, bitDepth: 8, colorType: 0, interlace: 1)) == nil)
        #expect(code(P.make(width: 3, height: 3, interlace: 1, raw: [UInt8](repeating: 0, count: 14))) == .malformed)
        #expect(code(P.make(width: 3, height: 3, interlace: 1, raw: [UInt8](repeating: 0, count: 16))) == .malformed)
    }

    @Test func theZlibStreamMaySpanSeveralIDATChunks() throws {
        let stream = P.zlibStored(P.defaultRaw(width: 5, height: 5, bitsPerPixel: 8))
        let ihdr = P.chunk("IHDR", P.bigEndian(5) + P.bigEndian(5) + [8, 0, 0, 0, 0])
        let split = P.signature + ihdr + P.chunk("IDAT", Array(stream[0..<7])) + P.chunk("IDAT", []) + P.chunk("IDAT", Array(stream[7...]))
            + P.chunk("IEND", [])
        #expect(code(split) == nil)
        // IDATs must be consecutive.
        let apart = P.signature + ihdr + P.chunk("IDAT", Array(stream[0..<7])) + P.chunk("tRNS", [0, 1]) + P.chunk("IDAT", Array(stream[7...]))
            + P.chunk("IEND", [])
        #expect(code(apart) == .malformed)
    }

    @Test func malformedFilesAreRefused() {
        let good = P.make(width: 4, height: 4)
        #expect(code(good) == nil)
        var signature = good
        signature[1] = 0x51
        #expect(code(signature) == .malformed)
        var crc = good
        crc[8 + 8 + 13] ^= 1  // the IHDR CRC's first byte
        #expect(code(crc) == .malformed)
        #expect(code(good + [0]) == .malformed, "a byte after IEND")
        #expect(code(Array(good.dropLast(12))) == .malformed, "no IEND")
        #expect(code(Array(good.prefix(20))) == .malformed, "cut short")
        #expect(code(P.make(width: 0, height: 4)) == .malformed)
        #expect(code(P.make(width: 4, height: 4, bitDepth: 4, colorType: 2)) == .malformed, "RGB at 4 bits")
        #expect(code(P.make(width: 4, height: 4, colorType: 5)) == .malformed, "no colour type 5")
        #expect(code(P.make(width: 4, height: 4, interlace: 2)) == .malformed)
        #expect(code(P.make(width: 4, height: 4, raw: [0, 1, 2, 3, 4] + [5, 1, 2, 3, 4] + [UInt8](repeating: 0, count: 10))) == .malformed, "filter 5")
        #expect(code(P.make(width: 4, height: 4, raw: [UInt8](repeating: 0, count: 19))) == .malformed, "a byte short")
        #expect(code(P.make(width: 4, height: 4, raw: [UInt8](repeating: 0, count: 21))) == .malformed, "a byte over")
        // Not a zlib stream at all.
        let ihdr = P.chunk("IHDR", P.bigEndian(4) + P.bigEndian(4) + [8, 0, 0, 0, 0])
        #expect(code(P.signature + ihdr + P.chunk("IDAT", [0x12, 0x34, 0x56]) + P.chunk("IEND", [])) == .malformed)
        // A zlib stream followed by more bytes in the same IDAT.
        let stream = P.zlibStored(P.defaultRaw(width: 4, height: 4, bitsPerPixel: 8))
        #expect(code(P.signature + ihdr + P.chunk("IDAT", stream + [0]) + P.chunk("IEND", [])) == .malformed)
        #expect(code(P.signature + ihdr + P.chunk("IEND", [])) == .malformed, "no IDAT")
        #expect(code(P.signature + ihdr + P.chunk("IDAT", stream) + P.chunk("IEND", [0])) == .malformed, "IEND with data")
        #expect(code(P.signature + P.chunk("IHDR", [0, 0, 0, 4]) + P.chunk("IEND", [])) == .malformed, "short IHDR")
        // The chunk type's reserved bit (third letter upper case) and letters only.
        #expect(code(P.signature + ihdr + P.chunk("IDaT", stream) + P.chunk("IEND", [])) == .malformed)
    }

    @Test func palettesFollowTheirRules() {
        #expect(code(P.make(width: 4, height: 4, bitDepth: 2, colorType: 3)) == .malformed, "a palette image without PLTE")
        #expect(code(P.make(width: 4, height: 4, colorType: 0, extra: [Self.palette])) == .malformed, "PLTE in a grey image")
        let five = P.chunk("PLTE", [UInt8](repeating: 7, count: 15))
        #expect(code(P.make(width: 4, height: 4, bitDepth: 2, colorType: 3, extra: [five])) == .malformed, "5 entries at 2 bits")
        #expect(code(P.make(width: 4, height: 4, bitDepth: 8, colorType: 3, extra: [P.chunk("PLTE", [1, 2])])) == .malformed)
        #expect(code(P.make(width: 4, height: 4, colorType: 2, extra: [Self.palette])) == nil, "a suggested palette for RGB")
        #expect(code(P.make(width: 4, height: 4, colorType: 2, extra: [Self.palette, Self.palette])) == .malformed, "two PLTEs")
        // tRNS: of its colour type's length, after PLTE.
        #expect(code(P.make(width: 4, height: 4, bitDepth: 8, colorType: 3, extra: [Self.palette, P.chunk("tRNS", [0, 255])])) == nil)
        #expect(code(P.make(width: 4, height: 4, bitDepth: 8, colorType: 3, extra: [P.chunk("tRNS", [0]), Self.palette])) == .malformed)
        #expect(code(P.make(width: 4, height: 4, colorType: 0, extra: [P.chunk("tRNS", [0, 1, 2])])) == .malformed)
        #expect(code(P.make(width: 4, height: 4, colorType: 6, extra: [P.chunk("tRNS", [0, 1])])) == .malformed)
    }

    @Test func chunksBeyondTheImageAreRefused() {
        for type in ["tEXt", "zTXt", "iTXt", "iCCP", "cHRM", "sBIT", "bKGD", "hIST", "sPLT", "tIME", "acTL", "fcTL", "eXIf", "abCd", "ABCD"] {
            #expect(code(P.make(width: 4, height: 4, extra: [P.chunk(type, [1, 2, 3])])) == .unsupportedChunk, "\(type)")
        }
        // After the image data too (where tEXt and tIME may legally stand).
        let ihdr = P.chunk("IHDR", P.bigEndian(4) + P.bigEndian(4) + [8, 0, 0, 0, 0])
        let idat = P.chunk("IDAT", P.zlibStored(P.defaultRaw(width: 4, height: 4, bitsPerPixel: 8)))
        #expect(code(P.signature + ihdr + idat + P.chunk("tEXt", Array("Comment\0pay 1000".utf8)) + P.chunk("IEND", [])) == .unsupportedChunk)
    }

    // MARK: - The rendering chunks real encoders write

    static let sRGB = P.chunk("sRGB", [0])
    /// 1/2.2 ×100000, as libpng writes it beside sRGB.
    static let gAMA = P.chunk("gAMA", P.bigEndian(45_455))
    /// 3780 pixels per metre (96 dpi) on both axes.
    static let pHYs = P.chunk("pHYs", P.bigEndian(3_780) + P.bigEndian(3_780) + [1])

    @Test func sRGBGammaAndPhysicalSizeAsEncodersWriteThemAreAccepted() throws {
        // libpng / Windows order: sRGB, gAMA, pHYs before the image data.
        let grey = P.make(width: 8, height: 6, extra: [Self.sRGB, Self.gAMA, Self.pHYs])
        #expect(code(grey, UAFDisplayPNGCharacteristics(width: 8, height: 6, bitDepth: 8, colorType: 0)) == nil)
        // In a palette image sRGB and gAMA precede PLTE; pHYs may follow it.
        let indexed = P.make(width: 8, height: 6, bitDepth: 2, colorType: 3, extra: [Self.gAMA, Self.sRGB, Self.palette, Self.pHYs, P.chunk("tRNS", [0])])
        let png = try UAFTransactionPNG(bytes: indexed)
        #expect(png.characteristics.plte == [UAFRGBPaletteEntry(r: 0, g: 0, b: 0), UAFRGBPaletteEntry(r: 255, g: 255, b: 255), UAFRGBPaletteEntry(r: 255, g: 0, b: 0)])
        // Every rendering intent, the gamma range's ends, an aspect ratio without unit.
        for intent in UInt8(0)...3 { #expect(code(P.make(width: 2, height: 2, extra: [P.chunk("sRGB", [intent])])) == nil) }
        for gamma in [UInt32(38_462), 55_556] { #expect(code(P.make(width: 2, height: 2, extra: [P.chunk("gAMA", P.bigEndian(gamma))])) == nil) }
        #expect(code(P.make(width: 2, height: 2, extra: [P.chunk("pHYs", P.bigEndian(1) + P.bigEndian(1) + [0])])) == nil)
    }

    @Test func renderingChunksAreReadStrictly() {
        func with(_ extra: [[UInt8]]) -> UAFTransactionPNGError.Code? { code(P.make(width: 4, height: 4, bitDepth: 8, colorType: 2, extra: extra)) }
        // Lengths and values PNG fixes: malformed.
        #expect(with([P.chunk("sRGB", [])]) == .malformed)
        #expect(with([P.chunk("sRGB", [0, 0])]) == .malformed)
        #expect(with([P.chunk("sRGB", [4])]) == .malformed, "no rendering intent 4")
        #expect(with([P.chunk("gAMA", [0, 0, 177])]) == .malformed)
        #expect(with([P.chunk("gAMA", P.bigEndian(0))]) == .malformed)
        #expect(with([P.chunk("gAMA", P.bigEndian(0x8000_0000))]) == .malformed)
        #expect(with([P.chunk("pHYs", P.bigEndian(3_780) + P.bigEndian(3_780))]) == .malformed, "8 bytes")
        #expect(with([P.chunk("pHYs", P.bigEndian(3_780) + P.bigEndian(3_780) + [2])]) == .malformed, "unit 2")
        #expect(with([P.chunk("pHYs", P.bigEndian(0x8000_0000) + P.bigEndian(0x8000_0000) + [1])]) == .malformed)
        // Once each.
        #expect(with([Self.sRGB, Self.sRGB]) == .malformed)
        #expect(with([Self.gAMA, Self.gAMA]) == .malformed)
        #expect(with([Self.pHYs, Self.pHYs]) == .malformed)
        // sRGB and gAMA before PLTE (here a suggested palette of an RGB image).
        #expect(with([Self.palette, Self.sRGB]) == .malformed)
        #expect(with([Self.palette, Self.gAMA]) == .malformed)
        #expect(with([Self.palette, Self.pHYs]) == nil)
        // A CRC that does not match: malformed, as for every chunk.
        #expect(with([P.chunk("sRGB", [0], crc: 0)]) == .malformed)
        // Values PNG allows but a transaction image may not carry: unsupported.
        #expect(with([P.chunk("gAMA", P.bigEndian(38_461))]) == .unsupportedChunk, "below 1/2.6")
        #expect(with([P.chunk("gAMA", P.bigEndian(100_000))]) == .unsupportedChunk, "linear")
        #expect(with([P.chunk("gAMA", P.bigEndian(1))]) == .unsupportedChunk)
        #expect(with([P.chunk("pHYs", P.bigEndian(3_780) + P.bigEndian(3_779) + [1])]) == .unsupportedChunk, "not square")
        #expect(with([P.chunk("pHYs", P.bigEndian(0) + P.bigEndian(0) + [0])]) == .unsupportedChunk)
        // After the image data: out of place.
        let ihdr = P.chunk("IHDR", P.bigEndian(4) + P.bigEndian(4) + [8, 0, 0, 0, 0])
        let idat = P.chunk("IDAT", P.zlibStored(P.defaultRaw(width: 4, height: 4, bitsPerPixel: 8)))
        for late in [Self.sRGB, Self.gAMA, Self.pHYs] {
            #expect(code(P.signature + ihdr + idat + late + P.chunk("IEND", [])) == .malformed)
        }
    }

    @Test func boundsAreEnforcedBeforeInflating() {
        #expect(code(P.make(width: 2049, height: 1, raw: [])) == .tooLarge)
        #expect(code(P.make(width: 1, height: 2049, raw: [])) == .tooLarge)
        // 2048×2048 RGBA at 16 bits would be 32 MiB of image data: refused from the header alone.
        #expect(code(P.make(width: 2048, height: 2048, bitDepth: 16, colorType: 6, raw: [])) == .tooLarge)
        // A file over 32 KiB, whatever it holds.
        let big = P.make(width: 200, height: 200, colorType: 2)
        #expect(big.count > UAFTransactionPNG.maximumBytes)
        #expect(code(big) == .tooLarge)
        // A small file claiming 4 MB of grey pixels is inflated in a fixed window and found short.
        #expect(code(P.make(width: 2000, height: 2000, raw: [0])) == .malformed)
    }

    @Test func theImageMustBeWhatItsCharacteristicsAnnounce() {
        let grey = P.make(width: 8, height: 6)
        let announced = UAFDisplayPNGCharacteristics(width: 8, height: 6, bitDepth: 8, colorType: 0)
        #expect(code(grey, announced) == nil)
        for changed in [
            UAFDisplayPNGCharacteristics(width: 9, height: 6, bitDepth: 8, colorType: 0),
            UAFDisplayPNGCharacteristics(width: 8, height: 5, bitDepth: 8, colorType: 0),
            UAFDisplayPNGCharacteristics(width: 8, height: 6, bitDepth: 16, colorType: 0),
            UAFDisplayPNGCharacteristics(width: 8, height: 6, bitDepth: 8, colorType: 2),
            UAFDisplayPNGCharacteristics(width: 8, height: 6, bitDepth: 8, colorType: 0, interlace: 1),
            UAFDisplayPNGCharacteristics(width: 8, height: 6, bitDepth: 8, colorType: 0, compression: 1),
            UAFDisplayPNGCharacteristics(width: 8, height: 6, bitDepth: 8, colorType: 0, filter: 1),
        ] {
            #expect(code(grey, changed) == .characteristicsMismatch, "\(changed)")
        }
        // A fixed palette must be the image's.
        let indexed = P.make(width: 8, height: 6, bitDepth: 2, colorType: 3, extra: [Self.palette])
        let entries = [UAFRGBPaletteEntry(r: 0, g: 0, b: 0), UAFRGBPaletteEntry(r: 255, g: 255, b: 255), UAFRGBPaletteEntry(r: 255, g: 0, b: 0)]
        #expect(code(indexed, UAFDisplayPNGCharacteristics(width: 8, height: 6, bitDepth: 2, colorType: 3, plte: entries)) == nil)
        #expect(
            code(indexed, UAFDisplayPNGCharacteristics(width: 8, height: 6, bitDepth: 2, colorType: 3, plte: Array(entries.prefix(2))))
                == .characteristicsMismatch)
    }

    // MARK: - Verification against the forms shown

    @Test func theAssertionMustSignTheHashOfOneFormShown() throws {
        let context = UAFResponseContext(appID: "https://example.test/uaf/facets", trustedFacetIDs: ["https://example.test"])
        let authenticator = SoftUAFAuthenticator(facetID: "https://example.test")
        let registration = UAFRegistrationRequest(
            header: UAFOperationHeader(upv: .v1_2, op: "Reg", appID: context.appID, serverData: "sd-1"), challenge: "c1", username: "alice",
            policy: .acceptAll)
        let registered = try #require(
            try UAFRegistrationVerifier(context: context).verify(
                UAFMessageDecoding.response(try authenticator.register(registration)), expectedChallenge: "c1", serverData: "sd-1",
                at: MetadataTestPKI.verificationTime
            ).first)
        let record = UAFRegistrationRecord(
            aaid: registered.aaid, keyID: registered.keyID, publicKey: registered.publicKey.bytes, keyEncoding: registered.publicKey.encoding,
            signatureAlgorithm: registered.publicKey.algorithm, signCounter: 0, attestationType: registered.attestation.tag)
        let small = P.make(width: 4, height: 4)
        let large = P.make(width: 8, height: 8)
        let forms = [
            UAFTransaction(contentType: "image/png", content: Base64URL.encode(small), tcDisplayPNGCharacteristics: .init(width: 4, height: 4, bitDepth: 8, colorType: 0)),
            UAFTransaction(contentType: "image/png", content: Base64URL.encode(large), tcDisplayPNGCharacteristics: .init(width: 8, height: 8, bitDepth: 8, colorType: 0)),
        ]
        let shown = [UAFShownTransaction(content: small), UAFShownTransaction(content: large)]
        let request = UAFAuthenticationRequest(
            header: UAFOperationHeader(upv: .v1_2, op: "Auth", appID: context.appID, serverData: "sd-2"), challenge: "c2", transaction: forms,
            policy: .acceptAll)
        func verify(_ response: String) throws(UAFError) -> UAFVerifiedAuthentication {
            try UAFAuthenticationVerifier(context: context).verify(
                UAFMessageDecoding.response(response), expectedChallenge: "c2", serverData: "sd-2", shown: shown
            ) { _, _ in record }[0]
        }
        // The authenticator whose display takes 8×8 images shows and signs the second form.
        authenticator.display = UAFDisplayPNGCharacteristics(width: 8, height: 8, bitDepth: 8, colorType: 0)
        #expect(try verify(try authenticator.authenticate(request)).confirmedTransaction)
        authenticator.display = nil
        #expect(try verify(try authenticator.authenticate(request)).confirmedTransaction)
        // Content that was not among the forms sent: refused.
        let other = #expect(throws: UAFError.self) { _ = try verify(try authenticator.authenticate(request, transactionContent: P.make(width: 4, height: 5))) }
        #expect(other?.code == .transactionContentHashMismatch)
        // The hashes survive their sealed form.
        let sealed = try JSONValueEncoder().encodeToBytes(shown)
        #expect(try JSONValueDecoder().decode([UAFShownTransaction].self, from: sealed) == shown)
    }
}

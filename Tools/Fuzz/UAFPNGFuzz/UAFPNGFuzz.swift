import FIDO
import FuzzSupport
import Schema

/// `image/png` transaction content: `UAFTransactionPNG(bytes:)`, the strict PNG checker that runs
/// on every PNG a relying party asks a UAF authenticator to show.
///
/// Properties: refusals are `UAFTransactionPNGError`s (typed throws); an accepted file is within
/// the bounds, its fields are the IHDR bytes of the input, the colour type and bit depth are a
/// pair PNG allows, a palette image has its palette, and the image passes `check` against its
/// own characteristics (and fails it against another width). Inflation runs in a fixed window,
/// so the allocation bound holds for a small file that claims a large image.
@main
enum UAFPNGFuzz {
    static func main() { Fuzz.run(testOneInput) }

    static let testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let bytes = Fuzz.bytes(data, size)
        guard let parsed = try? UAFTransactionPNG(bytes: bytes) else { return 0 }
        let png = parsed.characteristics
        if bytes.count > UAFTransactionPNG.maximumBytes { Fuzz.fail("a file past the size bound was accepted") }
        if png.width == 0 || png.height == 0 || png.width > UAFTransactionPNG.maximumDimension || png.height > UAFTransactionPNG.maximumDimension {
            Fuzz.fail("dimensions outside the bounds")
        }
        func u32(_ at: Int) -> UInt32 { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        if u32(16) != png.width || u32(20) != png.height || bytes[24] != png.bitDepth || bytes[25] != png.colorType || bytes[28] != png.interlace {
            Fuzz.fail("fields are not the IHDR bytes")
        }
        let allowed: [UInt8: [UInt8]] = [0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16]]
        if !(allowed[png.colorType]?.contains(png.bitDepth) ?? false) { Fuzz.fail("a colour type and bit depth PNG does not allow") }
        if bytes[26] != png.compression || bytes[27] != png.filter { Fuzz.fail("fields are not the IHDR bytes") }
        if png.colorType == 3, png.plte == nil { Fuzz.fail("a palette image without its palette") }
        do throws(UAFTransactionPNGError) { try parsed.check(png) } catch { Fuzz.fail("an image fails its own characteristics") }
        var other = png
        other.width &+= 1
        if (try? parsed.check(other)) != nil { Fuzz.fail("another width passed the check") }
        return 0
    }
}

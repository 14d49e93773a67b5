/// `DisplayPNGCharacteristicsDescriptor` (UAF Authenticator Metadata §3.6): the display a PNG
/// transaction content is made for.
///
/// One type for every place that carries it: a transaction's images (``TransactionImage``, the
/// transaction API and `signet.transaction.changed.v2`) and the UAF protocol messages
/// (`FIDO.UAFTransaction`, `FIDO.UAFAssertionMessage`), whose checks
/// (`FIDO.UAFTransactionPNG.check(_:)`) take it as it is. JSON members as the specification
/// names them.
public struct UAFDisplayPNGCharacteristics: Codable, Sendable, Hashable {
    public var width: UInt32
    public var height: UInt32
    public var bitDepth: UInt8
    public var colorType: UInt8
    public var compression: UInt8
    public var filter: UInt8
    public var interlace: UInt8
    /// The palette of a colour-type 3 image (`rgbPaletteEntry[]`), when the display has a fixed one.
    public var plte: [UAFRGBPaletteEntry]?
    public init(
        width: UInt32, height: UInt32, bitDepth: UInt8, colorType: UInt8, compression: UInt8 = 0, filter: UInt8 = 0, interlace: UInt8 = 0,
        plte: [UAFRGBPaletteEntry]? = nil
    ) {
        self.width = width
        self.height = height
        self.bitDepth = bitDepth
        self.colorType = colorType
        self.compression = compression
        self.filter = filter
        self.interlace = interlace
        self.plte = plte
    }

    /// Members in ascending byte order (``TransactionDetails/canonicalJSON``).
    var canonicalJSON: String {
        var out = "{\"bitDepth\":\(bitDepth),\"colorType\":\(colorType),\"compression\":\(compression),\"filter\":\(filter),\"height\":\(height),"
        out += "\"interlace\":\(interlace)"
        if let plte { out += ",\"plte\":[" + plte.map { "{\"b\":\($0.b),\"g\":\($0.g),\"r\":\($0.r)}" }.joined(separator: ",") + "]" }
        return out + ",\"width\":\(width)}"
    }
}

/// `rgbPaletteEntry` (UAF Authenticator Metadata §3.6): one palette colour.
public struct UAFRGBPaletteEntry: Codable, Sendable, Hashable {
    public var r: UInt16
    public var g: UInt16
    public var b: UInt16
    public init(r: UInt16, g: UInt16, b: UInt16) {
        self.r = r
        self.g = g
        self.b = b
    }
}

/// Rendering a symbol as a PNG or SVG image.
///
/// Both images are black modules on white with a quiet zone of `border` light modules around
/// the symbol; ISO/IEC 18004 §6.3.8 asks for 4, which the defaults give. `scale` is the number
/// of pixels (PNG) or user units (SVG) per module.
extension QRCode {
    /// The accepted scales in pixels per module. 32 pixels per module make a version-40
    /// symbol with a 16-module border 6,688 pixels wide, about 45 MB before compression.
    public static let scaleRange: ClosedRange<Int> = 1...32

    /// The accepted quiet-zone widths in modules.
    public static let borderRange: ClosedRange<Int> = 0...16

    /// The width and height of the rendered image, in pixels or SVG units:
    /// `(size + 2 * border) * scale`.
    ///
    /// - Parameters:
    ///   - scale: Pixels per module, within ``scaleRange``.
    ///   - border: Quiet-zone modules on each side, within ``borderRange``.
    public func imageSize(scale: Int = 4, border: Int = 4) -> Int {
        (size + 2 * border) * scale
    }

    // MARK: - PNG

    /// The symbol as a PNG image: 8-bit grayscale, black (0) dark modules on white (255).
    ///
    /// The file has an `IHDR`, a single zlib-compressed `IDAT` and an `IEND` chunk; width and
    /// height are ``imageSize(scale:border:)``. A version-3 enrolment code at the default
    /// scale is about 500 bytes.
    ///
    /// - Parameters:
    ///   - scale: Pixels per module, within ``scaleRange``.
    ///   - border: Quiet-zone modules on each side, within ``borderRange``.
    /// - Returns: The complete PNG file.
    /// - Important: `scale` or `border` out of range is a programming error and traps.
    public func pngData(scale: Int = 4, border: Int = 4) -> [UInt8] {
        Self.checkRendering(scale: scale, border: border)
        let side = imageSize(scale: scale, border: border)
        let writer = PNGWriter(width: side, height: side)
        return writer.encode { row, column in
            isDark(pixelRow: row, pixelColumn: column, scale: scale, border: border) ? 0 : 255
        }
    }

    /// Whether the pixel at `pixelRow`, `pixelColumn` of the rendered image lies on a dark
    /// module; pixels of the quiet zone are light.
    private func isDark(pixelRow: Int, pixelColumn: Int, scale: Int, border: Int) -> Bool {
        let row = pixelRow / scale - border
        let column = pixelColumn / scale - border
        guard (0..<size).contains(row), (0..<size).contains(column) else { return false }
        return self[row, column]
    }

    // MARK: - SVG

    /// The symbol as a standalone SVG document: a white background and one black `<path>`.
    ///
    /// The path is drawn in module units (the `viewBox` is `size + 2 * border` wide) and holds
    /// one rectangle per horizontal run of dark modules, `M{x} {y}h{length}v1h-{length}z`, so
    /// adjacent modules share edges and the document stays small; `shape-rendering` asks for
    /// crisp edges. The `width` and `height` attributes are ``imageSize(scale:border:)``.
    ///
    /// - Parameters:
    ///   - scale: Units per module for `width` and `height`, within ``scaleRange``.
    ///   - border: Quiet-zone modules on each side, within ``borderRange``.
    /// - Returns: The SVG document, UTF-8 text.
    /// - Important: `scale` or `border` out of range is a programming error and traps.
    public func svg(scale: Int = 4, border: Int = 4) -> String {
        Self.checkRendering(scale: scale, border: border)
        let units = size + 2 * border
        let pixels = imageSize(scale: scale, border: border)
        var path = ""
        path.reserveCapacity(darkModuleCount * 4)
        for row in 0..<size {
            for run in darkRuns(inRow: row) {
                path += "M\(run.column + border) \(row + border)h\(run.length)v1h-\(run.length)z"
            }
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\(pixels)" height="\(pixels)" \
            viewBox="0 0 \(units) \(units)" shape-rendering="crispEdges">
            <rect width="\(units)" height="\(units)" fill="#ffffff"/>
            <path fill="#000000" d="\(path)"/>
            </svg>

            """
    }

    /// Traps for a scale or border outside its range.
    private static func checkRendering(scale: Int, border: Int) {
        precondition(scaleRange.contains(scale), "QR scale \(scale) outside \(scaleRange)")
        precondition(borderRange.contains(border), "QR border \(border) outside \(borderRange)")
    }
}

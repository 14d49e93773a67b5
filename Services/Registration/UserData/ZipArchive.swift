import CZlib
import FoundationEssentials

/// A minimal ZIP writer (APPNOTE 6.3.x): stored entries (no compression), UTF-8 names, no
/// ZIP64 (an archive stays well under 4 GiB: it carries one user's data). CRC-32 from zlib.
struct ZipArchive {
    private var body: [UInt8] = []
    private var central: [UInt8] = []
    private var count = 0
    private let time: UInt16
    private let date: UInt16

    /// An empty archive whose entries carry `modified` (MS-DOS time, UTC, 2-second precision).
    init(modified: Date = Date()) {
        var calendar = Calendar(identifier: .gregorian)
        // .gmt, not TimeZone(identifier: "UTC"): named zones need FoundationInternationalization.
        calendar.timeZone = .gmt
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: modified)
        time = UInt16((c.hour ?? 0) << 11 | (c.minute ?? 0) << 5 | (c.second ?? 0) / 2)
        date = UInt16(max(0, (c.year ?? 1980) - 1980) << 9 | (c.month ?? 1) << 5 | (c.day ?? 1))
    }

    /// Adds a file.
    mutating func add(_ name: String, _ data: [UInt8]) {
        let nameBytes = Array(name.utf8)
        let crc = data.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }
        let offset = UInt32(body.count)
        // Local file header (§4.3.7): version 2.0, bit 11 (UTF-8 names), method 0 (stored).
        body += le32(0x0403_4B50) + le16(20) + le16(0x0800) + le16(0) + le16(time) + le16(date)
        body += le32(crc) + le32(UInt32(data.count)) + le32(UInt32(data.count)) + le16(UInt16(nameBytes.count)) + le16(0)
        body += nameBytes + data
        // Central directory header (§4.3.12).
        central += le32(0x0201_4B50) + le16(20) + le16(20) + le16(0x0800) + le16(0) + le16(time) + le16(date)
        central += le32(crc) + le32(UInt32(data.count)) + le32(UInt32(data.count)) + le16(UInt16(nameBytes.count))
        central += le16(0) + le16(0) + le16(0) + le16(0) + le32(0) + le32(offset) + nameBytes
        count += 1
    }

    /// The archive's bytes.
    var bytes: [UInt8] {
        // End of central directory record (§4.3.16).
        let end = le32(0x0605_4B50) + le16(0) + le16(0) + le16(UInt16(count)) + le16(UInt16(count))
            + le32(UInt32(central.count)) + le32(UInt32(body.count)) + le16(0)
        return body + central + end
    }

    private func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    private func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8(v >> 24)] }
}

/// A minimal DER writer for the structures Signet builds itself (SubjectPublicKeyInfo,
/// ECDSA-Sig-Value). Parsing of certificates is OpenSSL's job.
public enum DER {
    public static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        var bytes: [UInt8] = []
        var v = n
        while v > 0 {
            bytes.insert(UInt8(v & 0xFF), at: 0)
            v >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    public static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag] + length(content.count) + content }
    public static func sequence(_ items: [UInt8]...) -> [UInt8] { tlv(0x30, items.flatMap { $0 }) }
    public static func bitString(_ content: [UInt8]) -> [UInt8] { tlv(0x03, [0] + content) }
    public static let null: [UInt8] = [0x05, 0x00]

    /// A positive INTEGER from unsigned big-endian bytes (minimal, with a sign byte if needed).
    public static func unsignedInteger(_ bytes: [UInt8]) -> [UInt8] {
        var b = Array(bytes.drop { $0 == 0 })
        if b.isEmpty { b = [0] }
        if b[0] & 0x80 != 0 { b.insert(0, at: 0) }
        return tlv(0x02, b)
    }

    /// An OBJECT IDENTIFIER from its dotted form.
    public static func oid(_ dotted: String) -> [UInt8] {
        let arcs = dotted.split(separator: ".").compactMap { UInt64($0) }
        precondition(arcs.count >= 2, "bad OID")
        // The first two arcs share one base-128 subidentifier (X.690 §8.19.4), which may
        // exceed one byte (e.g. 2.999).
        var body: [UInt8] = []
        for arc in [arcs[0] * 40 + arcs[1]] + arcs.dropFirst(2) {
            var chunk: [UInt8] = [UInt8(arc & 0x7F)]
            var v = arc >> 7
            while v > 0 {
                chunk.insert(UInt8(v & 0x7F) | 0x80, at: 0)
                v >>= 7
            }
            body += chunk
        }
        return tlv(0x06, body)
    }
}

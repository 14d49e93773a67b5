/// TPM manufacturers, as AIK certificates name them in their subjectAltName
/// (`tcg-at-tpmManufacturer`, a string "id:" followed by eight hex digits: the four-byte TCG
/// vendor ID).
///
/// The accepted vendors are the product implementations of the TCG TPM Vendor ID Registry,
/// version 1.06 revision 0.94. Two identifiers that only test tools use are recognised but
/// accepted only when a verifier is explicitly put in test mode
/// (``TPMAttestation/acceptsTestManufacturers``): `FFFFF1D0`, the FIDO Alliance conformance
/// tools, and `00000000`, the W3C WebAuthn L3 §16 test vectors.
public struct TPMManufacturer: Sendable, Hashable, CustomStringConvertible {
    /// The four-byte vendor ID, e.g. 0x494E5443 ("INTC").
    public let id: UInt32

    public init(id: UInt32) { self.id = id }

    /// Parses `id:XXXXXXXX` (hex digits in either case); nil for anything else.
    public init?(attributeValue: String) {
        let utf8 = Array(attributeValue.utf8)
        guard utf8.count == 11, utf8.starts(with: Array("id:".utf8)) else { return nil }
        var id: UInt32 = 0
        for c in utf8[3...] {
            let nibble: UInt8
            switch c {
            case 0x30...0x39: nibble = c - 0x30
            case 0x41...0x46: nibble = c - 0x41 + 10
            case 0x61...0x66: nibble = c - 0x61 + 10
            default: return nil
            }
            id = id << 4 | UInt32(nibble)
        }
        self.id = id
    }

    /// `id:XXXXXXXX`, upper-case.
    public var description: String {
        let hex = String(id, radix: 16, uppercase: true)
        return "id:" + String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// Whether the vendor is in the TCG registry.
    public var isRegistered: Bool { Self.registered[id] != nil }

    /// Whether this is one of the test-tool identifiers (FIDO conformance, W3C test vectors).
    public var isTestIdentifier: Bool { Self.testIdentifiers.contains(id) }

    /// The vendor's name, for registered vendors.
    public var vendorName: String? { Self.registered[id] }

    /// FIDO Alliance conformance tools.
    public static let fidoConformance = TPMManufacturer(id: 0xFFFF_F1D0)
    /// W3C WebAuthn L3 §16 test vectors ("WebAuthn Test").
    public static let w3cTestVectors = TPMManufacturer(id: 0x0000_0000)

    private static let testIdentifiers: Set<UInt32> = [fidoConformance.id, w3cTestVectors.id]

    /// TCG TPM Vendor ID Registry v1.06 r0.94, §4.1 product implementations.
    private static let registered: [UInt32: String] = [
        0x414D_4400: "AMD",
        0x414E_5400: "Ant Group",
        0x4154_4D4C: "Atmel",
        0x4252_434D: "Broadcom",
        0x4353_434F: "Cisco",
        0x464C_5953: "Flyslice Technologies",
        0x524F_4343: "Fuzhou Rockchip",
        0x474F_4F47: "Google",
        0x4850_4900: "HPI",
        0x4850_4500: "HPE",
        0x4849_5349: "Huawei",
        0x4942_4D00: "IBM",
        0x4946_5800: "Infineon",
        0x494E_5443: "Intel",
        0x4C45_4E00: "Lenovo",
        0x4D53_4654: "Microsoft",
        0x4E53_4D20: "National Semiconductor",
        0x4E54_5A00: "Nationz",
        0x4E54_4300: "Nuvoton Technology",
        0x5143_4F4D: "Qualcomm",
        0x534D_534E: "Samsung",
        0x534E_5300: "Sinosun",
        0x534D_5343: "SMSC",
        0x5354_4D20: "ST Microelectronics",
        0x5458_4E00: "Texas Instruments",
        0x5745_4300: "Winbond",
    ]
}

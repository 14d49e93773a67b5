/// A mailbox: an `addr-spec` (`local@domain`) and an optional display name.
///
/// Only plain addresses are taken: printable ASCII without spaces, angle brackets, quotes or
/// commas, one `@` with a non-empty local part and a dotted domain, at most 254 characters
/// (RFC 5321 §4.5.3.1). That covers every address a user can register and keeps the SMTP
/// envelope free of quoting. CR, LF and NUL anywhere, in the address or the display name,
/// are refused as header injection.
///
/// The display name may be any text; ``headerValue`` quotes it (RFC 5322 §3.2.4) or, when it
/// is not ASCII, writes it as RFC 2047 encoded-words.
public struct EmailAddress: Sendable, Hashable, CustomStringConvertible {
    /// The `local@domain` part, as given.
    public let address: String
    /// The display name (`Signet`), if any.
    public let displayName: String?

    /// The longest address SMTP carries (RFC 5321 §4.5.3.1.3, a path of 256 with its brackets).
    public static let maximumLength = 254

    /// A mailbox from an address and an optional display name.
    ///
    /// - Parameters:
    ///   - address: `local@domain`, printable ASCII.
    ///   - displayName: The name shown by mail readers; empty counts as none.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/headerInjection``
    ///   when either contains CR, LF or NUL, ``DeliveryError/Code-swift.struct/invalidAddress``
    ///   when the address is not a plain `local@domain`.
    public init(_ address: String, displayName: String? = nil) throws {
        if HeaderText.containsLineBreak(address) {
            throw DeliveryError(.headerInjection, detail: "line break in an address")
        }
        if let displayName, HeaderText.containsLineBreak(displayName) {
            throw DeliveryError(.headerInjection, detail: "line break in a display name")
        }
        try Self.validate(address)
        self.address = address
        self.displayName = (displayName?.isEmpty ?? true) ? nil : displayName
    }

    /// The domain part, after the `@`.
    public var domain: Substring {
        address[address.index(after: address.lastIndex(of: "@")!)...]
    }

    /// The mailbox as a header writes it: `alice@example.com`, `Signet <no-reply@signet.example>`,
    /// `"Doe, Jane" <jane@example.com>`, or `=?utf-8?B?…?= <…>`.
    public var headerValue: String {
        guard let displayName else { return address }
        return "\(HeaderText.phrase(displayName)) <\(address)>"
    }

    /// The SMTP envelope form, `<local@domain>` (RFC 5321 §4.1.2 `Path`).
    public var envelopeValue: String { "<\(address)>" }

    /// The domain only (`example.com`): an address is personal data and stays out of logs.
    public var description: String { "mailbox at \(domain)" }

    // MARK: - Validation

    // The characters refused in a local part or domain besides controls and non-ASCII: those
    // that would need quoting (RFC 5322 §3.2.3 specials) or break the envelope.
    private static let refused: Set<UInt8> = Set("()<>[]:;@\\,\" ".utf8)

    private static func validate(_ address: String) throws {
        let bytes = Array(address.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumLength else {
            throw DeliveryError(.invalidAddress, detail: "address length \(bytes.count)")
        }
        let ats = bytes.indices.filter { bytes[$0] == UInt8(ascii: "@") }
        guard ats.count == 1, let at = ats.first else {
            throw DeliveryError(.invalidAddress, detail: "address needs exactly one @")
        }
        let local = bytes[..<at]
        let domain = bytes[(at + 1)...]
        guard !local.isEmpty, local.count <= 64 else {
            throw DeliveryError(.invalidAddress, detail: "local part length \(local.count)")
        }
        for byte in bytes where byte != UInt8(ascii: "@") {
            guard byte > 0x20, byte < 0x7F, !refused.contains(byte) else {
                throw DeliveryError(.invalidAddress, detail: "character \(byte) not allowed")
            }
        }
        guard local.first != UInt8(ascii: "."), local.last != UInt8(ascii: "."),
            !containsDoubleDot(local)
        else {
            throw DeliveryError(.invalidAddress, detail: "misplaced dot in the local part")
        }
        let labels = domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2,
            labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 && $0.first != UInt8(ascii: "-") && $0.last != UInt8(ascii: "-") })
        else {
            throw DeliveryError(.invalidAddress, detail: "domain is not a dotted host name")
        }
        for byte in domain where !isDomainByte(byte) {
            throw DeliveryError(.invalidAddress, detail: "character \(byte) not allowed in the domain")
        }
    }

    private static func containsDoubleDot(_ bytes: ArraySlice<UInt8>) -> Bool {
        zip(bytes, bytes.dropFirst()).contains { $0 == UInt8(ascii: ".") && $1 == UInt8(ascii: ".") }
    }

    private static func isDomainByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."):
            true
        default:
            false
        }
    }
}

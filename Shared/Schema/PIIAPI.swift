import FoundationEssentials

/// `POST /v1/internal/tenants/{tenant}/pii` (pii service, internal token): store a value.
public struct PIIStoreRequest: Codable, Sendable, Equatable {
    /// The opaque subject the value belongs to (registration's user handle); crypto-shredding
    /// works per subject.
    public var subject: String
    /// `email`, `phone` or `name` (a full name).
    public var kind: String
    public var value: String
    /// The reference to store it under, chosen by the caller (``PIIReferenceText``), so that
    /// it can withdraw the value without having heard the answer; the vault chooses one when
    /// absent, and refuses one taken or withdrawn (409 `pii_ref_unavailable`).
    public var ref: String?
    public init(subject: String, kind: String, value: String, ref: String? = nil) {
        self.subject = subject
        self.kind = kind
        self.value = value
        self.ref = ref
    }
}

/// A vault reference's form: `pii_` and 32 lower-case hex digits.
public enum PIIReferenceText {
    public static func isWellFormed(_ ref: String) -> Bool {
        let bytes = ref.utf8
        guard bytes.count == 36, ref.hasPrefix("pii_") else { return false }
        return bytes.dropFirst(4).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// A stored value's reference and masked form (`e•••@example.com`, `+4•••••••89`).
public struct PIIReference: Codable, Sendable, Equatable {
    public var ref: String
    public var masked: String
    public init(ref: String, masked: String) {
        self.ref = ref
        self.masked = masked
    }
}

/// `POST /v1/internal/tenants/{tenant}/pii/{ref}/read`: why the caller reads it (audited).
public struct PIIReadRequest: Codable, Sendable, Equatable {
    public var purpose: String
    public init(purpose: String) { self.purpose = purpose }
}

/// The plaintext, to the internal caller only.
public struct PIIValue: Codable, Sendable, Equatable {
    public var kind: String
    public var value: String
    public init(kind: String, value: String) {
        self.kind = kind
        self.value = value
    }
}

/// Validation and masking of the personal values the vault keeps.
public enum PIIRules {
    /// E.164: `+`, 7-15 digits, not starting with 0.
    public static func isValidPhone(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count >= 8, u.count <= 16, u[0] == UInt8(ascii: "+"), u[1] != UInt8(ascii: "0") else { return false }
        return u.dropFirst().allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// A practical address check: one `@`, a non-empty local part of printable ASCII without
    /// spaces, a domain with a dot, at most 254 characters.
    public static func isValidEmail(_ s: String) -> Bool {
        guard s.utf8.count <= 254, s.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return false }
        let parts = s.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].count <= 64, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix(".")
        else { return false }
        return true
    }

    /// `e•••@example.com`.
    public static func maskEmail(_ s: String) -> String {
        guard let at = s.firstIndex(of: "@"), let first = s.first else { return "•••" }
        return "\(first)•••\(s[at...])"
    }

    /// `+4•••••••89`: the first digit (country code) and the last two.
    public static func maskPhone(_ s: String) -> String {
        let digits = Array(s.dropFirst())
        guard digits.count >= 4 else { return "+•••" }
        return "+\(digits[0])" + String(repeating: "•", count: digits.count - 3) + String(digits.suffix(2))
    }
}

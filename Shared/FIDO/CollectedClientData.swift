import FoundationEssentials
import Tokens
import JSON

/// The client data a browser or platform collected and the authenticator signed over
/// (`clientDataJSON`, WebAuthn L3 §5.8.1).
///
/// Parsed strictly but not against a template (§5.8.1.2: clients may add members, and the
/// order of members is not fixed):
/// - at most ``maximumLength`` bytes of UTF-8 JSON, one object, no duplicate member names;
/// - `type`, `challenge` and `origin` are required strings;
/// - `crossOrigin`, when present, is a boolean; `topOrigin`, when present, is a string;
/// - `tokenBinding`, when it is an object, has a string `status` (and an `id` string when the
///   status is `present`). Some old clients sent a bare string there (e.g. `"unused"`); that
///   is ignored, as Token Binding is gone from L3 and carries nothing then.
/// Unknown members are ignored.
public struct CollectedClientData: Sendable {
    /// Token Binding state the client reported (a WebAuthn Level 2 member, reserved in L3).
    public struct TokenBinding: Sendable, Hashable {
        /// `present`, `supported`, or whatever else the client sent.
        public let status: String
        /// The Token Binding ID (base64url), when present.
        public let id: String?
    }

    /// Largest clientDataJSON accepted, in bytes. Browsers send a few hundred bytes.
    public static let maximumLength = 16_384

    /// `webauthn.create` or `webauthn.get` (other values for e.g. payment extensions).
    public let type: String
    /// The challenge, base64url-encoded by the client.
    public let challenge: String
    /// The origin of the caller, e.g. `https://example.org` or `android:apk-key-hash:…`.
    public let origin: String
    /// Whether the caller was in a cross-origin iframe (absent means false).
    public let crossOrigin: Bool?
    /// The top-level origin, present when the caller was a cross-origin iframe.
    public let topOrigin: String?
    /// Token Binding state, when the client sent it as an object.
    public let tokenBinding: TokenBinding?
    /// The exact bytes received (what is hashed for signatures).
    public let bytes: [UInt8]
    /// Secure Payment Confirmation: what the browser showed (`payment`, present with type
    /// `payment.get`).
    public let payment: PaymentData?

    /// `CollectedClientAdditionalPaymentData` (Secure Payment Confirmation §4.6): the payee,
    /// the total and the instrument the browser displayed to the user before signing.
    public struct PaymentData: Sendable, Hashable {
        public let rpId: String
        public let topOrigin: String
        public let payeeName: String?
        public let payeeOrigin: String?
        public let totalCurrency: String
        public let totalValue: String
        public let instrumentDisplayName: String

        /// Whether the browser displayed this total and payee: same currency, the same amount
        /// as a decimal (`385.0` is `385.00`), and the payee's name.
        public func shows(currency: String, amount: String, payee: String) -> Bool {
            guard totalCurrency == currency, let shown = Decimal(string: totalValue), let expected = Decimal(string: amount) else { return false }
            return shown == expected && payeeName == payee
        }
    }

    /// Parses clientDataJSON.
    ///
    /// - Throws: ``WebAuthnError`` with ``WebAuthnError/Code/malformedClientData``.
    public init(bytes: [UInt8]) throws(WebAuthnError) {
        let step = "§5.8.1 client data"
        func malformed(_ detail: String) -> WebAuthnError { WebAuthnError(.malformedClientData, step: step, detail) }

        guard bytes.count <= Self.maximumLength else { throw malformed("larger than \(Self.maximumLength) bytes") }
        let json: JSONValue
        do {
            json = try JSONParser.parse(bytes, allowingByteOrderMark: true)
        } catch {
            throw malformed("not valid JSON: \(error.reason) at byte \(error.offset)")
        }
        guard case .object = json else { throw malformed("not a JSON object") }
        guard case .string(let type)? = json["type"] else { throw malformed("type must be a string") }
        guard case .string(let challenge)? = json["challenge"] else { throw malformed("challenge must be a string") }
        guard case .string(let origin)? = json["origin"] else { throw malformed("origin must be a string") }

        switch json["crossOrigin"] {
        case nil: crossOrigin = nil
        case .bool(let b)?: crossOrigin = b
        default: throw malformed("crossOrigin must be a boolean")
        }
        switch json["topOrigin"] {
        case nil: topOrigin = nil
        case .string(let s)?: topOrigin = s
        default: throw malformed("topOrigin must be a string")
        }
        switch json["tokenBinding"] {
        case .object?:
            guard case .string(let status)? = json["tokenBinding"]?["status"] else {
                throw malformed("tokenBinding.status must be a string")
            }
            let id: String?
            switch json["tokenBinding"]?["id"] {
            case nil: id = nil
            case .string(let s)?: id = s
            default: throw malformed("tokenBinding.id must be a string")
            }
            if status == "present", id == nil { throw malformed("tokenBinding.id is required when status is present") }
            tokenBinding = TokenBinding(status: status, id: id)
        default:
            tokenBinding = nil
        }
        switch json["payment"] {
        case nil:
            payment = nil
        case .object?:
            let p = json["payment"]
            guard case .string(let rpId)? = p?["rpId"], case .string(let top)? = p?["topOrigin"],
                case .string(let currency)? = p?["total"]?["currency"], case .string(let value)? = p?["total"]?["value"],
                case .string(let instrument)? = p?["instrument"]?["displayName"]
            else { throw malformed("payment needs rpId, topOrigin, total.currency, total.value and instrument.displayName strings") }
            var payeeName: String?
            var payeeOrigin: String?
            if case .string(let n)? = p?["payeeName"] { payeeName = n }
            if case .string(let o)? = p?["payeeOrigin"] { payeeOrigin = o }
            guard payeeName != nil || payeeOrigin != nil else { throw malformed("payment needs payeeName or payeeOrigin") }
            payment = PaymentData(
                rpId: rpId, topOrigin: top, payeeName: payeeName, payeeOrigin: payeeOrigin, totalCurrency: currency, totalValue: value,
                instrumentDisplayName: instrument)
        default:
            throw malformed("payment must be an object")
        }
        if type == "payment.get", payment == nil { throw malformed("payment.get client data needs payment") }
        self.type = type
        self.challenge = challenge
        self.origin = origin
        self.bytes = bytes
    }
}

/// A text message to send through an SMS gateway: recipient, text and an optional sender.
///
/// On the wire it is the JSON object `{"to": "+…", "text": "…", "sender": "…"}` (see
/// ``jsonBody(defaultSender:)``). `description` shows neither the number nor the text.
public struct SMSMessage: Sendable, Hashable, CustomStringConvertible {
    /// The recipient in E.164 form: `+`, a non-zero digit, 7 to 15 digits in all.
    public let to: String
    /// The text; not empty, at most ``maximumTextLength`` characters.
    public let text: String
    /// The sender shown on the phone (an alphanumeric sender id or a number); when nil the
    /// client's default sender, if any, is used.
    public let sender: String?

    /// The longest text accepted: ten concatenated GSM-7 segments. Gateways split longer
    /// texts themselves; a one-time code message is far shorter.
    public static let maximumTextLength = 1530

    /// A message.
    ///
    /// - Parameters:
    ///   - to: The recipient, E.164 (`+15551234567`).
    ///   - text: The text.
    ///   - sender: An optional sender id or number, 1–20 printable characters.
    /// - Throws: ``DeliveryError`` with code ``DeliveryError/Code-swift.struct/invalidAddress``
    ///   for a number that is not E.164 or an unusable sender,
    ///   ``DeliveryError/Code-swift.struct/invalidMessage`` for an empty or too long text.
    public init(to: String, text: String, sender: String? = nil) throws {
        guard Self.isE164(to) else {
            throw DeliveryError(.invalidAddress, detail: "phone number is not E.164")
        }
        guard !text.isEmpty, text.count <= Self.maximumTextLength else {
            throw DeliveryError(.invalidMessage, detail: "SMS text length \(text.count)")
        }
        if let sender {
            guard Self.isUsableSender(sender) else {
                throw DeliveryError(.invalidAddress, detail: "SMS sender is not 1-20 printable characters")
            }
        }
        self.to = to
        self.text = text
        self.sender = sender
    }

    /// The text length only; the number and the text are personal data.
    public var description: String { "SMSMessage(length: \(text.count))" }

    /// Whether `number` is E.164: `+` followed by 7–15 digits, the first not zero.
    public static func isE164(_ number: String) -> Bool {
        let bytes = Array(number.utf8)
        guard bytes.count >= 8, bytes.count <= 16, bytes[0] == UInt8(ascii: "+"), bytes[1] != UInt8(ascii: "0") else {
            return false
        }
        return bytes.dropFirst().allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Whether `sender` can be a sender: 1–20 characters, none of them a control character.
    static func isUsableSender(_ sender: String) -> Bool {
        !sender.isEmpty && sender.count <= 20
            && !sender.unicodeScalars.contains { $0.value < 0x20 || ($0.value >= 0x7F && $0.value < 0xA0) }
    }

    // MARK: - JSON

    /// The gateway request body: `{"to":"+…","text":"…","sender":"…"}` in that order, UTF-8,
    /// with `sender` left out when neither the message nor `defaultSender` has one.
    ///
    /// - Parameter defaultSender: The sender to use when the message has none.
    public func jsonBody(defaultSender: String? = nil) -> String {
        var json = "{\"to\":\(Self.jsonString(to)),\"text\":\(Self.jsonString(text))"
        if let sender = sender ?? defaultSender {
            json += ",\"sender\":\(Self.jsonString(sender))"
        }
        return json + "}"
    }

    /// A JSON string literal (RFC 8259 §7): quotes, backslashes and control characters
    /// escaped, everything else as UTF-8.
    static func jsonString(_ value: String) -> String {
        var result = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar == "\u{2028}" || scalar == "\u{2029}":
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

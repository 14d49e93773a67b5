/// What a message is for, naming a set of templates: `otp`, `transaction_otp`, or any kind a
/// deployment registers templates for.
public struct MessageKind: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The kind's name, e.g. `transaction_otp`.
    public let rawValue: String

    /// A kind by name.
    ///
    /// - Parameter rawValue: The name, e.g. `otp`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A kind from a literal, e.g. `"password_reset"`.
    public init(stringLiteral value: String) { rawValue = value }

    /// A one-time code for signing in or confirming a registration.
    public static let otp: MessageKind = "otp"
    /// A one-time code confirming a transaction; its templates state the amount and the payee.
    public static let transactionOTP: MessageKind = "transaction_otp"

    /// The name.
    public var description: String { rawValue }
}

/// What `SUGGEST_REGISTRATION` and `ENFORCE_REGISTRATION` offer: an ordered list of method
/// sequences the user may register, as authentication rules answer sequences to complete.
///
/// On the wire, `"sequences": [["fido2"], ["totp", "sms_otp"]]` offers a passkey, or TOTP and
/// SMS OTP together; the first sequence is the one to propose first. The older form,
/// `"methods": ["fido2", "totp"]` (any one of these), still reads: each method is a sequence of
/// its own, and a rule read in that form is written back in it, so that rulesets stored before
/// sequences existed read and echo as they were saved.
public struct RegistrationOffer: Sendable, Hashable {
    /// The sequences, in the order the rule gives them; each a non-empty list of methods.
    public let sequences: [[String]]
    /// Whether the rule was written in the older `methods` form (each method a sequence of one).
    public let writtenAsMethods: Bool

    /// An offer of `sequences`, written as `sequences`.
    public init(sequences: [[String]]) {
        self.sequences = sequences
        self.writtenAsMethods = false
    }

    /// An offer in the older form: any one of `methods`, each a sequence of its own.
    public init(methods: [String]) {
        self.sequences = methods.map { [$0] }
        self.writtenAsMethods = true
    }

    /// Every method named by the sequences, once each, in the order they first appear: the
    /// `methods` a suggestion still carries for clients that read only that member.
    public var methods: [String] {
        var seen = Set<String>()
        return sequences.joined().filter { seen.insert($0).inserted }
    }

    /// Whether a sequence of the offer has `method`.
    public func offers(_ method: String) -> Bool {
        sequences.contains { $0.contains(method) }
    }
}

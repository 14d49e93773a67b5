import Crypto
import FoundationEssentials
import Rules
import Schema

/// A sign-in in progress: the sequences the rules left the user, what has been completed, and
/// the method whose challenge is pending. Stored by ``SignInFlowStore``; each change checks
/// the revision it read, so two concurrent steps cannot both succeed.
struct SignInFlow: Sendable {
    enum Status: String, Sendable {
        case inProgress = "IN_PROGRESS"
        case succeeded = "SUCCEEDED"
        case failed = "FAILED"
        case denied = "DENIED"
        case rejected = "REJECTED"
    }

    var id: String
    var tenant: String
    /// Nil until the first method identifies the user, for sign-ins without a username.
    var username: String?
    var status: Status
    var matchedRule: String
    var sequences: [[String]]
    var completed: [String]
    /// base64url ids of credentials used by completed steps.
    var usedCredentials: [String]
    var pendingMethod: String?
    var pendingState: [UInt8]?
    var revision: Int
    var createdAt: Date
    var expiresAt: Date
    /// The transaction this sign-in confirms (`context.transactionId`), if any.
    var transactionId: String? = nil
    /// Each fido2 step's signed data, for a transaction confirmation.
    var evidence: [SignedAssertionEvidence] = []
    /// The signals and context the rules saw at start (the context with a transaction's facts),
    /// kept for a sign-in started without a username only: the rules decide again with them once
    /// a step identifies the user (``SignInCoordinator/decideAgain(_:user:policy:now:)``), which
    /// forgets them; a flow that expires unidentified has them erased by the next purge pass
    /// (``TransientDataPurger``). Nil for a flow started with a username, or stored before they
    /// were kept (migration 194).
    var signals: [String: AnyJSON]? = nil
    var context: [String: AnyJSON]? = nil

    var progress: SequenceProgress { SequenceProgress(sequences: sequences, completed: completed) }

    static func newID() -> String { "si_" + Hex.encode(SecureRandom.bytes(16)) }

    /// Ids are `si_` and 32 hex digits; anything else is not looked up.
    static func isValidID(_ id: String) -> Bool {
        id.utf8.count == 35 && id.hasPrefix("si_") && id.utf8.dropFirst(3).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

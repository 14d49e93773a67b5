import FoundationEssentials

/// The registration service asks every service to erase what it holds about a user (the
/// purge saga of `DELETE /v1/tenants/{tenant}/users/{username}`). Each service deletes its rows
/// for the user in one transaction with the event's dedupe (a replay changes nothing) and
/// answers with an ``ErasurePartCompleted`` tally; the pii service also destroys the user's
/// data key (crypto-shredding).
///
/// It names the user by subject reference, never by username (Kafka keeps it for the topic's
/// retention, beyond the purge's reach): rows built from events are keyed by the reference, and
/// a service whose own rows are keyed by username asks the registration service for the
/// username of the erasure in progress (``ErasureUsername``), which it forgets on completion.
public struct UserPurgeRequested: EventPayload {
    public static let eventType = "signet.registration.user.purge.requested.v2"
    public static let topic = Topic.registration

    public var tenantId: String
    /// `er_` and 32 hex digits.
    public var erasureId: String
    /// The user's opaque subject reference (``SubjectRefFormat``), never the username.
    public var subjectRef: String
    /// The user's opaque subject (base64url of the WebAuthn user handle), which the pii service
    /// keys the user's data key by; absent for a user the registration service never knew.
    public var subject: String?
    public var requestedAt: Date

    public init(tenantId: String, erasureId: String, subjectRef: String, subject: String?, requestedAt: Date) {
        self.tenantId = tenantId
        self.erasureId = erasureId
        self.subjectRef = subjectRef
        self.subject = subject
        self.requestedAt = requestedAt
    }

    public static var fullExample: UserPurgeRequested {
        UserPurgeRequested(
            tenantId: "demo", erasureId: "er_0f1e2d3c4b5a69788796a5b4c3d2e1f0", subjectRef: "s1.bUerVXM0dmFdazr6tUixuPoRWb9nHrqRFYR6w8_r-lc",
            subject: "q2v3AZ9wPp1xE0p0bqS6mT0nL8c4yWc7Gk3hD2sVb1U", requestedAt: Date(timeIntervalSince1970: 1_764_000_000))
    }
    public static var minimalExample: UserPurgeRequested {
        var e = fullExample
        e.subject = nil
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard ErasureIDs.isValid(erasureId) else { throw EventDecodingError.invalidData("erasureId") }
        guard SubjectRefFormat.isValid(subjectRef) else { throw EventDecodingError.invalidData("subjectRef") }
        if let s = subject, !isBase64URL(s, maxBytes: 64) { throw EventDecodingError.invalidData("subject") }
    }
}

/// One service's part of an erasure is done: what it deleted, as counts per kind of data
/// (`credentials`, `sessions`, `transactions`…; a kind with nothing is left out). Published by
/// every service on `signet.registration.erasures`, consumed by the registration service, which
/// completes the erasure when all five have answered. Never names the user.
public struct ErasurePartCompleted: EventPayload {
    public static let eventType = "signet.registration.erasure.part.completed.v1"
    public static let topic = Topic.erasures

    public var tenantId: String
    public var erasureId: String
    /// The service that erased its part (`registration`, `authentication`, `transaction`, `oob`, `pii`).
    public var service: String
    /// Rows (or keys) deleted, by kind.
    public var tallies: [String: Int]
    public var completedAt: Date

    public init(tenantId: String, erasureId: String, service: String, tallies: [String: Int], completedAt: Date) {
        self.tenantId = tenantId
        self.erasureId = erasureId
        self.service = service
        self.tallies = tallies
        self.completedAt = completedAt
    }

    public static var fullExample: ErasurePartCompleted {
        ErasurePartCompleted(
            tenantId: "demo", erasureId: "er_0f1e2d3c4b5a69788796a5b4c3d2e1f0", service: "pii", tallies: ["dataKeys": 1, "values": 2],
            completedAt: Date(timeIntervalSince1970: 1_764_000_001))
    }
    public static var minimalExample: ErasurePartCompleted {
        var e = fullExample
        e.tallies = [:]
        return e
    }

    public func validate() throws {
        guard TenantValidation.isValidTenantID(tenantId) else { throw EventDecodingError.invalidData("tenantId") }
        guard ErasureIDs.isValid(erasureId) else { throw EventDecodingError.invalidData("erasureId") }
        guard ServiceName(rawValue: service) != nil else { throw EventDecodingError.invalidData("service") }
        guard tallies.count <= 32,
            tallies.allSatisfy({ ErasureIDs.isValidKind($0.key) && $0.value >= 0 })
        else { throw EventDecodingError.invalidData("tallies") }
    }
}

/// Erasure ids and tally kinds.
public enum ErasureIDs {
    /// `er_` and 32 lower-case hex digits.
    public static func isValid(_ id: String) -> Bool {
        let u = Array(id.utf8)
        guard u.count == 35, id.hasPrefix("er_") else { return false }
        return u.dropFirst(3).allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// A tally kind: 1-32 ASCII letters (camelCase).
    public static func isValidKind(_ kind: String) -> Bool {
        (1...32).contains(kind.utf8.count) && kind.utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) }
    }
}

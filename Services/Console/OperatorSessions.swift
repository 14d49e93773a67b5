import Crypto
import Foundation

/// An operator's signed-in session of the console.
public struct OperatorSession: Sendable {
    public let username: String
    public let role: OperatorRole
    /// Sent back by the page in `X-CSRF-Token` on every state-changing call.
    public let csrfToken: String
    /// The passkey the operator signed in (or enrolled) with, base64url: a session ends when
    /// the registration service suspends or deletes it (``OperatorSessions/credentialChanged(credentialID:status:now:)``).
    public let credentialID: String
    /// The operator's WebAuthn user handle (base64url) when the sign-in's assertion carried it
    /// (the authentication service checked it against the credential); an erasure of that
    /// user ends the session (``OperatorSessions/userErased(subject:)``).
    public let userHandle: String?
    public let createdAt: ContinuousClock.Instant
    public var lastSeen: ContinuousClock.Instant
}

/// The console's operator sessions and pending passkey enrolments, in memory.
///
/// The cookie holds a random 256-bit token; only its SHA-256 is kept here, so a dump of this
/// table signs nobody in. A session ends after `idleTimeout` without a call or `lifetime` after
/// sign-in, whichever comes first, on sign-out, and as soon as the passkey it was opened with
/// is suspended or deleted or its operator erased (the registration service's events, read by
/// ``OperatorsTenantEvents``). At most `capacity` sessions are kept (the oldest is dropped
/// first).
///
/// - Important: Sessions live in this process: a restart signs every operator out, and several
///   replicas need sticky routing. That suits a console used by a few operators; a shared store
///   is the step after (see README "Admin console").
public actor OperatorSessions {
    private var sessions: [[UInt8]: OperatorSession] = [:]
    private var enrolments: [[UInt8]: (username: String, expires: ContinuousClock.Instant)] = [:]
    /// The operators' tenant's credentials the registration service reported suspended or
    /// deleted (and not resumed since), by base64url id: a sign-in with one of them opens no
    /// session, in case the authentication service's copy of the credentials has not caught up.
    private var inactiveCredentials: [String: ContinuousClock.Instant] = [:]
    private let idleTimeout: Duration
    private let lifetime: Duration
    private let capacity: Int

    public init(idleTimeout: Duration, lifetime: Duration, capacity: Int = 10_000) {
        self.idleTimeout = idleTimeout
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// Opens a session for `username` with `role`, signed in with `credentialID`; returns the
    /// cookie token and the session, or nil when that credential was reported suspended or
    /// deleted.
    public func open(
        username: String, role: OperatorRole, credentialID: String, userHandle: String?, now: ContinuousClock.Instant = .now
    ) -> (token: String, session: OperatorSession)? {
        guard inactiveCredentials[credentialID] == nil else { return nil }
        expire(now: now)
        if sessions.count >= capacity, let oldest = sessions.min(by: { $0.value.createdAt < $1.value.createdAt })?.key {
            sessions[oldest] = nil
        }
        let token = Base64URL.encode(SecureRandom.bytes(32))
        let session = OperatorSession(
            username: username, role: role, csrfToken: Base64URL.encode(SecureRandom.bytes(32)), credentialID: credentialID, userHandle: userHandle,
            createdAt: now, lastSeen: now)
        sessions[SHA256.hash(Array(token.utf8))] = session
        return (token, session)
    }

    /// The live session of a cookie token, its idle clock restarted; nil when there is none.
    public func find(token: String, now: ContinuousClock.Instant = .now) -> OperatorSession? {
        guard token.utf8.count <= 256 else { return nil }
        let key = SHA256.hash(Array(token.utf8))
        guard var session = sessions[key] else { return nil }
        guard now - session.lastSeen < idleTimeout, now - session.createdAt < lifetime else {
            sessions[key] = nil
            return nil
        }
        session.lastSeen = now
        sessions[key] = session
        return session
    }

    /// Ends the session of a cookie token.
    public func close(token: String) {
        sessions[SHA256.hash(Array(token.utf8))] = nil
    }

    /// A credential of the operators' tenant changed status: `suspended` or `deleted` ends
    /// every session signed in with it and keeps new ones from opening; `active` (resumed)
    /// lets new ones open again.
    ///
    /// - Returns: how many sessions ended.
    @discardableResult
    public func credentialChanged(credentialID: String, status: String, now: ContinuousClock.Instant = .now) -> Int {
        guard status != "active" else {
            inactiveCredentials[credentialID] = nil
            return 0
        }
        if inactiveCredentials.count >= capacity, let oldest = inactiveCredentials.min(by: { $0.value < $1.value })?.key {
            inactiveCredentials[oldest] = nil
        }
        inactiveCredentials[credentialID] = now
        return end { $0.credentialID == credentialID }
    }

    /// A user of the operators' tenant is being erased (its credentials go without an event of
    /// their own): ends the sessions of that user handle, and those whose handle is not known
    /// (they sign in again).
    ///
    /// - Returns: how many sessions ended.
    @discardableResult
    public func userErased(subject: String) -> Int {
        end { $0.userHandle == nil || $0.userHandle == subject }
    }

    private func end(where matches: (OperatorSession) -> Bool) -> Int {
        let before = sessions.count
        sessions = sessions.filter { !matches($0.value) }
        return before - sessions.count
    }

    /// Remembers that the registration ceremony of `handle` enrols `username` (for 5 minutes).
    public func expectEnrolment(handle: String, username: String, now: ContinuousClock.Instant = .now) {
        enrolments = enrolments.filter { $0.value.expires > now }
        guard enrolments.count < capacity else { return }
        enrolments[SHA256.hash(Array(handle.utf8))] = (username, now + .seconds(300))
    }

    /// The username the ceremony of `handle` enrols, once: the entry is removed.
    public func takeEnrolment(handle: String, now: ContinuousClock.Instant = .now) -> String? {
        guard let entry = enrolments.removeValue(forKey: SHA256.hash(Array(handle.utf8))), entry.expires > now else { return nil }
        return entry.username
    }

    public var count: Int { sessions.count }

    private func expire(now: ContinuousClock.Instant) {
        sessions = sessions.filter { now - $0.value.lastSeen < idleTimeout && now - $0.value.createdAt < lifetime }
    }
}

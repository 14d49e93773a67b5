import Foundation
import Platform
import Schema

/// What the console takes from the registration service's events about its operators' tenant.
/// The console's listener reads `signet.registration` for this whatever
/// `SIGNET_CONSOLE_EVENT_TOPICS` shows in the feed, and hands every event of it here:
///
/// | event (operators' tenant) | effect |
/// |---|---|
/// | `credential.status.changed` `suspended`/`deleted` | the sessions signed in with that passkey end; a sign-in with it opens none |
/// | `credential.status.changed` `active` | a resumed passkey may open sessions again |
/// | `user.purge.requested` | the sessions of that user handle (and of unknown handles) end: an erasure deletes the user's passkeys without a status event |
/// | `fido.policy.changed` without `userVerification: required` | the provisioner puts `required` back at once (``OperatorsTenantProvisioner/recheck()``) |
///
/// Events of other tenants and types are ignored, as is one that does not decode (the
/// console has no dead-letter topic of its own; the services' consumers report those).
///
/// The listener reads from the end the logs had when it started (``ConsoleEventListener``):
/// what is published while it joins its group is seen too. Sessions do not outlive a restart;
/// the policy is also checked at an interval.
public struct OperatorsTenantEvents: Sendable {
    let tenant: String
    let sessions: OperatorSessions
    let policyWeakened: @Sendable () -> Void
    let logger: Logger

    public init(tenant: String, sessions: OperatorSessions, logger: Logger, policyWeakened: @escaping @Sendable () -> Void) {
        self.tenant = tenant
        self.sessions = sessions
        self.logger = logger
        self.policyWeakened = policyWeakened
    }

    /// Applies one event of `signet.registration` (see the table above).
    public func apply(_ envelope: EventEnvelope) async {
        switch envelope.type {
        case CredentialStatusChanged.eventType:
            guard let e = try? envelope.decode(CredentialStatusChanged.self), e.tenantId == tenant else { return }
            let ended = await sessions.credentialChanged(credentialID: e.credentialId, status: e.status)
            if ended > 0 {
                logger.notice("console sessions ended: their passkey was \(e.status)", metadata: ["signet.console.sessions": "\(ended)"])
            }
        case UserPurgeRequested.eventType:
            guard let e = try? envelope.decode(UserPurgeRequested.self), e.tenantId == tenant, let subject = e.subject else { return }
            let ended = await sessions.userErased(subject: subject)
            if ended > 0 { logger.notice("console sessions ended: an operator is being erased", metadata: ["signet.console.sessions": "\(ended)"]) }
        case FIDOPolicyChanged.eventType:
            guard let e = try? envelope.decode(FIDOPolicyChanged.self), e.tenantId == tenant, e.userVerification != "required" else { return }
            logger.warning("the operators' tenant's FIDO policy no longer requires user verification; putting it back")
            policyWeakened()
        default:
            return
        }
    }
}

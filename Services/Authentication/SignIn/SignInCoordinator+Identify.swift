import FoundationEssentials
import Rules
import Schema

/// A sign-in started without a username (a discoverable passkey, a QR code) was decided on an
/// anonymous user: no registered methods, no failures, no locks. The step that identifies the
/// user has the rules decide again, as the start would have decided with the username.
extension SignInCoordinator {
    /// Decides `flow` again for `user`, who its last completed step identified, with the
    /// signals and context its start was decided on and the user's facts as they were before
    /// that step was counted.
    ///
    /// - DENY (or an action a sign-in does not take): the flow is DENIED.
    /// - TRIGGER_AUTHENTICATION: the flow's sequences become those of the new decision that
    ///   `user` can complete (``completable(_:user:signals:now:)``, as at start) and that account
    ///   for every method completed so far (``SequenceProgress``); none left: FAILED, as a start
    ///   that finds no sequence. The expiry shrinks to the rule's `maxTimeSeconds` from the start.
    /// - ALLOW: the step counts against the sequences the start chose, as before.
    ///
    /// - Important: only for a flow that confirms no transaction: such a flow knows its user from
    ///   the start, and its rules keep to the sequences that sign the details.
    ///
    /// The signals and context (the client's IP among them) are forgotten once decided on: the
    /// flow has its user from here on and is never decided again.
    func decideAgain(_ flow: inout SignInFlow, user: UserFacts, policy: PolicyStore.Compiled, now: Date) {
        defer {
            flow.signals = nil
            flow.context = nil
        }
        guard let signals = flow.signals, let contextFacts = flow.context else {
            // Started before its facts were kept (migration 194): it cannot be decided again, and
            // the decision it has never knew the user.
            flow.status = .failed
            return
        }
        let document = UserFactsLoader.facts(signals: signals, context: contextFacts, user: user, methods: methods, settings: policy.settings, now: now)
        let decision = policy.authentication.evaluate(document)
        flow.matchedRule = decision.matchedRule
        switch decision.action {
        case .allow:
            return
        case .triggerAuthentication:
            let completed = flow.completed
            flow.sequences = completable(decision.sequences, user: user, signals: signals, now: now).filter {
                !SequenceProgress(sequences: [$0], completed: completed).isExhausted
            }
            if flow.sequences.isEmpty { flow.status = .failed }
            let limit = flow.createdAt.addingTimeInterval(Double(decision.maxTimeSeconds ?? RuleAction.defaultMaxTimeSeconds))
            flow.expiresAt = min(flow.expiresAt, limit)
        default:
            flow.status = .denied
        }
    }
}

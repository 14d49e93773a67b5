import Crypto

/// A stored UAF registration, as the authentication side keeps it.
public struct UAFRegistrationRecord: Sendable, Hashable {
    public let aaid: String
    public let keyID: [UInt8]
    public let publicKey: [UInt8]
    public let keyEncoding: UAFKeyEncoding
    public let signatureAlgorithm: UAFSignatureAlgorithm
    public let signCounter: UInt32
    /// The attestation tag it registered with (0x3E07 / 0x3E08), for policies.
    public let attestationType: UAFTag
    /// The metadata statement's `userVerificationDetails` as registration found them, for
    /// policies' `userVerification`; nil when it registered without a statement (or was
    /// stored before Signet kept them).
    public let userVerificationDetails: [[String]]?
    /// The metadata statement's `keyProtection` names as registration found them, for
    /// policies' `keyProtection`; nil as ``userVerificationDetails``.
    public let keyProtection: [String]?

    public init(
        aaid: String, keyID: [UInt8], publicKey: [UInt8], keyEncoding: UAFKeyEncoding, signatureAlgorithm: UAFSignatureAlgorithm,
        signCounter: UInt32, attestationType: UAFTag, userVerificationDetails: [[String]]? = nil, keyProtection: [String]? = nil
    ) {
        self.aaid = aaid
        self.keyID = keyID
        self.publicKey = publicKey
        self.keyEncoding = keyEncoding
        self.signatureAlgorithm = signatureAlgorithm
        self.signCounter = signCounter
        self.attestationType = attestationType
        self.userVerificationDetails = userVerificationDetails
        self.keyProtection = keyProtection
    }

    /// This registration with another signature counter (0: any counter is accepted, for a
    /// caller that judges the counter itself), everything else kept.
    public func withSignCounter(_ signCounter: UInt32) -> UAFRegistrationRecord {
        UAFRegistrationRecord(
            aaid: aaid, keyID: keyID, publicKey: publicKey, keyEncoding: keyEncoding, signatureAlgorithm: signatureAlgorithm,
            signCounter: signCounter, attestationType: attestationType, userVerificationDetails: userVerificationDetails,
            keyProtection: keyProtection)
    }

    /// This registration as a policy judges it in this assertion: the assertion's AAID, KeyID,
    /// algorithm and version, the registration's attestation and metadata characteristics.
    ///
    /// - Important: a record without metadata characteristics (nil) is matched as one without a
    ///   metadata statement: criteria on `userVerification` or `keyProtection` do not match it,
    ///   so an `accepted` one does not accept it and a `disallowed` one does not refuse it.
    func policyDescription(of assertion: UAFAuthenticationAssertion) -> UAFAuthenticatorDescription {
        UAFAuthenticatorDescription(
            aaid: assertion.aaid, keyID: assertion.keyID, signatureAlgorithm: assertion.info.signatureAlgorithm,
            attestationType: attestationType, authenticatorVersion: assertion.info.authenticatorVersion,
            userVerificationDetails: userVerificationDetails, keyProtection: keyProtection)
    }
}

/// One verified authentication assertion.
public struct UAFVerifiedAuthentication: Sendable {
    public let record: UAFRegistrationRecord
    /// The counter to store (the record's own when the authenticator has none: 0).
    public let newSignCounter: UInt32
    /// Whether the user confirmed the transaction (authenticationMode 0x02).
    public let confirmedTransaction: Bool
}

/// Verifies a UAF AuthenticationResponse: UAF Protocol v1.2 §3.5.7.5 ("Authentication
/// Response Processing Rules"), every rule that falls to a server, in order.
///
/// A pure function of its inputs. Single use of the challenge and storing the new counter are
/// the caller's, in one transaction.
public struct UAFAuthenticationVerifier: Sendable {
    public var context: UAFResponseContext
    public var policy: UAFPolicy
    /// Where registered keys are parsed once (``UAFPublicKeyCache``): the records' bytes are
    /// the cache's key, so a record's status is never taken from it.
    public var keys: UAFPublicKeyCache

    public init(context: UAFResponseContext, policy: UAFPolicy = .acceptAll, keys: UAFPublicKeyCache = .shared) {
        self.context = context
        self.policy = policy
        self.keys = keys
    }

    /// - Parameters:
    ///   - response: the AuthenticationResponse.
    ///   - expectedChallenge: the challenge found in the serverData the server issued.
    ///   - serverData: the serverData issued (nil: the caller compared it already).
    ///   - transaction: the transaction sent in the request, if any: its content must be what
    ///     the user confirmed (authenticationMode 0x02 and TransactionContentHash).
    ///   - registrations: the user's registration for an (AAID, KeyID), nil if none.
    /// - Throws: ``UAFError`` naming the first failed rule.
    public func verify(
        _ response: UAFResponse, expectedChallenge: String, serverData: String? = nil, transaction: UAFTransaction? = nil,
        registrations: (String, [UInt8]) -> UAFRegistrationRecord?
    ) throws(UAFError) -> [UAFVerifiedAuthentication] {
        try verify(
            response, expectedChallenge: expectedChallenge, serverData: serverData, shown: try Self.shown(transaction), registrations: registrations)
    }

    /// As ``verify(_:expectedChallenge:serverData:transaction:registrations:)``, with the
    /// transaction given as what was shown.
    ///
    /// - Parameter shown: every form of the transaction content the request carried (the same
    ///   transaction as text or as PNGs of several sizes; the client shows one); empty when it
    ///   carried none. TransactionContentHash must be the hash of one of them (§3.5.7.5 step 4.d).
    public func verify(
        _ response: UAFResponse, expectedChallenge: String, serverData: String? = nil, shown: [UAFShownTransaction],
        registrations: (String, [UInt8]) -> UAFRegistrationRecord?
    ) throws(UAFError) -> [UAFVerifiedAuthentication] {
        let section = "Protocol §3.5.7.5"
        _ = try context.check(response, op: "Auth", serverData: serverData, expectedChallenge: expectedChallenge, section: section)
        var results: [UAFVerifiedAuthentication] = []
        var described: [UAFAuthenticatorDescription] = []
        for message in response.assertions {
            let assertion = try UAFAuthenticationAssertion(bytes: assertionBytes(message, section: section))
            guard let record = registrations(assertion.aaid, assertion.keyID) else {
                throw UAFError(.unknownKeyID, rule: "\(section) step 4.b", "the AAID and KeyID are not a registration of the user")
            }
            let result = try verify(assertion, fcParams: response.fcParams, shown: shown, record: record, section: section)
            if results.contains(where: { $0.record.aaid == record.aaid && $0.record.keyID == record.keyID }) {
                throw UAFError(.duplicateAssertion, rule: "\(section) step 4", "two assertions for the same AAID and KeyID")
            }
            results.append(result)
            described.append(record.policyDescription(of: assertion))
        }
        // 4.a across the assertions: together they satisfy one accepted combination.
        try policy.enforceCombination(described, rule: "\(section) step 4.a")
        return results
    }

    /// The per-assertion rules (step 4), public for tests and benchmarks.
    public func verify(
        _ assertion: UAFAuthenticationAssertion, fcParams: String, transaction: UAFTransaction?, record: UAFRegistrationRecord,
        section: String = "Protocol §3.5.7.5"
    ) throws(UAFError) -> UAFVerifiedAuthentication {
        try verify(assertion, fcParams: fcParams, shown: try Self.shown(transaction), record: record, section: section)
    }

    /// A request's Transaction as what was shown.
    static func shown(_ transaction: UAFTransaction?) throws(UAFError) -> [UAFShownTransaction] {
        guard let transaction else { return [] }
        guard let shown = UAFShownTransaction(transaction) else {
            throw UAFError(.transactionContentHashMismatch, rule: "Protocol §3.5.7.5 step 4.d", "the transaction content sent is not base64url")
        }
        return [shown]
    }

    /// The per-assertion rules (step 4), with the transaction as what was shown.
    public func verify(
        _ assertion: UAFAuthenticationAssertion, fcParams: String, shown: [UAFShownTransaction], record: UAFRegistrationRecord,
        section: String = "Protocol §3.5.7.5"
    ) throws(UAFError) -> UAFVerifiedAuthentication {
        try refuseCriticalExtensions(assertion.extensions, section: section)
        // 4.b: the assertion is from the registered authenticator with its registered algorithm.
        // (AAIDs compare case-insensitively; the assertion's is upper case already.)
        guard assertion.aaid == record.aaid || assertion.aaid == record.aaid.uppercased(), ConstantTime.equals(assertion.keyID, record.keyID) else {
            throw UAFError(.aaidMismatch, rule: "\(section) step 4.b", "the assertion is not from the registration's authenticator")
        }
        guard assertion.info.signatureAlgorithm == record.signatureAlgorithm else {
            throw UAFError(.unsupportedAlgorithm, rule: "\(section) step 4.b", "the signature algorithm differs from the registration's")
        }
        // 4.a: the policy (it may have changed since registration), with the metadata
        // characteristics registration found (userVerification, keyProtection).
        try policy.enforce(record.policyDescription(of: assertion), rule: "\(section) step 4.a")
        // 4.c: FinalChallengeHash.
        try checkFinalChallengeHash(assertion.finalChallengeHash, fcParams: fcParams, algorithm: assertion.info.signatureAlgorithm, section: section)
        // 4.d: authenticationMode and TransactionContentHash.
        if !shown.isEmpty {
            guard assertion.info.authenticationMode == 0x02 else {
                throw UAFError(.authenticationModeMismatch, rule: "\(section) step 4.d", "a transaction was sent but authenticationMode is not 0x02")
            }
            // "Go over all cached forms of the transaction content": the client showed one of them.
            let algorithm = assertion.info.signatureAlgorithm
            guard shown.contains(where: { form in form.hash(for: algorithm).map { ConstantTime.equals(assertion.transactionContentHash, $0) } ?? false })
            else {
                throw UAFError(.transactionContentHashMismatch, rule: "\(section) step 4.d", "TransactionContentHash is not the hash of the transaction shown")
            }
        } else {
            guard assertion.info.authenticationMode == 0x01 else {
                throw UAFError(.authenticationModeMismatch, rule: "\(section) step 4.d", "no transaction was sent but authenticationMode is not 0x01")
            }
            guard assertion.transactionContentHash.isEmpty else {
                throw UAFError(.transactionContentHashMismatch, rule: "\(section) step 4.d", "TransactionContentHash present without a transaction")
            }
        }
        // 4.e: the signature over SignedData with the registered key.
        let key = try keys.key(for: record)
        guard key.verify(signature: assertion.signature, message: assertion.signedData) else {
            throw UAFError(.signatureInvalid, rule: "\(section) step 4.e", "the signature does not verify with the registered key")
        }
        // 4.f: the signature counter: 0 means the authenticator keeps none; otherwise it must
        // have increased, or the authenticator may be cloned.
        if assertion.signCounter != 0 || record.signCounter != 0, assertion.signCounter <= record.signCounter {
            throw UAFError(.signCounterNotIncreased, rule: "\(section) step 4.f", "the signature counter did not increase")
        }
        return UAFVerifiedAuthentication(record: record, newSignCounter: assertion.signCounter, confirmedTransaction: !shown.isEmpty)
    }
}

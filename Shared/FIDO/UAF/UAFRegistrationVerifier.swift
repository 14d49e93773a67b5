import Crypto
import FoundationEssentials

/// A registration the server may store: what one verified registration assertion yields.
public struct UAFVerifiedRegistration: Sendable {
    public let aaid: String
    public let keyID: [UInt8]
    public let publicKey: UAFPublicKey
    public let signCounter: UInt32
    public let regCounter: UInt32
    public let authenticatorVersion: UInt16
    public let attestation: UAFAttestation
    /// The metadata statement's description, when the AAID has one.
    public let description: String?
    /// The metadata statement's `userVerificationDetails` and `keyProtection`, when the AAID
    /// has one: the characteristics the policy was matched on here, kept so that sign-in
    /// matches the same (``UAFRegistrationRecord``). Nil without a statement.
    public let userVerificationDetails: [[String]]?
    /// See ``userVerificationDetails``.
    public let keyProtection: [String]?
}

/// Verifies a UAF RegistrationResponse: UAF Protocol v1.2 §3.4.6.5 ("Registration Response
/// Processing Rules"), every rule that falls to a server, in order, each failing with its own
/// ``UAFError/Code``.
///
/// A pure function of its inputs (response, issued challenge and serverData, metadata lookup,
/// policy, time). Single use of the challenge and storing the registrations are the caller's.
public struct UAFRegistrationVerifier: Sendable {
    public var context: UAFResponseContext
    /// The tenant's UAF policy (`UAFPolicy.acceptAll` by default).
    public var policy: UAFPolicy
    /// Whether basic surrogate attestation is accepted for an AAID without metadata (self
    /// attestation, as the FIDO2 default policy accepts `self`).
    public var allowsSurrogateWithoutMetadata: Bool
    /// The metadata entry of an AAID (upper case), if the BLOB has one.
    public var metadata: @Sendable (String) -> MetadataEntry?

    public init(
        context: UAFResponseContext, policy: UAFPolicy = .acceptAll, allowsSurrogateWithoutMetadata: Bool = true,
        metadata: @escaping @Sendable (String) -> MetadataEntry? = { _ in nil }
    ) {
        self.context = context
        self.policy = policy
        self.allowsSurrogateWithoutMetadata = allowsSurrogateWithoutMetadata
        self.metadata = metadata
    }

    /// - Parameters:
    ///   - response: the RegistrationResponse.
    ///   - expectedChallenge: the challenge found in the serverData the server issued.
    ///   - serverData: the serverData issued (nil: the caller compared it already).
    ///   - time: when to validate attestation certificates.
    /// - Returns: one registration per assertion.
    /// - Throws: ``UAFError`` naming the first failed rule.
    public func verify(_ response: UAFResponse, expectedChallenge: String, serverData: String? = nil, at time: Date = Date()) throws(UAFError) -> [UAFVerifiedRegistration] {
        let section = "Protocol §3.4.6.5"
        _ = try context.check(response, op: "Reg", serverData: serverData, expectedChallenge: expectedChallenge, section: section)
        var results: [UAFVerifiedRegistration] = []
        for message in response.assertions {
            // Step 4: each assertion.
            let assertion = try UAFRegistrationAssertion(bytes: assertionBytes(message, section: section))
            let result = try verify(assertion, fcParams: response.fcParams, at: time, section: section)
            if results.contains(where: { $0.aaid == result.aaid && $0.keyID == result.keyID }) {
                throw UAFError(.duplicateAssertion, rule: "\(section) step 4", "two assertions for the same AAID and KeyID")
            }
            results.append(result)
        }
        // 4.a across the assertions: together they satisfy one accepted combination.
        try policy.enforceCombination(
            results.map {
                UAFAuthenticatorDescription(
                    aaid: $0.aaid, keyID: $0.keyID, signatureAlgorithm: $0.publicKey.algorithm, attestationType: $0.attestation.tag,
                    authenticatorVersion: $0.authenticatorVersion, statement: metadata($0.aaid)?.metadataStatement)
            }, rule: "\(section) step 4.a")
        return results
    }

    /// The per-assertion rules (step 4), public for tests and benchmarks.
    public func verify(_ assertion: UAFRegistrationAssertion, fcParams: String, at time: Date = Date(), section: String = "Protocol §3.4.6.5") throws(UAFError) -> UAFVerifiedRegistration {
        try refuseCriticalExtensions(assertion.extensions, section: section)
        let entry = metadata(assertion.aaid)
        if entry?.isRevokedOrCompromised == true {
            throw UAFError(.authenticatorRevoked, rule: "\(section) step 4.a", "the metadata reports this AAID revoked or compromised")
        }
        let statement = entry?.metadataStatement
        // 4.a: the policy accepts this authenticator.
        try policy.enforce(
            UAFAuthenticatorDescription(
                aaid: assertion.aaid, keyID: assertion.keyID, signatureAlgorithm: assertion.info.signatureAlgorithm,
                attestationType: assertion.attestation.tag, authenticatorVersion: assertion.info.authenticatorVersion, statement: statement),
            rule: "\(section) step 4.a")
        // 4.b: the key is a key of the declared algorithm and encoding.
        guard let encoding = assertion.info.publicKeyEncoding else {
            throw UAFError(.missingTag, rule: "\(section) step 4.b", "no public key encoding")
        }
        let key = try UAFPublicKey(bytes: assertion.publicKey, encoding: encoding, algorithm: assertion.info.signatureAlgorithm)
        if let statement, !statement.authenticationAlgorithms.isEmpty,
            !statement.authenticationAlgorithms.contains(assertion.info.signatureAlgorithm.metadataName)
        {
            throw UAFError(.unsupportedAlgorithm, rule: "\(section) step 4.b", "the metadata does not list this signature algorithm")
        }
        // 4.c: FinalChallengeHash is the hash of fcParams.
        try checkFinalChallengeHash(assertion.finalChallengeHash, fcParams: fcParams, algorithm: assertion.info.signatureAlgorithm, section: section)
        // 4.d: the attestation.
        if let statement, !statement.attestationTypes.isEmpty, !statement.attestationTypes.contains(assertion.attestation.typeName) {
            throw UAFError(
                assertion.attestation.tag == .attestationBasicSurrogate ? .surrogateNotAllowed : .attestationNotTrusted,
                rule: "\(section) step 4.d", "the metadata does not list \(assertion.attestation.typeName) attestation")
        }
        switch assertion.attestation {
        case .basicFull(let signature, let certificates):
            try verifyBasicFull(assertion, signature: signature, certificates: certificates, statement: statement, at: time, section: section)
        case .basicSurrogate(let signature):
            if statement == nil, !allowsSurrogateWithoutMetadata {
                throw UAFError(.surrogateNotAllowed, rule: "\(section) step 4.d", "basic surrogate without metadata is not allowed by the policy")
            }
            guard key.verify(signature: signature, message: assertion.krd) else {
                throw UAFError(.attestationSignatureInvalid, rule: "\(section) step 4.d", "the KRD signature does not verify with the new key")
            }
        }
        return UAFVerifiedRegistration(
            aaid: assertion.aaid, keyID: assertion.keyID, publicKey: key, signCounter: assertion.signCounter,
            regCounter: assertion.regCounter, authenticatorVersion: assertion.info.authenticatorVersion,
            attestation: assertion.attestation, description: statement?.description,
            userVerificationDetails: statement?.userVerificationDetails, keyProtection: statement?.keyProtection)
    }

    /// Basic full: the attestation certificate chains to the metadata's roots, names the AAID
    /// if it carries id-fido-gen-ce-aaid, and its key signed the KRD.
    private func verifyBasicFull(
        _ assertion: UAFRegistrationAssertion, signature: [UInt8], certificates: [[UInt8]], statement: MetadataStatement?, at time: Date,
        section: String
    ) throws(UAFError) {
        let rule = "\(section) step 4.d"
        guard let statement, !statement.attestationRootCertificates.isEmpty else {
            throw UAFError(.attestationNotTrusted, rule: rule, "no metadata roots for this AAID")
        }
        let chain: [X509Certificate]
        do { chain = try certificates.map { try X509Certificate(derEncoded: $0) } } catch {
            throw UAFError(.attestationNotTrusted, rule: rule, "an attestation certificate does not parse")
        }
        do {
            let store = try X509TrustStore(anchors: statement.attestationRootCertificates)
            _ = try store.verify(x5c: chain, at: time, options: X509VerificationOptions(allowPartialChain: true))
        } catch {
            throw UAFError(.attestationNotTrusted, rule: rule, "the attestation certificate does not chain to the metadata roots")
        }
        // UAF Protocol §3.4.6.5 / Authenticator Commands §6.2.3: an id-fido-uaf-aaid extension
        // (1.3.6.1.4.1.45724.1.1.1), when present, must hold the AAID.
        if let ext = chain[0].extensions.first(where: { $0.oid == "1.3.6.1.4.1.45724.1.1.1" }) {
            let value = UAFSignatureAlgorithm.octetStringContents(ext.value) ?? ext.value
            guard String(decoding: value, as: UTF8.self).uppercased() == assertion.aaid else {
                throw UAFError(.aaidMismatch, rule: rule, "the attestation certificate names another AAID")
            }
        }
        let attestationKey: UAFPublicKey
        let keyEncoding: UAFKeyEncoding = assertion.info.signatureAlgorithm.curve != nil ? .eccX962DER : .rsa2048DER
        do {
            attestationKey = try UAFPublicKey(bytes: chain[0].subjectPublicKeyInfo, encoding: keyEncoding, algorithm: assertion.info.signatureAlgorithm)
        } catch {
            throw UAFError(.attestationSignatureInvalid, rule: rule, "the attestation key does not fit the signature algorithm")
        }
        guard attestationKey.verify(signature: signature, message: assertion.krd) else {
            throw UAFError(.attestationSignatureInvalid, rule: rule, "the KRD signature does not verify with the attestation certificate")
        }
    }
}

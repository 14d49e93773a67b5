import Crypto

/// A FIDO UAF transaction confirmation bound to a transaction's details (dynamic linking), and
/// its offline re-verification.
///
/// The AuthenticationRequest that confirms a transaction carries two bindings:
/// - its `challenge` is base64url of ``DynamicLinkingChallenge/derive(detailsHash:nonce:)``, so
///   the FinalChallengeParams the authenticator hashes into FINAL_CHALLENGE_HASH commit to the
///   details hash and a nonce, as a WebAuthn confirmation's client data does;
/// - its `transaction` is the `text/plain` content the authenticator shows, whose hash it signs
///   as TRANSACTION_CONTENT_HASH with authenticationMode 0x02 (UAF Protocol §3.5.7.5 step 4.d).
///
/// ``verify(assertion:fcParams:record:detailsHash:nonce:content:)`` checks both again from
/// stored evidence, without the request: the transaction service runs it before issuing a
/// tcToken, so that it does not take the authentication service's word for the signature.
public enum UAFTransactionConfirmation {
    /// The UAF challenge for a confirmation of `detailsHash` with `nonce`.
    public static func challenge(detailsHash: [UInt8], nonce: [UInt8]) -> String {
        Base64URL.encode(DynamicLinkingChallenge.derive(detailsHash: detailsHash, nonce: nonce))
    }

    /// The `text/plain` Transaction entry that shows `text`.
    public static func transaction(text: String) -> UAFTransaction {
        UAFTransaction(contentType: "text/plain", content: Base64URL.encode(Array(text.utf8)))
    }

    /// Verifies a stored confirmation step.
    ///
    /// - Parameters:
    ///   - assertion: the `TAG_UAFV1_AUTH_ASSERTION` bytes.
    ///   - fcParams: the fcParams as the client sent them (what FINAL_CHALLENGE_HASH covers).
    ///   - record: the registration the verifier holds for the key (its own record, not the
    ///     evidence's word); its counter is not judged here (the authentication service did
    ///     that under the row lock when it accepted the assertion).
    ///   - detailsHash: the transaction's current details hash.
    ///   - nonce: the 16-byte nonce of the dynamic-linking challenge.
    ///   - content: the content the authenticator must have shown.
    /// - Throws: ``UAFError``: `uaf_challenge_mismatch` when fcParams' challenge is not the
    ///   dynamic-linking challenge of the details, or any per-assertion code of
    ///   ``UAFAuthenticationVerifier`` (mode, content hash, FinalChallengeHash, signature).
    public static func verify(
        assertion: [UInt8], fcParams: String, record: UAFRegistrationRecord, detailsHash: [UInt8], nonce: [UInt8], content: [UInt8]
    ) throws(UAFError) {
        let section = "Protocol §3.5.7.5"
        let parsed = try UAFAuthenticationAssertion(bytes: assertion)
        let fc = try UAFMessageDecoding.finalChallengeParams(fcParams)
        guard nonce.count == 16,
            ConstantTime.equals(Array(fc.challenge.utf8), Array(challenge(detailsHash: detailsHash, nonce: nonce).utf8))
        else {
            throw UAFError(.challengeMismatch, rule: "\(section) step 3.b", "the challenge is not the dynamic-linking challenge of the transaction")
        }
        let unjudgedCounter = UAFRegistrationRecord(
            aaid: record.aaid, keyID: record.keyID, publicKey: record.publicKey, keyEncoding: record.keyEncoding,
            signatureAlgorithm: record.signatureAlgorithm, signCounter: 0, attestationType: record.attestationType)
        _ = try UAFAuthenticationVerifier(context: UAFResponseContext(appID: fc.appID, trustedFacetIDs: [fc.facetID]), policy: .acceptAll).verify(
            parsed, fcParams: fcParams, transaction: UAFTransaction(contentType: "text/plain", content: Base64URL.encode(content)),
            record: unjudgedCounter, section: section)
    }
}

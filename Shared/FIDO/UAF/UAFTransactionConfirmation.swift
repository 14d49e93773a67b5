import Crypto
import Schema

/// A FIDO UAF transaction confirmation bound to a transaction's details (dynamic linking), and
/// its offline re-verification.
///
/// The AuthenticationRequest that confirms a transaction carries two bindings:
/// - its `challenge` is base64url of ``DynamicLinkingChallenge/derive(detailsHash:nonce:)``, so
///   the FinalChallengeParams the authenticator hashes into FINAL_CHALLENGE_HASH commit to the
///   details hash and a nonce, as a WebAuthn confirmation's client data does;
/// - its `transaction` is the list of forms of the details the authenticator may show: the
///   `text/plain` display text, then each `image/png` form the transaction carries
///   (``transactions(text:images:)``); the authenticator shows one and signs its hash as
///   TRANSACTION_CONTENT_HASH with authenticationMode 0x02 (UAF Protocol §3.5.7.5 step 4.d).
///   The images are part of the details, so the details hash (and the challenge) commits to
///   them too.
///
/// ``verify(assertion:fcParams:context:record:detailsHash:nonce:transactions:keys:)`` checks both
/// again from stored evidence, without the request, and that fcParams name the tenant's AppID
/// and one of its trusted facets: the transaction service runs it before issuing a tcToken, so
/// that it does not take the authentication service's word for the signature.
public enum UAFTransactionConfirmation {
    /// The UAF challenge for a confirmation of `detailsHash` with `nonce`.
    public static func challenge(detailsHash: [UInt8], nonce: [UInt8]) -> String {
        Base64URL.encode(DynamicLinkingChallenge.derive(detailsHash: detailsHash, nonce: nonce))
    }

    /// The `text/plain` Transaction entry that shows `text`.
    public static func transaction(text: String) -> UAFTransaction {
        UAFTransaction(contentType: "text/plain", content: Base64URL.encode(Array(text.utf8)))
    }

    /// The Transaction entries of a confirmation: `text/plain` `text`, then one `image/png` entry
    /// per image (base64url content and its characteristics), in the order given.
    public static func transactions(text: String, images: [(content: String, characteristics: UAFDisplayPNGCharacteristics)]) -> [UAFTransaction] {
        [transaction(text: text)]
            + images.map { UAFTransaction(contentType: "image/png", content: $0.content, tcDisplayPNGCharacteristics: $0.characteristics) }
    }

    /// Verifies a stored confirmation step.
    ///
    /// - Parameters:
    ///   - assertion: the `TAG_UAFV1_AUTH_ASSERTION` bytes.
    ///   - fcParams: the fcParams as the client sent them (what FINAL_CHALLENGE_HASH covers).
    ///   - context: the tenant's AppID and trusted facets as the verifier knows them (its own
    ///     read model, not the evidence's word): fcParams must name that AppID and one of those
    ///     facets (UAF Protocol §3.5.7.5 steps 3.a and 3.c), as at sign-in.
    ///   - record: the registration the verifier holds for the key (its own record, not the
    ///     evidence's word); its counter is not judged here (the authentication service did
    ///     that under the row lock when it accepted the assertion).
    ///   - detailsHash: the transaction's current details hash.
    ///   - nonce: the 16-byte nonce of the dynamic-linking challenge.
    ///   - transactions: every form of the content the authenticator may have shown
    ///     (``transactions(text:images:)``): TransactionContentHash must be the hash of one of them.
    ///   - keys: where the registered key is parsed once.
    /// - Throws: ``UAFError``: `uaf_app_id_mismatch`, `uaf_facet_not_trusted`,
    ///   `uaf_challenge_mismatch` when fcParams' challenge is not the dynamic-linking challenge
    ///   of the details, or any per-assertion code of ``UAFAuthenticationVerifier`` (mode,
    ///   content hash, FinalChallengeHash, signature).
    public static func verify(
        assertion: [UInt8], fcParams: String, context: UAFResponseContext, record: UAFRegistrationRecord, detailsHash: [UInt8], nonce: [UInt8],
        transactions: [UAFTransaction], keys: UAFPublicKeyCache = .shared
    ) throws(UAFError) {
        let section = "Protocol §3.5.7.5"
        let parsed = try UAFAuthenticationAssertion(bytes: assertion)
        let fc = try UAFMessageDecoding.finalChallengeParams(fcParams)
        guard nonce.count == 16 else {
            throw UAFError(.challengeMismatch, rule: "\(section) step 3.b", "the dynamic-linking nonce is not 16 bytes")
        }
        // Step 3: appID, the dynamic-linking challenge of the details, facetID.
        try context.check(fc, expectedChallenge: challenge(detailsHash: detailsHash, nonce: nonce), section: section)
        let unjudgedCounter = record.withSignCounter(0)
        // Step 4.d against every form: a confirmation always shows one (an empty list, or a form
        // whose content is not base64url, is refused rather than read as "no transaction").
        let shown = transactions.compactMap(UAFShownTransaction.init)
        guard !shown.isEmpty, shown.count == transactions.count else {
            throw UAFError(.transactionContentHashMismatch, rule: "\(section) step 4.d", "no transaction content to compare with")
        }
        _ = try UAFAuthenticationVerifier(context: context, policy: .acceptAll, keys: keys).verify(
            parsed, fcParams: fcParams, shown: shown, record: unjudgedCounter, section: section)
    }
}

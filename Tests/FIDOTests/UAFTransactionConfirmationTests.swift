import Crypto
import FIDO
import Foundation
import JSON
import Schema
import Testing
import TestSupport

/// A UAF transaction confirmation checked again offline, as the transaction service does before
/// issuing a tcToken: the fcParams carry the dynamic-linking challenge of the details hash and
/// nonce, TRANSACTION_CONTENT_HASH is the hash of the text shown, and the signature verifies
/// with the registered key. Each way a step can fail to bind the transaction has its code.
@Suite struct UAFTransactionConfirmationTests {
    static let appID = "https://example.test/uaf/facets"
    let detailsHash = SHA256.hash(Array(#"{"amount":"10.00"}"#.utf8))
    let nonce = [UInt8](repeating: 7, count: 16)
    let text = "Pay 10.00 EUR to ACME"

    struct Step {
        let assertion: [UInt8]
        let fcParams: String
        let record: UAFRegistrationRecord
    }

    /// A registration of `authenticator` and one confirmation step signing `content` over `challenge`.
    func step(_ authenticator: SoftUAFAuthenticator, challenge: String, content: [UInt8]?, mode: UInt8? = nil) throws -> Step {
        let krd = try UAFRegistrationAssertion(bytes: authenticator.registrationAssertion(fcParams: "unused"))
        let record = UAFRegistrationRecord(
            aaid: krd.aaid, keyID: krd.keyID, publicKey: krd.publicKey, keyEncoding: try #require(krd.info.publicKeyEncoding),
            signatureAlgorithm: krd.info.signatureAlgorithm, signCounter: 0, attestationType: .attestationBasicSurrogate)
        let fc = try authenticator.fcParams(appID: Self.appID, challenge: challenge)
        let assertion = try authenticator.authenticationAssertion(fcParams: fc, transactionContent: content, mode: mode)
        return Step(assertion: assertion, fcParams: fc, record: record)
    }

    func code(
        _ s: Step, detailsHash: [UInt8]? = nil, nonce: [UInt8]? = nil, content: String? = nil, forms: [UAFTransaction]? = nil,
        appID: String = Self.appID, facets: [String] = ["https://example.test"]
    ) -> UAFError.Code? {
        do {
            try UAFTransactionConfirmation.verify(
                assertion: s.assertion, fcParams: s.fcParams, context: UAFResponseContext(appID: appID, trustedFacetIDs: facets), record: s.record, detailsHash: detailsHash ?? self.detailsHash,
                nonce: nonce ?? self.nonce, transactions: forms ?? [UAFTransactionConfirmation.transaction(text: content ?? text)])
            return nil
        } catch { return error.code }
    }

    @Test(arguments: [UAFSignatureAlgorithm.secp256r1ECDSASHA256Raw, .secp384r1ECDSASHA384Raw, .secp521r1ECDSASHA512Raw])
    func aStepThatSignedTheDetailsAndTheTextVerifies(algorithm: UAFSignatureAlgorithm) throws {
        let authenticator = SoftUAFAuthenticator(algorithm: algorithm, facetID: "https://example.test")
        let challenge = UAFTransactionConfirmation.challenge(detailsHash: detailsHash, nonce: nonce)
        #expect(Base64URL.decode(challenge) == DynamicLinkingChallenge.derive(detailsHash: detailsHash, nonce: nonce))
        let s = try step(authenticator, challenge: challenge, content: Array(text.utf8))
        #expect(code(s) == nil)
        // Amended details, another nonce, or another text than the one shown: no longer this step's.
        #expect(code(s, detailsHash: SHA256.hash(Array(#"{"amount":"99.00"}"#.utf8))) == .challengeMismatch)
        #expect(code(s, nonce: [UInt8](repeating: 8, count: 16)) == .challengeMismatch)
        #expect(code(s, content: "Pay 99.00 EUR to EVIL") == .transactionContentHashMismatch)
    }

    /// A transaction with PNG forms: the authenticator shows one form and signs its hash; the
    /// step verifies against the list of every form (text first, then the images), and a step
    /// that signed the hash of another image, or checked against no form, does not.
    @Test func aStepThatSignedOneOfTheImagesVerifiesAndAnotherImageDoesNot() throws {
        let authenticator = SoftUAFAuthenticator(facetID: "https://example.test")
        let challenge = UAFTransactionConfirmation.challenge(detailsHash: detailsHash, nonce: nonce)
        let png = TestPNG.make(width: 24, height: 12, colorType: 2)
        let display = UAFDisplayPNGCharacteristics(width: 24, height: 12, bitDepth: 8, colorType: 2)
        let forms = UAFTransactionConfirmation.transactions(text: text, images: [(Base64URL.encode(png), display)])
        #expect(forms.map(\.contentType) == ["text/plain", "image/png"] && forms[1].tcDisplayPNGCharacteristics == display)
        let signedImage = try step(authenticator, challenge: challenge, content: png)
        #expect(code(signedImage, forms: forms) == nil)
        let signedText = try step(authenticator, challenge: challenge, content: Array(text.utf8))
        #expect(code(signedText, forms: forms) == nil)
        // Only the text was offered: the image's hash matches none.
        #expect(code(signedImage) == .transactionContentHashMismatch)
        // The hash of another image than the transaction's.
        let other = try step(authenticator, challenge: challenge, content: TestPNG.make(width: 24, height: 12, colorType: 0))
        #expect(code(other, forms: forms) == .transactionContentHashMismatch)
        // No form at all, or a form whose content is not base64url, is not "no transaction".
        #expect(code(signedImage, forms: []) == .transactionContentHashMismatch)
        #expect(code(signedImage, forms: forms + [UAFTransaction(contentType: "image/png", content: "%%")]) == .transactionContentHashMismatch)
    }

    @Test func refusesStepsThatDoNotBindTheTransaction() throws {
        let authenticator = SoftUAFAuthenticator(facetID: "https://example.test")
        let challenge = UAFTransactionConfirmation.challenge(detailsHash: detailsHash, nonce: nonce)
        // A plain sign-in challenge, not derived from the details.
        #expect(code(try step(authenticator, challenge: "plain-challenge", content: Array(text.utf8))) == .challengeMismatch)
        // No transaction content hashed, or the user not shown the content (mode 0x01).
        #expect(code(try step(authenticator, challenge: challenge, content: nil)) == .authenticationModeMismatch)
        #expect(code(try step(authenticator, challenge: challenge, content: Array(text.utf8), mode: 0x01)) == .authenticationModeMismatch)
        // Signed by another key than the registered one.
        var s = try step(authenticator, challenge: challenge, content: Array(text.utf8))
        let other = try step(SoftUAFAuthenticator(facetID: "https://example.test"), challenge: challenge, content: Array(text.utf8))
        s = Step(
            assertion: s.assertion, fcParams: s.fcParams,
            record: UAFRegistrationRecord(
                aaid: s.record.aaid, keyID: s.record.keyID, publicKey: other.record.publicKey, keyEncoding: s.record.keyEncoding,
                signatureAlgorithm: s.record.signatureAlgorithm, signCounter: 0, attestationType: s.record.attestationType))
        #expect(code(s) == .signatureInvalid)
        // fcParams other than those signed.
        let good = try step(authenticator, challenge: challenge, content: Array(text.utf8))
        var params = UAFFinalChallengeParams(appID: Self.appID, challenge: challenge, facetID: "https://example.test")
        params.channelBinding.cid_pubkey = "unused"
        let forged = Base64URL.encode(try JSONValueEncoder().encodeToBytes(params))
        #expect(code(Step(assertion: good.assertion, fcParams: forged, record: good.record)) == .finalChallengeHashMismatch)
        // fcParams naming another AppID are refused for that before their hash is compared.
        let elsewhere = try authenticator.fcParams(appID: "https://evil.example/uaf/facets", challenge: challenge)
        #expect(code(Step(assertion: good.assertion, fcParams: elsewhere, record: good.record)) == .appIDMismatch)
    }

    /// The verifier's own AppID and trusted facets, not the ones the evidence names: a step
    /// signed for another AppID, or from a facet the tenant does not trust, binds nothing
    /// (UAF Protocol §3.5.7.5 steps 3.a and 3.c).
    @Test func refusesStepsForAnotherAppIDOrAnUntrustedFacet() throws {
        let challenge = UAFTransactionConfirmation.challenge(detailsHash: detailsHash, nonce: nonce)
        let s = try step(SoftUAFAuthenticator(facetID: "https://example.test"), challenge: challenge, content: Array(text.utf8))
        #expect(code(s) == nil)
        #expect(code(s, appID: "https://other.example/uaf/facets") == .appIDMismatch)
        #expect(code(s, facets: ["https://other.example", "android:apk-key-hash:bE0f1WtRJrZv/C0y9CM73bAUqiI"]) == .facetNotTrusted)
        #expect(code(s, facets: []) == .facetNotTrusted)
        // Signed (correctly) by an app of another tenant: its facet is not this tenant's.
        let elsewhere = try step(SoftUAFAuthenticator(facetID: "https://evil.example"), challenge: challenge, content: Array(text.utf8))
        #expect(code(elsewhere) == .facetNotTrusted)
        #expect(code(elsewhere, facets: ["https://example.test", "https://evil.example"]) == nil)
    }
}

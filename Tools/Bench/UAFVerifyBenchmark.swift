import Crypto
import FIDO
import Foundation
import JSON
import TestSupport

/// `signet-bench uaf-verify [seconds]`: FIDO UAF AuthenticationResponse verification in
/// process, one thread, for each curve the verifier supports, beside the raw OpenSSL verify of
/// the same signature (what `openssl speed ecdsapNNN` measures).
///
/// The full figure is UAF Protocol §3.5.7.5 as `UAFAuthenticationVerifier` runs it on a
/// sign-in: the response's JSON is already decoded (the service decodes it once per request,
/// outside the verifier), then the header and FinalChallengeParams (decoded from base64url
/// JSON), the TLV parse, policy, FinalChallengeHash, public key parse and the signature.
func uafVerifyBenchmark(seconds: Double) throws {
    let appID = "https://example.test/uaf/facets"
    let facet = "https://example.test"
    let context = UAFResponseContext(appID: appID, trustedFacetIDs: [facet])
    let cases: [(name: String, algorithm: UAFSignatureAlgorithm, crypto: SignatureAlgorithm, curve: Curve)] = [
        ("p256", .secp256r1ECDSASHA256Raw, .es256, .p256), ("p384", .secp384r1ECDSASHA384Raw, .es384, .p384),
        ("p521", .secp521r1ECDSASHA512Raw, .es512, .p521),
    ]
    for c in cases {
        let authenticator = SoftUAFAuthenticator(aaid: "FFFF#0001", algorithm: c.algorithm, keyEncoding: .eccX962Raw, facetID: facet)
        let krd = try UAFRegistrationAssertion(bytes: authenticator.registrationAssertion(fcParams: "unused"))
        let record = UAFRegistrationRecord(
            aaid: krd.aaid, keyID: krd.keyID, publicKey: krd.publicKey, keyEncoding: .eccX962Raw, signatureAlgorithm: c.algorithm,
            signCounter: 0, attestationType: .attestationBasicSurrogate)
        let request = UAFAuthenticationRequest(
            header: UAFOperationHeader(upv: .v1_2, op: "Auth", appID: appID, serverData: "sd"), challenge: "bench-challenge", transaction: nil,
            policy: .acceptAll)
        let response = try UAFMessageDecoding.response(try authenticator.authenticate(request))
        let verifier = UAFAuthenticationVerifier(context: context)
        let verify = {
            _ = try verifier.verify(response, expectedChallenge: "bench-challenge", serverData: "sd") { aaid, keyID in
                aaid == record.aaid && keyID == record.keyID ? record : nil
            }
        }
        try verify()
        let full = try rate(seconds: seconds, verify)
        let assertion = try UAFAuthenticationAssertion(bytes: Base64URL.decode(response.assertions[0].assertion)!)
        let key = try UAFPublicKey(bytes: record.publicKey, encoding: .eccX962Raw, algorithm: c.algorithm)
        guard key.verify(signature: assertion.signature, message: assertion.signedData) else { throw CryptoError("bench: signature") }
        // The raw OpenSSL verify of the same signature (DER, as `openssl speed` verifies).
        guard let der = ECDSASignature.der(fromRaw: assertion.signature) else { throw CryptoError("bench: DER") }
        let size = c.curve.coordinateSize
        let point = record.publicKey
        let ecKey = try PublicKey.ec(curve: c.curve, x: Array(point[1...size]), y: Array(point[(1 + size)...]))
        let raw = rate(seconds: seconds) { _ = ecKey.verify(signature: der, message: assertion.signedData, algorithm: c.crypto) }
        print(String(format: "uaf_verify_\(c.name)_per_s %.0f", full))
        print(String(format: "crypto_\(c.name)_verify_per_s %.0f", raw))
    }
}

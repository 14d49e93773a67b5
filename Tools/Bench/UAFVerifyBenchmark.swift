import Crypto
import FIDO
import Foundation
import JSON
import TestSupport

/// `signet-bench uaf-verify [seconds]`: FIDO UAF AuthenticationResponse verification in
/// process, one thread, for each curve the verifier supports, beside the raw OpenSSL verify of
/// the same signature (what `openssl speed ecdsapNNN` measures).
///
/// Four are measured in alternating slices (``interleavedRates(seconds:_:)``): the UAF
/// verification, the Crypto verify of the same signature (DER), `openssl speed`'s own verify
/// loop run in this process (``OpenSSLSpeedLoop``, the in-process anchor), and the UAF
/// verification again with the key parsed on every call (``UAFPublicKeyCache`` emptied before
/// each: the first figure always hits it, the bench's key being always the same).
///
/// The full figure is UAF Protocol §3.5.7.5 as `UAFAuthenticationVerifier` runs it on a
/// sign-in: the response's JSON is already decoded (the service decodes it once per request,
/// outside the verifier), then the header and FinalChallengeParams (decoded from base64url
/// JSON), the TLV parse, policy, FinalChallengeHash, public key parse and the signature.
func uafVerifyBenchmark(seconds: Double, only: String? = nil) throws {
    let appID = "https://example.test/uaf/facets"
    let facet = "https://example.test"
    let context = UAFResponseContext(appID: appID, trustedFacetIDs: [facet])
    let cases: [(name: String, algorithm: UAFSignatureAlgorithm, crypto: SignatureAlgorithm, curve: Curve)] = [
        ("p256", .secp256r1ECDSASHA256Raw, .es256, .p256), ("p384", .secp384r1ECDSASHA384Raw, .es384, .p384),
        ("p521", .secp521r1ECDSASHA512Raw, .es512, .p521),
        // No `openssl speed` anchor for it (speed knows no secp256k1): the Crypto figure is the line.
        ("secp256k1", .secp256k1ECDSASHA256Raw, .es256k, .secp256k1),
    ]
    for c in cases where only == nil || only == c.name {
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
        // The same verification parsing the key on every call (a cache emptied before each):
        // the bench's key is always the same, so the figure above is the cache's hit path.
        let uncachedKeys = UAFPublicKeyCache(capacity: 1)
        let uncachedVerifier = UAFAuthenticationVerifier(context: context, keys: uncachedKeys)
        let verifyUncached = {
            uncachedKeys.removeAll()
            _ = try uncachedVerifier.verify(response, expectedChallenge: "bench-challenge", serverData: "sd") { aaid, keyID in
                aaid == record.aaid && keyID == record.keyID ? record : nil
            }
        }
        let assertion = try UAFAuthenticationAssertion(bytes: Base64URL.decode(response.assertions[0].assertion)!)
        let key = try UAFPublicKey(bytes: record.publicKey, encoding: .eccX962Raw, algorithm: c.algorithm)
        guard key.verify(signature: assertion.signature, message: assertion.signedData) else { throw CryptoError("bench: signature") }
        // The raw OpenSSL verify of the same signature (DER, as `openssl speed` verifies).
        guard let der = ECDSASignature.der(fromRaw: assertion.signature) else { throw CryptoError("bench: DER") }
        let size = c.curve.coordinateSize
        let point = record.publicKey
        let ecKey = try PublicKey.ec(curve: c.curve, x: Array(point[1...size]), y: Array(point[(1 + size)...]))
        // `openssl speed`'s own loop, in the same slices (see OpenSSLSpeedLoop).
        let speedLoop = try OpenSSLSpeedLoop(curve: c.curve)
        let rates = try interleavedRates(
            seconds: seconds,
            [
                verify, { _ = ecKey.verify(signature: der, message: assertion.signedData, algorithm: c.crypto) },
                { _ = speedLoop.verify() }, verifyUncached,
            ])
        print(String(format: "uaf_verify_\(c.name)_per_s %.0f", rates[0]))
        print(String(format: "crypto_\(c.name)_verify_per_s %.0f", rates[1]))
        print(String(format: "openssl_loop_\(c.name)_verify_per_s %.0f", rates[2]))
        print(String(format: "uaf_verify_uncached_key_\(c.name)_per_s %.0f", rates[3]))
    }
}

/// The CPU time of the calling thread, in seconds (what `openssl speed` divides by: user CPU
/// time, not wall-clock time, unless given `-elapsed`).
func threadCPUTime() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// The rates of `a` and `b` (calls per second of the calling thread's CPU time, as `openssl
/// speed` counts), measured in alternating slices of about 50 ms for `seconds` of CPU time
/// each: on a shared machine whose load changes from second to second, both figures then see
/// the same conditions, and their ratio means something.
func interleavedRates(seconds: Double, _ a: () throws -> Void, _ b: () throws -> Void) rethrows -> (Double, Double) {
    var counts = (0, 0)
    var spent = (0.0, 0.0)
    while spent.0 < seconds || spent.1 < seconds {
        let ra = try cpuSlice(a)
        let rb = try cpuSlice(b)
        counts.0 += ra.0
        spent.0 += ra.1
        counts.1 += rb.0
        spent.1 += rb.1
    }
    return (Double(counts.0) / spent.0, Double(counts.1) / spent.1)
}

/// Runs `body` in batches of 20 for about 50 ms of the thread's CPU time: the calls made and
/// the CPU time they took.
func cpuSlice(_ body: () throws -> Void) rethrows -> (Int, Double) {
    let start = threadCPUTime()
    var n = 0
    while threadCPUTime() - start < 0.05 {
        for _ in 0..<20 { try body() }
        n += 20
    }
    return (n, threadCPUTime() - start)
}

/// The rates of each of `bodies`, measured in turn in slices of about 50 ms, round after round,
/// until each has had `seconds` of CPU time.
func interleavedRates(seconds: Double, _ bodies: [() throws -> Void]) throws -> [Double] {
    var counts = [Int](repeating: 0, count: bodies.count)
    var spent = [Double](repeating: 0, count: bodies.count)
    while spent.contains(where: { $0 < seconds }) {
        for (i, body) in bodies.enumerated() {
            let r = try cpuSlice(body)
            counts[i] += r.0
            spent[i] += r.1
        }
    }
    return zip(counts, spent).map { Double($0) / $1 }
}

// MARK: - Where a P-256 verification's time goes

/// `signet-bench uaf-breakdown`: the CPU time of each step of a P-256 UAF verification, one
/// thread, in nanoseconds per call, to see what the full figure spends beside the signature.
func uafBreakdown() throws {
    let appID = "https://example.test/uaf/facets"
    let facet = "https://example.test"
    let authenticator = SoftUAFAuthenticator(aaid: "FFFF#0001", algorithm: .secp256r1ECDSASHA256Raw, keyEncoding: .eccX962Raw, facetID: facet)
    _ = try authenticator.registrationAssertion(fcParams: "unused")
    let registration = authenticator.registrations[0]
    let record = UAFRegistrationRecord(
        aaid: "FFFF#0001", keyID: registration.keyID, publicKey: Array(try registration.key.publicKey().subjectPublicKeyInfo.suffix(65)),
        keyEncoding: .eccX962Raw, signatureAlgorithm: .secp256r1ECDSASHA256Raw, signCounter: 0, attestationType: .attestationBasicSurrogate)
    let request = UAFAuthenticationRequest(
        header: UAFOperationHeader(upv: .v1_2, op: "Auth", appID: appID, serverData: "sd"), challenge: "bench-challenge", transaction: nil,
        policy: .acceptAll)
    let response = try UAFMessageDecoding.response(try authenticator.authenticate(request))
    let bytes = Base64URL.decode(response.assertions[0].assertion)!
    let assertion = try UAFAuthenticationAssertion(bytes: bytes)
    let verifier = UAFAuthenticationVerifier(context: UAFResponseContext(appID: appID, trustedFacetIDs: [facet]))
    let key = try UAFPublicKeyCache.shared.key(for: record)
    func ns(_ name: String, _ body: () throws -> Void) rethrows {
        let start = threadCPUTime()
        for _ in 0..<20000 { try body() }
        print(String(format: "uaf_%@_ns %.0f", name, (threadCPUTime() - start) * 1e9 / 20000))
    }
    // The full verification and its steps against the signature alone, interleaved (the
    // sequential figures below move with the machine's load).
    let (fullRate, signatureRate) = try interleavedRates(seconds: 2, {
        _ = try verifier.verify(response, expectedChallenge: "bench-challenge", serverData: "sd") { _, _ in record }
    }, { _ = key.verify(signature: assertion.signature, message: assertion.signedData) })
    print(String(format: "uaf_full_minus_signature_interleaved_ns %.0f", (1 / fullRate - 1 / signatureRate) * 1e9))
    let (rulesRate, signatureRate2) = try interleavedRates(seconds: 2, {
        _ = try verifier.verify(assertion, fcParams: response.fcParams, transaction: nil, record: record)
    }, { _ = key.verify(signature: assertion.signature, message: assertion.signedData) })
    print(String(format: "uaf_per_assertion_rules_minus_signature_interleaved_ns %.0f", (1 / rulesRate - 1 / signatureRate2) * 1e9))
    try ns("full") { _ = try verifier.verify(response, expectedChallenge: "bench-challenge", serverData: "sd") { _, _ in record } }
    ns("signature") { _ = key.verify(signature: assertion.signature, message: assertion.signedData) }
    try ns("per_assertion_rules") { _ = try verifier.verify(assertion, fcParams: response.fcParams, transaction: nil, record: record) }
    try ns("fcparams_decode") { _ = try UAFMessageDecoding.finalChallengeParams(response.fcParams) }
    // The general path the decode falls back to for JSON of another shape, for comparison.
    let fcJSON = Base64URL.decode(response.fcParams)!
    try ns("fcparams_json_general") { _ = try UAFMessageDecoding.finalChallengeParams(json: fcJSON) }
    ns("assertion_base64url") { _ = Base64URL.decode(response.assertions[0].assertion) }
    try ns("assertion_tlv") { _ = try UAFAuthenticationAssertion(bytes: bytes) }
    // The reference reading through the element tree, for comparison.
    try ns("assertion_tlv_tree") { _ = try UAFAuthenticationAssertion(tree: bytes) }
    ns("fcparams_sha256") { _ = SHA256.hash(Array(response.fcParams.utf8)) }
    try ns("key_cache_hit") { _ = try UAFPublicKeyCache.shared.key(for: record) }
    let described = UAFAuthenticatorDescription(
        aaid: assertion.aaid, keyID: assertion.keyID, signatureAlgorithm: assertion.info.signatureAlgorithm,
        attestationType: record.attestationType, authenticatorVersion: assertion.info.authenticatorVersion, statement: nil)
    try ns("policy") {
        try UAFPolicy.acceptAll.enforce(described, rule: "policy")
        try UAFPolicy.acceptAll.enforceCombination([described], rule: "policy")
    }
}

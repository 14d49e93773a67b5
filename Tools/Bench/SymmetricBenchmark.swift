import COpenSSL
import Crypto
import Foundation

/// `signet-bench symmetric [seconds]`: the symmetric work of a sign-in through Crypto
/// (`SecureRandom.bytes`, `HMAC`, `AES256GCM` over CCryptoShims/symmetric.c) beside the OpenSSL
/// calls Crypto made before, as anchors, in alternating slices of the same run: `RAND_bytes`
/// per request (a DRBG call and a `getpid(2)` each), the one-shot `HMAC()` (a MAC and a digest
/// fetched per call), and `EVP_aes_256_gcm()` with a new cipher context per seal (an implicit
/// fetch per call). Sizes are a sign-in's: 32-byte challenges, HMAC-SHA-256 of a username under
/// a 32-byte key, the sign-in handle (about 90 bytes, 33 bytes of associated data).
/// Figures are ns per call; lower is better.
func symmetricBenchmark(seconds: Double) throws {
    let key = [UInt8](repeating: 7, count: 32)
    let username = Array("bench-user-0001".utf8)
    let handle = [UInt8](repeating: 1, count: 90)
    let aad = Array("signet.webauthn.authentication.v2".utf8)
    let box = try AES256GCM(key: key)
    var sink: UInt8 = 0

    func anchorRandom() {
        var out = [UInt8](repeating: 0, count: 32)
        precondition(out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, 32) } == 1)
        sink ^= out[0]
    }
    func anchorHMAC() {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = HMAC(EVP_sha256(), key, 32, username, username.count, &out, &length)
        sink ^= out[0]
    }
    func anchorSeal() {
        let nonce = SecureRandom.bytes(12)
        let ctx = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: handle.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        var len: Int32 = 0
        _ = EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce)
        _ = EVP_EncryptUpdate(ctx, nil, &len, aad, Int32(aad.count))
        _ = EVP_EncryptUpdate(ctx, &out, &len, handle, Int32(handle.count))
        _ = out.withUnsafeMutableBufferPointer { EVP_EncryptFinal_ex(ctx, $0.baseAddress! + Int(len), &len) }
        _ = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag)
        sink ^= tag[0]
    }

    let cases: [(name: String, ours: () throws -> Void, anchor: () -> Void)] = [
        ("random 32 bytes", { sink ^= SecureRandom.bytes(32)[0] }, anchorRandom),
        ("HMAC-SHA-256", { sink ^= HMAC.authenticationCode(.sha256, key: key, message: username)[0] }, anchorHMAC),
        ("AES-256-GCM seal", { sink ^= try box.seal(handle, associatedData: aad)[0] }, anchorSeal),
    ]
    print("symmetric primitives, ns per call (Crypto now / OpenSSL per-call path before), \(seconds) s each, alternating slices")
    for c in cases {
        var ours = 0.0, anchor = 0.0, oursCalls = 0, anchorCalls = 0
        let slice = seconds / 6
        for _ in 0..<3 {
            var n = 0
            var start = ContinuousClock.now
            while (ContinuousClock.now - start) < .seconds(slice) {
                for _ in 0..<200 { try c.ours() }
                n += 200
            }
            ours += secondsOf(ContinuousClock.now - start)
            oursCalls += n
            n = 0
            start = ContinuousClock.now
            while (ContinuousClock.now - start) < .seconds(slice) {
                for _ in 0..<200 { c.anchor() }
                n += 200
            }
            anchor += secondsOf(ContinuousClock.now - start)
            anchorCalls += n
        }
        let oursNs = ours / Double(oursCalls) * 1e9, anchorNs = anchor / Double(anchorCalls) * 1e9
        let name = c.name.padding(toLength: 18, withPad: " ", startingAt: 0)
        print(name + String(format: " %8.0f ns   anchor %8.0f ns   (%.1fx)", oursNs, anchorNs, anchorNs / oursNs))
    }
    if sink == 0x5A { print("") }  // keeps the results alive
}

private func secondsOf(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

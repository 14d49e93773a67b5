import Dispatch
import Synchronization
import Testing
@testable import Crypto
import CRandomProbe

/// The symmetric primitives' shims (CCryptoShims/symmetric.c): HMAC over the low-level hash
/// contexts, AES-256-GCM on a per-thread context, random bytes from a per-thread buffer.
@Suite struct SymmetricShimTests {
    // MARK: - HMAC

    struct HMACVector: Sendable, CustomTestStringConvertible {
        let algorithm: HMAC.Algorithm
        let keyLength: Int
        let messageLength: Int
        let mac: String
        var testDescription: String { "\(algorithm) key \(keyLength) message \(messageLength)" }
    }

    /// Key and message lengths around each hash's block (64 bytes for SHA-1 and SHA-256, 128 for
    /// SHA-512): an empty key, a key of one block, one byte more (hashed first, RFC 2104 §2) and
    /// longer. Expected MACs from Python's `hmac` module, an implementation independent of
    /// OpenSSL, over key bytes (7i+3) mod 256 and message bytes (13i+5) mod 256.
    static let vectors: [HMACVector] = [
        .init(algorithm: .sha1, keyLength: 0, messageLength: 0, mac: "fbdb1d1b18aa6c08324b7d64b71fb76370690e1d"),
        .init(algorithm: .sha1, keyLength: 64, messageLength: 65, mac: "ee67b00ce134a56a41446ac0e7e7edd24da01740"),
        .init(algorithm: .sha1, keyLength: 65, messageLength: 1, mac: "a4e197d8b5a8a3a883bf4c6acfbfdbf673a27f67"),
        .init(algorithm: .sha1, keyLength: 200, messageLength: 0, mac: "c00096da73c79a78a311cbeb131e378fbb387458"),
        .init(algorithm: .sha256, keyLength: 0, messageLength: 0, mac: "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"),
        .init(algorithm: .sha256, keyLength: 1, messageLength: 3, mac: "68eb80f282d0e71db5e945538988babb9cfb4ddc592e4e471c5c43967bf2e3cb"),
        .init(algorithm: .sha256, keyLength: 63, messageLength: 64, mac: "9ec1c57ded2e3fd011ce654180bdf04571e1c2d3b9aa76c1e0170194a3d65a2f"),
        .init(algorithm: .sha256, keyLength: 64, messageLength: 65, mac: "df8d7c3296cdbd4f4718ae656cb57b397c8ed16d0851d76eae44e4e8a2ca3b8f"),
        .init(algorithm: .sha256, keyLength: 65, messageLength: 1, mac: "66c217270ada66fbeb10ecefb72ee947563af1187f6daeb9c763358f54e6fe5e"),
        .init(algorithm: .sha256, keyLength: 129, messageLength: 200, mac: "793fd9234ac081d82bef62574ca52215662e76191fc062dd572efbb16dc652db"),
        .init(
            algorithm: .sha512, keyLength: 0, messageLength: 0,
            mac: "b936cee86c9f87aa5d3c6f2e84cb5a4239a5fe50480a6ec66b70ab5b1f4ac6730c6c515421b327ec1d69402e53dfb49ad7381eb067b338fd7b0cb22247225d47"),
        .init(
            algorithm: .sha512, keyLength: 127, messageLength: 128,
            mac: "93d55778f4f68e1725bcab9a671c6549025e91cdbaec838daf983b865929f4e9d0ff62783b688fd21231320b00c5f43ddd3eae141d466147b88c47da51ae6c3e"),
        .init(
            algorithm: .sha512, keyLength: 128, messageLength: 129,
            mac: "7d43896166038533e2fc606e0ebc7d3c566342115e99923bd4ccae78989a194f63059b815da1260dc19ce042149c11197b61287fc4dcaed21168573b73715176"),
        .init(
            algorithm: .sha512, keyLength: 129, messageLength: 200,
            mac: "2cd64d05035f22eddc574f11d6a8d34c307bb0287ab5bd1fb9143dd91965f0d1b23193578af2732976e76c6932254d6b01da1b68efb9042fe378823f634e5970"),
    ]

    @Test(arguments: vectors) func hmacAroundTheBlockLength(_ v: HMACVector) {
        let key = (0..<v.keyLength).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
        let message = (0..<v.messageLength).map { UInt8(truncatingIfNeeded: $0 * 13 + 5) }
        #expect(Hex.encode(HMAC.authenticationCode(v.algorithm, key: key, message: message)) == v.mac)
    }

    /// RFC 4231 test case 6 and RFC 2202 test case 6: keys longer than the block are hashed first.
    @Test func hmacRFCLongKeyVectors() {
        let message = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        #expect(
            Hex.encode(HMAC.authenticationCode(.sha256, key: [UInt8](repeating: 0xAA, count: 131), message: message))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        #expect(
            Hex.encode(HMAC.authenticationCode(.sha1, key: [UInt8](repeating: 0xAA, count: 80), message: message))
                == "aa4ae5e15272d00e95705637ce8a3b55ed402112")
    }

    // MARK: - AES-256-GCM on a per-thread context

    /// One thread's context serves every key and both directions in turn: nothing of one
    /// operation (key, nonce, running hash, the tag of a seal) carries into the next.
    @Test func oneContextAlternatesKeysAndDirections() throws {
        let a = try AES256GCM(key: [UInt8](repeating: 1, count: 32))
        let b = try AES256GCM(key: [UInt8](repeating: 2, count: 32))
        let aad = Array("purpose".utf8)
        for round in 0..<50 {
            let plaintext = (0..<(round * 7)).map { UInt8(truncatingIfNeeded: $0 &+ round) }
            let sealedA = try a.seal(plaintext, associatedData: aad)
            let sealedB = try b.seal(plaintext, associatedData: aad)
            #expect(sealedA != sealedB)
            // A box opened with the other key, right after that key sealed: refused.
            #expect(throws: CryptoError.self) { try b.open(sealedA, associatedData: aad) }
            #expect(try a.open(sealedA, associatedData: aad) == plaintext)
            // A tag changed right after a seal whose tag the context computed: refused.
            var tampered = sealedB
            tampered[tampered.count - 1] ^= 0x80
            #expect(throws: CryptoError.self) { try b.open(tampered, associatedData: aad) }
            #expect(try b.open(sealedB, associatedData: aad) == plaintext)
            // After a refusal the context still opens good boxes.
            #expect(throws: CryptoError.self) { try a.open(sealedA, associatedData: []) }
            #expect(try a.open(sealedA, associatedData: aad) == plaintext)
        }
    }

    /// Many threads seal and open at once, each with its own key: every box opens to its
    /// plaintext under its key only.
    @Test func threadsSealAndOpenConcurrently() throws {
        let boxes = try (0..<8).map { try AES256GCM(key: [UInt8](repeating: UInt8($0 + 10), count: 32)) }
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let box = boxes[i], other = boxes[(i + 1) % 8]
            for n in 0..<300 {
                let plaintext = [UInt8](repeating: UInt8(truncatingIfNeeded: i * 31 + n), count: n % 64)
                guard let sealed = try? box.seal(plaintext, associatedData: [UInt8(i)]),
                    (try? box.open(sealed, associatedData: [UInt8(i)])) == plaintext,
                    (try? other.open(sealed, associatedData: [UInt8(i)])) == nil
                else {
                    failures.add()
                    continue
                }
            }
        }
        #expect(failures.value == 0)
    }

    // MARK: - Random bytes from a per-thread buffer

    @Test func randomBytesAreBufferedHereAndDistinctAcrossThreads() {
        // The kernel here accepts MADV_WIPEONFORK (Linux 4.14 and later): the buffer is in use.
        #expect(SecureRandom.isBufferedOnThisThread)
        let draws = Draws()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            // 300 × 32 bytes: more than two pages of each thread's buffer, so refills happen.
            var mine: [[UInt8]] = []
            for n in 0..<300 { mine.append(SecureRandom.bytes(n % 3 == 0 ? 32 : 16)) }
            draws.add(mine)
        }
        let all = draws.all
        #expect(all.count == 2400)
        #expect(Set(all).count == all.count)
        // Sizes around the buffered bound: exact lengths, and not all zero.
        for count in [0, 1, 255, 256, 257, 4096, 5000] {
            let bytes = SecureRandom.bytes(count)
            #expect(bytes.count == count)
            if count >= 16 { #expect(bytes.contains { $0 != 0 }) }
        }
    }

    /// A forked child starts with an empty buffer (MADV_WIPEONFORK) and serves bytes of its own,
    /// not the ones its parent's buffer serves next.
    @Test func aForkedChildDoesNotServeItsParentsBytes() throws {
        let probe = try #require(ForkProbe.run())
        #expect(probe.parentRemaining > 0)
        #expect(probe.childRemaining == 0)
        #expect(probe.childFirst != probe.parentNext)
        #expect(probe.childFirst.contains { $0 != 0 })
    }
}

private final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

private final class Draws: Sendable {
    private let values = Mutex<[[UInt8]]>([])
    func add(_ more: [[UInt8]]) { values.withLock { $0 += more } }
    var all: [[UInt8]] { values.withLock { $0 } }
}

/// What a forked child's copy of this thread's random buffer held and served, beside what the
/// parent served next (`signet_random_fork_probe`, the test-only CRandomProbe target).
private struct ForkProbe {
    let parentRemaining: Int
    let childRemaining: Int
    let parentNext: [UInt8]
    let childFirst: [UInt8]

    /// Forks once (the child only reads its buffer, draws 32 bytes, reports them and exits).
    /// Nil when the probe could not run.
    static func run() -> ForkProbe? {
        var parentNext = [UInt8](repeating: 0, count: 32), childFirst = [UInt8](repeating: 0, count: 32)
        var childRemaining = 0, parentRemaining = 0
        let ok = parentNext.withUnsafeMutableBufferPointer { p in
            childFirst.withUnsafeMutableBufferPointer { c in
                signet_random_fork_probe(p.baseAddress, c.baseAddress, &childRemaining, &parentRemaining)
            }
        }
        guard ok == 1 else { return nil }
        return ForkProbe(parentRemaining: parentRemaining, childRemaining: childRemaining, parentNext: parentNext, childFirst: childFirst)
    }
}

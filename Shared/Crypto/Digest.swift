import CCryptoShims
import COpenSSL
import FoundationEssentials
import Platform

/// SHA-256 and HMAC-SHA-256 through OpenSSL 3.
public enum SHA256 {
    /// The SHA-256 digest of `data`.
    public static func hash<D: DataProtocol>(_ data: D) -> [UInt8] {
        SHA2.hash(Array(data), length: 32)
    }

    /// HMAC-SHA-256 of `data` under `key` (``HMAC``).
    public static func hmac<K: DataProtocol, D: DataProtocol>(key: K, data: D) -> [UInt8] {
        HMAC.authenticationCode(.sha256, key: Array(key), message: Array(data))
    }
}

/// SHA-256, SHA-384 and SHA-512 through OpenSSL's low-level contexts (`signet_sha2`).
///
/// OpenSSL 3's one-shot `SHA256()` fetches the implementation from the provider on every call,
/// and `EVP_Digest` with a digest fetched once still allocates an `EVP_MD_CTX` and a provider
/// context per call; the low-level context lives on the stack. Every UAF and WebAuthn
/// verification hashes twice or more (client data or fcParams, the signed bytes).
public enum SHA2 {
    /// The digest of `data` of `length` bytes: 32 (SHA-256), 48 (SHA-384) or 64 (SHA-512).
    public static func hash(_ data: [UInt8], length: Int) -> [UInt8] {
        precondition(length == 32 || length == 48 || length == 64, "SHA-2 digests are 32, 48 or 64 bytes here")
        return [UInt8](unsafeUninitializedCapacity: length) { out, count in
            let rc = data.withUnsafeBufferPointer { buf in signet_sha2(length, buf.baseAddress, buf.count, out.baseAddress) }
            precondition(rc == 1, "OpenSSL SHA-2 failed")
            count = length
        }
    }
}

/// Secure randomness and secret comparison.
public enum SecureRandom {
    /// `count` bytes from OpenSSL's CSPRNG (`RAND_bytes`), read through a per-thread buffer
    /// (`signet_random_bytes`): up to 256 bytes are served from a page of the DRBG's output
    /// refilled 4 KiB at a time, wiped from the page as they are served; the page is
    /// `MADV_WIPEONFORK`, so a child process never serves what its parent holds or served.
    /// `RAND_bytes` per call cost about 1 µs and a `getpid(2)` (its fork check) here, against
    /// 13 ns per 32 bytes from the buffer; a sign-in asks five times.
    ///
    /// - Important: Traps if the CSPRNG fails: continuing without randomness would issue
    ///   guessable challenges and keys.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "a negative count of random bytes")
        return [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            if count > 0 {
                precondition(signet_random_bytes(out.baseAddress, count) == 1, "OpenSSL RAND_bytes failed")
            }
            initialized = count
        }
    }

    /// A random token of `byteCount` bytes, base64url without padding.
    public static func token(byteCount: Int = 32) -> String {
        Base64URL.encode(bytes(byteCount))
    }
}

/// Comparison of secrets in constant time: the one implementation every module uses.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes, in time that depends only on their lengths: of
    /// equal lengths through OpenSSL's `CRYPTO_memcmp`; of different lengths (a presented code
    /// against the expected one) by a loop over the longer input that folds every byte
    /// difference, and the length difference, into one accumulator tested once at the end.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        if a.count == b.count {
            if a.isEmpty { return true }
            return a.withUnsafeBytes { pa in
                b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 }
            }
        }
        return unequalLengthsCompare(a, b)
    }

    @inline(never)
    private static func unequalLengthsCompare(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt64(truncatingIfNeeded: a.count ^ b.count)
        for i in 0..<max(a.count, b.count) {
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            difference |= UInt64(x ^ y)
        }
        return difference == 0
    }

    /// Whether two strings have the same UTF-8 bytes, in time that depends only on their
    /// lengths (digit strings are compared as text, so that leading zeros count).
    public static func equals(_ a: String, _ b: String) -> Bool {
        // Native strings hold their UTF-8 contiguously: compared in place, without copies (on
        // the path of every UAF verification: challenge and serverData). Bridged ones are copied.
        let inPlace = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb -> Bool in
                guard pa.count == pb.count else { return unequalLengthsCompare(Array(pa), Array(pb)) }
                return pa.isEmpty || CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, pa.count) == 0
            }
        }
        return (inPlace ?? nil) ?? equals(Array(a.utf8), Array(b.utf8))
    }

    /// Compares two secrets of any length by comparing their SHA-256 digests in constant
    /// time, so that neither content nor length leaks through timing.
    public static func secretsEqual(_ a: String, _ b: String) -> Bool {
        equals(SHA256.hash(Array(a.utf8)), SHA256.hash(Array(b.utf8)))
    }
}

/// Base64url without padding (RFC 4648 §5), as WebAuthn and JOSE use it.
///
/// Table-driven on bytes: it runs on every ceremony (challenges, credential ids, handles),
/// where Foundation's base64 plus string replacements cost more than the checks around it.
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let values: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    /// The encoding as ASCII bytes.
    public static func encodeASCII<D: DataProtocol>(_ data: D) -> [UInt8] {
        withBytes(of: data) { bytes in
            [UInt8](unsafeUninitializedCapacity: encodedCount(bytes.count)) { out, count in
                count = write(bytes, to: out, at: 0)
            }
        }
    }

    /// The encoding as a string, written straight into the string's storage: one allocation
    /// (there were three: a copy of the input, the output array, the string).
    public static func encode<D: DataProtocol>(_ data: D) -> String {
        withBytes(of: data) { bytes in
            String(unsafeUninitializedCapacity: encodedCount(bytes.count)) { out in write(bytes, to: out, at: 0) }
        }
    }

    /// Appends the encoding of `data` to `out` (a token being assembled in one buffer).
    public static func append<D: DataProtocol>(_ data: D, to out: inout [UInt8]) {
        withBytes(of: data) { bytes in
            let start = out.count
            out.append(contentsOf: repeatElement(0, count: encodedCount(bytes.count)))
            out.withUnsafeMutableBufferPointer { buffer in _ = write(bytes, to: buffer, at: start) }
        }
    }

    /// How many characters `count` bytes encode to, unpadded.
    public static func encodedCount(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    /// `data`'s bytes in place when they are contiguous (arrays, slices of them, native strings'
    /// UTF-8), else a copy: the encoders' and the decoder's one way in.
    private static func withBytes<R>(of data: some Collection<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let r = data.withContiguousStorageIfAvailable(body) { return r }
        return Array(data).withUnsafeBufferPointer(body)
    }

    /// Writes the encoding of `bytes` into `out` from `start` (room for ``encodedCount(_:)``
    /// characters); returns the offset after the last.
    private static func write(_ bytes: UnsafeBufferPointer<UInt8>, to out: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        alphabet.withUnsafeBufferPointer { alphabet in
            var i = 0, o = start
            while i + 3 <= bytes.count {
                let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
                out[o + 3] = alphabet[Int(n & 63)]
                i += 3
                o += 4
            }
            switch bytes.count - i {
            case 1:
                let n = UInt32(bytes[i]) << 16
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                o += 2
            case 2:
                let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
                out[o] = alphabet[Int(n >> 18 & 63)]
                out[o + 1] = alphabet[Int(n >> 12 & 63)]
                out[o + 2] = alphabet[Int(n >> 6 & 63)]
                o += 3
            default:
                break
            }
            return o
        }
    }

    /// Decodes canonical unpadded base64url (RFC 4648 §5, RFC 7515 §2): refuses padding,
    /// whitespace, characters outside the alphabet, impossible lengths, and non-canonical
    /// spellings.
    ///
    /// Canonical means the unused low bits of the last character are zero: otherwise `…Q` and
    /// `…R` would decode to the same bytes and one credential id, handle or token would have
    /// several spellings, which defeats anything that keys on the text (deny lists, replay
    /// caches, logs). Every encoder Signet talks to (browsers, authenticators' clients, JOSE
    /// libraries) writes the canonical form.
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        // Contiguous input (arrays, native strings' UTF-8) is read through a buffer pointer:
        // UAF and WebAuthn verifications decode on every request.
        withBytes(of: text) { decode(buffer: $0) }
    }

    private static func decode(buffer text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = text.count
        guard count % 4 != 1 else { return nil }
        return values.withUnsafeBufferPointer { table -> [UInt8]? in
            // 0xFF marks a byte outside the alphabet: any of its high bits set refuses.
            var invalid: UInt8 = 0
            let out = [UInt8](unsafeUninitializedCapacity: count * 3 / 4) { output, initialized in
                var i = 0
                var o = 0
                while i + 4 <= count {
                    let a = table[Int(text[i])], b = table[Int(text[i + 1])], c = table[Int(text[i + 2])], d = table[Int(text[i + 3])]
                    invalid |= a | b | c | d
                    let n = UInt32(a & 0x3F) << 18 | UInt32(b & 0x3F) << 12 | UInt32(c & 0x3F) << 6 | UInt32(d & 0x3F)
                    output[o] = UInt8(truncatingIfNeeded: n >> 16)
                    output[o + 1] = UInt8(truncatingIfNeeded: n >> 8)
                    output[o + 2] = UInt8(truncatingIfNeeded: n)
                    i += 4
                    o += 3
                }
                switch count - i {
                case 2:
                    let a = table[Int(text[i])], b = table[Int(text[i + 1])]
                    invalid |= a | b
                    // Canonical: the 4 bits left over are zero.
                    if b & 0x0F != 0 { invalid |= 0x80 }
                    output[o] = (a & 0x3F) << 2 | (b & 0x3F) >> 4
                    o += 1
                case 3:
                    let a = table[Int(text[i])], b = table[Int(text[i + 1])], c = table[Int(text[i + 2])]
                    invalid |= a | b | c
                    // Canonical: the 2 bits left over are zero.
                    if c & 0x03 != 0 { invalid |= 0x80 }
                    output[o] = (a & 0x3F) << 2 | (b & 0x3F) >> 4
                    output[o + 1] = (b & 0x0F) << 4 | (c & 0x3F) >> 2
                    o += 2
                default:
                    break
                }
                initialized = o
            }
            return invalid & 0xC0 == 0 ? out : nil
        }
    }

    /// The decoded bytes of a string, by the same rules.
    public static func decode(_ s: String) -> [UInt8]? { decode(s.utf8) }
}

/// Lower-case hexadecimal.
public enum Hex {
    public static func encode<D: DataProtocol>(_ data: D) -> String {
        // Into the string's storage (no digits array, no output array).
        String(unsafeUninitializedCapacity: data.count * 2) { HexText.write(data, into: $0, at: 0) }
    }

    public static func decode(_ s: String) -> [UInt8]? {
        var s = s
        return s.withUTF8 { HexText.decode($0) }
    }
}

/// SHA-1, only where a format fixes it (FIDO metadata attestation key identifiers, RFC 5280
/// key identifiers). Never for signatures or secrets.
public enum InsecureSHA1 {
    public static func hash<D: DataProtocol>(_ data: D) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        let bytes = Array(data)
        bytes.withUnsafeBufferPointer { buf in
            _ = COpenSSL.SHA1(buf.baseAddress, buf.count, &out)
        }
        return out
    }
}

// MARK: - Test hooks of the random buffer

extension SecureRandom {
    /// Whether this thread's requests are served from the per-thread buffer (the kernel
    /// accepted `MADV_WIPEONFORK`); otherwise every request goes to `RAND_bytes`.
    static var isBufferedOnThisThread: Bool { signet_random_is_buffered() == 1 }
}

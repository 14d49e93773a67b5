import Crypto

extension JWK {
    /// The key as an OpenSSL public key.
    ///
    /// - Throws: `invalid_key` when the material is not a valid key (EC point off the
    ///   curve, wrong lengths) or an RSA key is under 2048 bits (RFC 7518 §3.3).
    public func publicKey() throws(JOSEError) -> PublicKey {
        let key: PublicKey
        do {
            switch parameters {
            case .ec(let curve, let x, let y): key = try PublicKey.ec(curve: curve, x: x, y: y)
            case .rsa(let n, let e): key = try PublicKey.rsa(modulus: n, exponent: e)
            case .ed25519(let x): key = try PublicKey.ed25519(x)
            }
        } catch {
            throw JOSEError(.invalidKey, "JWK key material is not a valid \(keyType) key")
        }
        if case .rsa(let bits) = key.kind, bits < 2048 {
            throw JOSEError(.invalidKey, "RSA keys under 2048 bits are refused")
        }
        return key
    }

    /// The JWK of a public key.
    ///
    /// - Parameters:
    ///   - publicKey: an EC P-256/P-384/P-521, RSA or Ed25519 key.
    ///   - keyID: the `kid` to publish (Signet uses the thumbprint; see ``thumbprintBase64URL``).
    ///   - algorithm: the `alg` to publish; it must fit the key.
    ///   - use: the `use` to publish, "sig" by default.
    /// - Throws: `invalid_key` if the key cannot be read or `algorithm` does not fit it.
    public init(
        publicKey: PublicKey, keyID: String? = nil, algorithm: JWSAlgorithm? = nil, use: String? = "sig"
    ) throws(JOSEError) {
        if let algorithm, !JWSAlgorithm.algorithms(for: publicKey.kind).contains(algorithm) {
            throw JOSEError(.invalidKey, "\(algorithm) does not fit the key")
        }
        guard let parameters = SubjectPublicKeyInfoReader.parameters(of: publicKey) else {
            throw JOSEError(.invalidKey, "public key could not be exported")
        }
        self.init(parameters: parameters, keyID: keyID, use: use, algorithm: algorithm?.rawValue)
    }
}

/// Reads the key material out of the DER SubjectPublicKeyInfo that Crypto exports (RFC 5480
/// for EC, RFC 8017 A.1.1 for RSA, RFC 8410 for Ed25519).
///
/// Crypto offers the SPKI but not the parts; this small reader saves a dependency on more
/// OpenSSL API here.
private enum SubjectPublicKeyInfoReader {
    static func parameters(of key: PublicKey) -> JWK.Parameters? {
        var reader = DERReader(key.subjectPublicKeyInfo)
        guard let spki = reader.read(tag: 0x30), reader.isAtEnd else { return nil }
        var fields = DERReader(spki)
        guard fields.read(tag: 0x30) != nil,  // AlgorithmIdentifier: the key's kind says which
            let bitString = fields.read(tag: 0x03), fields.isAtEnd,
            bitString.first == 0  // no unused bits
        else { return nil }
        let content = Array(bitString.dropFirst())

        switch key.kind {
        case .ec(let curve):
            // Uncompressed point: 0x04 ‖ x ‖ y.
            let size = curve.coordinateSize
            guard content.count == 1 + 2 * size, content[0] == 0x04 else { return nil }
            return .ec(curve: curve, x: Array(content[1...size]), y: Array(content[(1 + size)...]))
        case .rsa:
            var outer = DERReader(content)
            guard let sequence = outer.read(tag: 0x30), outer.isAtEnd else { return nil }
            var integers = DERReader(sequence)
            guard let n = integers.read(tag: 0x02), let e = integers.read(tag: 0x02), integers.isAtEnd else { return nil }
            let modulus = Array(n.drop { $0 == 0 })
            let exponent = Array(e.drop { $0 == 0 })
            guard !modulus.isEmpty, !exponent.isEmpty else { return nil }
            return .rsa(modulus: modulus, exponent: exponent)
        case .ed25519:
            guard content.count == 32 else { return nil }
            return .ed25519(x: content)
        case .ed448:
            return nil
        }
    }
}

/// Walks DER TLVs with definite lengths.
private struct DERReader {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index == bytes.count }

    /// The content of the next TLV if it has `tag`.
    mutating func read(tag: UInt8) -> [UInt8]? {
        guard index + 2 <= bytes.count, bytes[index] == tag else { return nil }
        var i = index + 1
        var length = Int(bytes[i])
        i += 1
        if length & 0x80 != 0 {
            let n = length & 0x7F
            guard (1...3).contains(n), i + n <= bytes.count else { return nil }
            length = 0
            for _ in 0..<n {
                length = length << 8 | Int(bytes[i])
                i += 1
            }
        }
        guard i + length <= bytes.count else { return nil }
        index = i + length
        return Array(bytes[i..<(i + length)])
    }
}

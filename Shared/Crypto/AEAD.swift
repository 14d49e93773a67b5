import COpenSSL

/// AES-256-GCM authenticated encryption, for sealed handles (stateless ceremony state) and,
/// later, envelope encryption of personal data.
///
/// Sealed format: 12-byte random nonce ‖ ciphertext ‖ 16-byte tag.
public struct AES256GCM: Sendable {
    public static let keySize = 32
    public static let nonceSize = 12
    public static let tagSize = 16

    private let key: [UInt8]

    /// - Throws: ``CryptoError`` unless `key` is 32 bytes.
    public init(key: [UInt8]) throws {
        guard key.count == AES256GCM.keySize else { throw CryptoError("AES-256-GCM keys are 32 bytes") }
        self.key = key
    }

    /// Encrypts and authenticates `plaintext`, binding `associatedData`.
    public func seal(_ plaintext: [UInt8], associatedData: [UInt8] = []) throws -> [UInt8] {
        let nonce = SecureRandom.bytes(AES256GCM.nonceSize)
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError("cipher context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var len: Int32 = 0
        var total = 0
        guard EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1 else { throw CryptoError("encrypt init") }
        if !associatedData.isEmpty {
            guard EVP_EncryptUpdate(ctx, nil, &len, associatedData, Int32(associatedData.count)) == 1 else { throw CryptoError("aad") }
        }
        if !plaintext.isEmpty {
            guard EVP_EncryptUpdate(ctx, &out, &len, plaintext, Int32(plaintext.count)) == 1 else { throw CryptoError("encrypt") }
            total = Int(len)
        }
        let finalOK = out.withUnsafeMutableBufferPointer { EVP_EncryptFinal_ex(ctx, $0.baseAddress! + total, &len) }
        guard finalOK == 1 else { throw CryptoError("encrypt final") }
        total += Int(len)
        var tag = [UInt8](repeating: 0, count: AES256GCM.tagSize)
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(AES256GCM.tagSize), &tag) == 1 else { throw CryptoError("tag") }
        return nonce + Array(out.prefix(total)) + tag
    }

    /// Decrypts a sealed box; any tampering, truncation or wrong key fails.
    public func open(_ sealed: [UInt8], associatedData: [UInt8] = []) throws -> [UInt8] {
        guard sealed.count >= AES256GCM.nonceSize + AES256GCM.tagSize else { throw CryptoError("sealed box too short") }
        let nonce = Array(sealed[..<AES256GCM.nonceSize])
        let ciphertext = Array(sealed[AES256GCM.nonceSize..<(sealed.count - AES256GCM.tagSize)])
        var tag = Array(sealed.suffix(AES256GCM.tagSize))
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError("cipher context") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var len: Int32 = 0
        var total = 0
        guard EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1 else { throw CryptoError("decrypt init") }
        if !associatedData.isEmpty {
            guard EVP_DecryptUpdate(ctx, nil, &len, associatedData, Int32(associatedData.count)) == 1 else { throw CryptoError("aad") }
        }
        if !ciphertext.isEmpty {
            guard EVP_DecryptUpdate(ctx, &out, &len, ciphertext, Int32(ciphertext.count)) == 1 else { throw CryptoError("decrypt") }
            total = Int(len)
        }
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(AES256GCM.tagSize), &tag) == 1 else { throw CryptoError("tag") }
        let ok = out.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(ctx, $0.baseAddress! + total, &len) }
        ERR_clear_error()
        guard ok == 1 else { throw CryptoError("authentication failed") }
        total += Int(len)
        return Array(out.prefix(total))
    }
}

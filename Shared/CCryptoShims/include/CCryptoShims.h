#ifndef SIGNET_CCRYPTOSHIMS_H
#define SIGNET_CCRYPTOSHIMS_H
// OpenSSL calls that the Crypto module makes through C: the low-level EC key, ECDSA sign (ES256)
// and verify, whose API OpenSSL 3 marks deprecated (Swift would warn at every call), and the
// RSA key import whose OSSL_PARAM building reads better in C. Only void pointers
// and plain C types cross this header, so no OpenSSL type is declared by two Clang modules.
#include <stddef.h>
#include <stdint.h>

/// A new EC_KEY holding the public point `point` on curve `nid` (NID_X9_62_prime256v1,
/// NID_secp384r1, NID_secp521r1 or NID_secp256k1), on that curve's shared group (precomputed
/// for P-384 and secp256k1), without OpenSSL 3's decoders. `point` must be the uncompressed
/// X9.62 form, 0x04 ‖ x ‖ y with coordinates of the field's length, below the field's prime, on
/// the curve and not at infinity. Returns NULL for anything else (the error queue is cleared).
/// Free with signet_ec_key_free.
void *signet_ec_public_key_from_point(int nid, const uint8_t *point, size_t point_length);

/// The DER SubjectPublicKeyInfo of an EC_KEY (named curve, the point in the key's conversion
/// form: uncompressed for keys from signet_ec_public_key_from_point) into `*der`, allocated by
/// OpenSSL (free with OPENSSL_free / CRYPTO_free). Returns its length, or 0 (and `*der` NULL).
size_t signet_ec_public_key_spki(void *ec_key, uint8_t **der);

/// A new EVP_PKEY holding the RSA public key (n, e), big-endian unsigned, through
/// EVP_PKEY_fromdata (OpenSSL 3's key import, without its decoders: d2i_PUBKEY of the same key's
/// SubjectPublicKeyInfo cost about 190 µs here, seven RS256 verifications). No check beyond
/// what the DER path made (none on n or e: callers bound them). NULL on failure.
void *signet_rsa_public_key(const uint8_t *modulus, size_t modulus_length, const uint8_t *exponent, size_t exponent_length);

/// The EC_KEY of an EVP_PKEY holding an EC key (a new reference), or NULL.
void *signet_ec_key_from_pkey(void *evp_pkey);

/// Frees what signet_ec_key_from_pkey returned.
void signet_ec_key_free(void *ec_key);

/// ECDSA verification of a DER signature (`ECDSA-Sig-Value`, canonical encoding only) over
/// SHA-2(message) with an EC_KEY, the digest chosen by `digest_length` (32, 48 or 64: SHA-256,
/// -384, -512) and computed by signet_sha2. Returns 1 for a valid signature, 0 otherwise (errors
/// included; the error queue is cleared).
int signet_ecdsa_verify_der(void *ec_key, size_t digest_length, const uint8_t *message, size_t message_length,
                            const uint8_t *signature, size_t signature_length);

/// ECDSA verification of a raw r‖s signature (two big-endian halves of the curve order's
/// length) over md(message), `md` an EVP_MD fetched once by the caller (SHA-256, -384 or
/// -512; only its size is read), with an EC_KEY, through ECDSA_do_verify: no DER encoding
/// and decoding around it, the digest by signet_sha2, and the ECDSA_SIG a per-thread one
/// whose r and s are overwritten (no allocation per call). r and s must lie in [1, n-1]
/// (checked by OpenSSL). Returns 1 for a valid signature, 0 otherwise.
int signet_ecdsa_verify_raw(void *ec_key, const void *md, const uint8_t *message, size_t message_length,
                            const uint8_t *signature, size_t signature_length);

/// SHA-256, SHA-384 or SHA-512 (by `digest_length`: 32, 48 or 64) of `message` into `digest`,
/// through OpenSSL's low-level contexts on the stack: no allocation, no implementation fetch.
/// Returns 1, or 0 for another length or a failure.
int signet_sha2(size_t digest_length, const uint8_t *message, size_t message_length, uint8_t *digest);

/// The same signature as r‖s, each half `half_length` bytes, big-endian, left-padded (JOSE's
/// form, RFC 7518 §3.4: 32 for P-256), into `signature` (2 × `half_length` bytes): without the
/// DER encoding and its parsing back. Returns 1, or 0 on failure (the error queue is cleared).
int signet_ecdsa_sign_sha256_raw(void *ec_key, const uint8_t *message, size_t message_length,
                                 uint8_t *signature, size_t half_length);

/// ECDSA signature over SHA-256(message) with an EC_KEY holding a private key, DER-encoded into
/// `signature` (room for `capacity` bytes; 72 suffice for P-256). Returns the signature's length,
/// or 0 on failure (the error queue is cleared).
size_t signet_ecdsa_sign_sha256(void *ec_key, const uint8_t *message, size_t message_length,
                                uint8_t *signature, size_t capacity);

/// HMAC (RFC 2104) of `message` under `key` with SHA-1, SHA-256 or SHA-512 (`algorithm` 1, 256
/// or 512) into `mac` (room for 20, 32 or 64 bytes), over OpenSSL's low-level SHA contexts on the
/// stack: no MAC or digest fetch, no allocation. The key, its pads and the inner hash are wiped
/// before returning. Returns the MAC's length, or 0 for another algorithm or a failure.
size_t signet_hmac(int algorithm, const uint8_t *key, size_t key_length, const uint8_t *message, size_t message_length,
                   uint8_t *mac);

/// AES-256-GCM encryption of `plaintext` under the 32-byte `key` and 12-byte `nonce`, binding
/// `aad`, into `ciphertext` (room for `plaintext_length` bytes) and the 16-byte `tag`; the
/// cipher is fetched once per process and the context is this thread's, re-keyed on every call.
/// Returns 1, or 0 on failure.
int signet_aes256gcm_seal(const uint8_t *key, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
                          const uint8_t *plaintext, size_t plaintext_length, uint8_t *ciphertext, uint8_t *tag);

/// AES-256-GCM decryption and authentication: 1 when `tag` authenticates `ciphertext` and `aad`
/// under `key` and `nonce` (then `plaintext`, room for `ciphertext_length` bytes, holds the
/// plaintext), 0 otherwise (and `plaintext` is wiped).
int signet_aes256gcm_open(const uint8_t *key, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
                          const uint8_t *ciphertext, size_t ciphertext_length, const uint8_t *tag, uint8_t *plaintext);

/// `count` bytes of OpenSSL's CSPRNG (RAND_bytes, the public DRBG), served from a per-thread page
/// refilled 4 KiB at a time; requests over 256 bytes go to RAND_bytes directly. The page is
/// MADV_WIPEONFORK (a child process starts with it empty) and each byte is wiped from it as it is
/// served. Returns 1, or 0 when the CSPRNG fails.
int signet_random_bytes(uint8_t *out, size_t count);

/// Whether this thread's random bytes come from the buffer (the kernel accepted
/// MADV_WIPEONFORK); 0 means every request goes to RAND_bytes. For tests.
int signet_random_is_buffered(void);

/// How many bytes this thread's random page holds now; -1 when it has none or is unbuffered
/// (for tests: a forked child's copy must hold none).
long signet_random_thread_remaining(void);

#endif

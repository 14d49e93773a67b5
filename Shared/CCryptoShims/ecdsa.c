// ES256 signing and verification through OpenSSL's low-level ECDSA API, the path `openssl speed ecdsap256`
// measures. The EVP path (EVP_DigestVerifyInit per signature) spends a noticeable share of a
// signature fetching the algorithm implementation from the provider; the EC_KEY here is
// extracted once per public key. Deprecated in OpenSSL 3.0, not removed.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "CCryptoShims.h"

#include <limits.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

void *signet_ec_key_from_pkey(void *evp_pkey) {
    return EVP_PKEY_get1_EC_KEY((EVP_PKEY *)evp_pkey);
}

void signet_ec_key_free(void *ec_key) {
    EC_KEY_free((EC_KEY *)ec_key);
}

int signet_ecdsa_verify_sha256(void *ec_key, const uint8_t *message, size_t message_length,
                               const uint8_t *signature, size_t signature_length) {
    if (ec_key == NULL || signature == NULL || signature_length == 0 || signature_length > INT_MAX) return 0;
    unsigned char digest[SHA256_DIGEST_LENGTH];
    if (SHA256(message, message_length, digest) == NULL) return 0;
    // ECDSA_verify refuses signatures whose DER is not the canonical encoding (it re-encodes
    // and compares), as the EVP path does.
    int rc = ECDSA_verify(0, digest, SHA256_DIGEST_LENGTH, signature, (int)signature_length, (EC_KEY *)ec_key);
    if (rc != 1) ERR_clear_error();
    return rc == 1 ? 1 : 0;
}

size_t signet_ecdsa_sign_sha256(void *ec_key, const uint8_t *message, size_t message_length,
                                uint8_t *signature, size_t capacity) {
    if (ec_key == NULL || signature == NULL) return 0;
    if ((size_t)ECDSA_size((const EC_KEY *)ec_key) > capacity) return 0;
    unsigned char digest[SHA256_DIGEST_LENGTH];
    if (SHA256(message, message_length, digest) == NULL) return 0;
    unsigned int length = 0;
    int rc = ECDSA_sign(0, digest, SHA256_DIGEST_LENGTH, signature, &length, (EC_KEY *)ec_key);
    OPENSSL_cleanse(digest, sizeof digest);
    if (rc != 1) {
        ERR_clear_error();
        return 0;
    }
    return length;
}

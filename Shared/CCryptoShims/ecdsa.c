// ES256 signing and verification through OpenSSL's low-level ECDSA API, the path `openssl speed ecdsap256`
// measures. The EVP path (EVP_DigestVerifyInit per signature) spends a noticeable share of a
// signature fetching the algorithm implementation from the provider; the EC_KEY here is
// extracted once per public key. Deprecated in OpenSSL 3.0, not removed.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "CCryptoShims.h"

#include <limits.h>
#include <openssl/bn.h>
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

int signet_ecdsa_verify_raw(void *ec_key, const void *md, const uint8_t *message, size_t message_length,
                            const uint8_t *signature, size_t signature_length) {
    if (ec_key == NULL || md == NULL || signature == NULL || signature_length == 0 || signature_length % 2 != 0) return 0;
    const EC_GROUP *group = EC_KEY_get0_group((EC_KEY *)ec_key);
    if (group == NULL) return 0;
    size_t half = signature_length / 2;
    if (half != (size_t)((EC_GROUP_order_bits(group) + 7) / 8)) return 0;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_length = 0;
    if (EVP_Digest(message, message_length, digest, &digest_length, (const EVP_MD *)md, NULL) != 1) {
        ERR_clear_error();
        return 0;
    }
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(signature, (int)half, NULL);
    BIGNUM *s = BN_bin2bn(signature + half, (int)half, NULL);
    if (sig == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        ERR_clear_error();
        return 0;
    }
    // sig owns r and s from here. ECDSA_do_verify refuses r or s outside [1, n-1].
    int rc = ECDSA_do_verify(digest, (int)digest_length, sig, (EC_KEY *)ec_key);
    ECDSA_SIG_free(sig);
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

// ES256 verification through OpenSSL's low-level ECDSA API, the path `openssl speed ecdsap256`
// measures. The EVP path (EVP_DigestVerifyInit per signature) spends a noticeable share of a
// verification fetching the algorithm implementation from the provider; the EC_KEY here is
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

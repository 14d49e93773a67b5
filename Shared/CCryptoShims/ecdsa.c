// ES256 signing and verification through OpenSSL's low-level ECDSA API, the path `openssl speed ecdsap256`
// measures. The EVP path (EVP_DigestVerifyInit per signature) spends a noticeable share of a
// signature fetching the algorithm implementation from the provider; the EC_KEY here is
// extracted once per public key. Deprecated in OpenSSL 3.0, not removed.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "CCryptoShims.h"

#include <limits.h>
#include <pthread.h>
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

int signet_sha2(size_t digest_length, const uint8_t *message, size_t message_length, uint8_t *digest) {
    // The low-level SHA-2 contexts live on the stack: no EVP_MD_CTX or provider context is
    // allocated and no implementation is fetched (OpenSSL 3's one-shot SHA256() fetches one on
    // every call, and EVP_Digest allocates two contexts).
    if (message == NULL && message_length != 0) return 0;
    switch (digest_length) {
    case SHA256_DIGEST_LENGTH: {
        SHA256_CTX c;
        if (SHA256_Init(&c) != 1 || SHA256_Update(&c, message, message_length) != 1 || SHA256_Final(digest, &c) != 1) return 0;
        OPENSSL_cleanse(&c, sizeof c);
        return 1;
    }
    case SHA384_DIGEST_LENGTH: {
        SHA512_CTX c;
        if (SHA384_Init(&c) != 1 || SHA384_Update(&c, message, message_length) != 1 || SHA384_Final(digest, &c) != 1) return 0;
        OPENSSL_cleanse(&c, sizeof c);
        return 1;
    }
    case SHA512_DIGEST_LENGTH: {
        SHA512_CTX c;
        if (SHA512_Init(&c) != 1 || SHA512_Update(&c, message, message_length) != 1 || SHA512_Final(digest, &c) != 1) return 0;
        OPENSSL_cleanse(&c, sizeof c);
        return 1;
    }
    default:
        return 0;
    }
}

// One ECDSA_SIG per thread, its r and s reused by every raw verification on that thread:
// ECDSA_SIG_new and two BN_bin2bn allocations per call otherwise (five mallocs and frees).
// The key's destructor frees it when the thread ends.
static pthread_key_t raw_sig_key;
static pthread_once_t raw_sig_once = PTHREAD_ONCE_INIT;
static int raw_sig_key_ok = 0;

static void raw_sig_free(void *sig) { ECDSA_SIG_free((ECDSA_SIG *)sig); }

static void raw_sig_key_create(void) { raw_sig_key_ok = pthread_key_create(&raw_sig_key, raw_sig_free) == 0; }

/// This thread's ECDSA_SIG, with r and s allocated; NULL if memory or TLS is short.
static ECDSA_SIG *thread_sig(void) {
    if (pthread_once(&raw_sig_once, raw_sig_key_create) != 0 || !raw_sig_key_ok) return NULL;
    ECDSA_SIG *sig = pthread_getspecific(raw_sig_key);
    if (sig != NULL) return sig;
    sig = ECDSA_SIG_new();
    BIGNUM *r = BN_new();
    BIGNUM *s = BN_new();
    if (sig == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        return NULL;
    }
    if (pthread_setspecific(raw_sig_key, sig) != 0) {
        ECDSA_SIG_free(sig);
        return NULL;
    }
    return sig;
}

int signet_ecdsa_verify_raw(void *ec_key, const void *md, const uint8_t *message, size_t message_length,
                            const uint8_t *signature, size_t signature_length) {
    if (ec_key == NULL || md == NULL || signature == NULL || signature_length == 0 || signature_length % 2 != 0) return 0;
    const EC_GROUP *group = EC_KEY_get0_group((EC_KEY *)ec_key);
    if (group == NULL) return 0;
    size_t half = signature_length / 2;
    if (half != (size_t)((EC_GROUP_order_bits(group) + 7) / 8)) return 0;
    unsigned char digest[EVP_MAX_MD_SIZE];
    int size = EVP_MD_get_size((const EVP_MD *)md);
    if (size <= 0 || signet_sha2((size_t)size, message, message_length, digest) != 1) return 0;
    ECDSA_SIG *sig = thread_sig();
    if (sig == NULL) {
        ERR_clear_error();
        return 0;
    }
    // r and s belong to sig (set0 above); they are overwritten in place, never freed here.
    const BIGNUM *r = NULL, *s = NULL;
    ECDSA_SIG_get0(sig, &r, &s);
    if (BN_bin2bn(signature, (int)half, (BIGNUM *)r) == NULL || BN_bin2bn(signature + half, (int)half, (BIGNUM *)s) == NULL) {
        ERR_clear_error();
        return 0;
    }
    // ECDSA_do_verify refuses r or s outside [1, n-1].
    int rc = ECDSA_do_verify(digest, size, sig, (EC_KEY *)ec_key);
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

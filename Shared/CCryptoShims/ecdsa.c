// ECDSA signing (ES256) and verification (every curve) through OpenSSL's low-level ECDSA API,
// the ECDSA_verify that `openssl speed ecdsapNNN` ends in. The EVP path (EVP_DigestVerifyInit
// per signature) allocates two contexts and fetches the algorithm implementations from the
// provider on every signature; the EC_KEY here is extracted once per public key. Deprecated in
// OpenSSL 3.0, not removed.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "CCryptoShims.h"

#include <limits.h>
#include <pthread.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/sha.h>

// MARK: - Curves verified through the generic Montgomery method: one precomputed group each

// OpenSSL 3.0 verifies P-384 and secp256k1 with the generic prime-field method (no built-in
// table of generator multiples, unlike P-256's nistz256 and P-521's nistp521), so every
// verification computes the generator's odd multiples again for u1*G + u2*Q. One group per such
// curve, with EC_GROUP_precompute_mult done once per process, is shared (by reference: each
// key's EC_GROUP_dup takes a reference on the same immutable table) by every key on the curve:
// callgrind counts 2.5 % fewer instructions per P-384 verification and 3.5 % per secp256k1 one.
// The table depends only on the curve's public parameters; each key keeps its own point, and
// the point is checked on the curve again when it is moved to the shared group.
struct precomputed_curve {
    int nid;
    pthread_once_t once;
    EC_GROUP *group;
};

static struct precomputed_curve precomputed_curves[] = {
    {NID_secp384r1, PTHREAD_ONCE_INIT, NULL},
    {NID_secp256k1, PTHREAD_ONCE_INIT, NULL},
};

#define PRECOMPUTED_CURVE_INIT(i) \
    static void precomputed_curve_init_##i(void) { \
        EC_GROUP *g = EC_GROUP_new_by_curve_name(precomputed_curves[i].nid); \
        if (g != NULL && EC_GROUP_method_of(g) == EC_GFp_mont_method() && EC_GROUP_precompute_mult(g, NULL) == 1) { \
            precomputed_curves[i].group = g; \
        } else { \
            EC_GROUP_free(g); \
        } \
        ERR_clear_error(); \
    }
PRECOMPUTED_CURVE_INIT(0)
PRECOMPUTED_CURVE_INIT(1)
static void (*const precomputed_curve_inits[])(void) = {precomputed_curve_init_0, precomputed_curve_init_1};

/// The shared precomputed group of curve `nid`, or NULL (another curve, or the method has its
/// own table, or the precomputation failed: keys then keep their own group).
static const EC_GROUP *precomputed_group(int nid) {
    for (size_t i = 0; i < sizeof precomputed_curves / sizeof precomputed_curves[0]; i++) {
        if (precomputed_curves[i].nid != nid) continue;
        if (pthread_once(&precomputed_curves[i].once, precomputed_curve_inits[i]) != 0) return NULL;
        return precomputed_curves[i].group;
    }
    return NULL;
}

void *signet_ec_key_from_pkey(void *evp_pkey) {
    EC_KEY *key = EVP_PKEY_get1_EC_KEY((EVP_PKEY *)evp_pkey);
    if (key == NULL) return NULL;
    const EC_GROUP *own = EC_KEY_get0_group(key);
    const EC_POINT *point = EC_KEY_get0_public_key(key);
    const EC_GROUP *shared = own == NULL ? NULL : precomputed_group(EC_GROUP_get_curve_name(own));
    if (shared == NULL || point == NULL || EC_GROUP_cmp(shared, own, NULL) != 0) return key;
    EC_KEY *fast = EC_KEY_new();
    if (fast == NULL || EC_KEY_set_group(fast, shared) != 1 || EC_KEY_set_public_key(fast, point) != 1
        || EC_POINT_is_at_infinity(EC_KEY_get0_group(fast), EC_KEY_get0_public_key(fast))
        || EC_POINT_is_on_curve(EC_KEY_get0_group(fast), EC_KEY_get0_public_key(fast), NULL) != 1) {
        // Keep the key's own group: slower, never wrong.
        EC_KEY_free(fast);
        ERR_clear_error();
        return key;
    }
    EC_KEY_free(key);
    return fast;
}

void signet_ec_key_free(void *ec_key) {
    EC_KEY_free((EC_KEY *)ec_key);
}

int signet_ecdsa_verify_der(void *ec_key, size_t digest_length, const uint8_t *message, size_t message_length,
                            const uint8_t *signature, size_t signature_length) {
    if (ec_key == NULL || signature == NULL || signature_length == 0 || signature_length > INT_MAX) return 0;
    // The digest by signet_sha2 (a context on the stack): OpenSSL 3's one-shot SHA256() fetches
    // the implementation on every call, and the EVP path (EVP_DigestVerifyInit) allocates two
    // contexts and fetches the signature and digest algorithms on every call. EVP_DigestVerify
    // ends in this same ECDSA_verify (callgrind: EVP_DigestVerifyFinal -> ECDSA_verify).
    unsigned char digest[SHA512_DIGEST_LENGTH];
    if (digest_length > sizeof digest || signet_sha2(digest_length, message, message_length, digest) != 1) return 0;
    // ECDSA_verify refuses signatures whose DER is not the canonical encoding (it re-encodes
    // and compares), as the EVP path does.
    int rc = ECDSA_verify(0, digest, (int)digest_length, signature, (int)signature_length, (EC_KEY *)ec_key);
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
    if (signet_sha2(SHA256_DIGEST_LENGTH, message, message_length, digest) != 1) return 0;
    unsigned int length = 0;
    int rc = ECDSA_sign(0, digest, SHA256_DIGEST_LENGTH, signature, &length, (EC_KEY *)ec_key);
    OPENSSL_cleanse(digest, sizeof digest);
    if (rc != 1) {
        ERR_clear_error();
        return 0;
    }
    return length;
}

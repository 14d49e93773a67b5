// EC public keys built from their point, and ECDSA signing (ES256) and verification (every
// curve), through OpenSSL's low-level EC_KEY and ECDSA API: the ECDSA_verify that `openssl speed
// ecdsapNNN` ends in. The EVP path (EVP_DigestVerifyInit per signature) allocates two contexts
// and fetches the algorithm implementations from the provider on every signature; the EC_KEY
// here is made once per public key. A key built from its point skips OpenSSL 3's decoders
// (d2i_PUBKEY of a SubjectPublicKeyInfo: about 240 µs for P-256 here, 2.7 verifications).
// Deprecated in OpenSSL 3.0, not removed.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "CCryptoShims.h"

#include <limits.h>
#include <pthread.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

// MARK: - One shared group per curve

// Every EC public key Signet builds from a point (signet_ec_public_key_from_point) takes its group
// from here: EC_GROUP_new_by_curve_name per key builds the curve from its parameters again
// (field, order, generator, Montgomery constants), where EC_KEY_set_group's EC_GROUP_dup of a
// shared group copies them.
//
// OpenSSL 3.0 verifies P-384 and secp256k1 with the generic prime-field method (no built-in
// table of generator multiples, unlike P-256's nistz256 and P-521's nistp521), so every
// verification computes the generator's odd multiples again for u1*G + u2*Q. The shared group of
// such a curve has EC_GROUP_precompute_mult done once per process, and is shared (by reference:
// each key's EC_GROUP_dup takes a reference on the same immutable table) by every key on the
// curve: callgrind counts 2.5 % fewer instructions per P-384 verification and 3.5 % per
// secp256k1 one. The table depends only on the curve's public parameters; each key keeps its
// own point, and the point is checked on the curve when it is set on that group.
struct shared_curve {
    int nid;
    int precompute;  // whether to precompute the generator's multiples (generic method only)
    pthread_once_t once;
    EC_GROUP *group;
    int precomputed;  // whether `group` holds the precomputed table
};

static struct shared_curve shared_curves[] = {
    {NID_X9_62_prime256v1, 0, PTHREAD_ONCE_INIT, NULL, 0},
    {NID_secp384r1, 1, PTHREAD_ONCE_INIT, NULL, 0},
    {NID_secp521r1, 0, PTHREAD_ONCE_INIT, NULL, 0},
    {NID_secp256k1, 1, PTHREAD_ONCE_INIT, NULL, 0},
};

static void shared_curve_init(struct shared_curve *c) {
    EC_GROUP *g = EC_GROUP_new_by_curve_name(c->nid);
    if (g != NULL && c->precompute && EC_GROUP_method_of(g) == EC_GFp_mont_method()) {
        if (EC_GROUP_precompute_mult(g, NULL) == 1) {
            c->precomputed = 1;
        } else {
            // A failed precomputation may leave the group half-built: start again without it.
            EC_GROUP_free(g);
            g = EC_GROUP_new_by_curve_name(c->nid);
        }
    }
    c->group = g;
    ERR_clear_error();
}

#define SHARED_CURVE_INIT(i) \
    static void shared_curve_init_##i(void) { shared_curve_init(&shared_curves[i]); }
SHARED_CURVE_INIT(0)
SHARED_CURVE_INIT(1)
SHARED_CURVE_INIT(2)
SHARED_CURVE_INIT(3)
static void (*const shared_curve_inits[])(void) = {shared_curve_init_0, shared_curve_init_1, shared_curve_init_2, shared_curve_init_3};

/// The shared curve of `nid`, initialised, or NULL (another curve, or no memory).
static const struct shared_curve *shared_curve(int nid) {
    for (size_t i = 0; i < sizeof shared_curves / sizeof shared_curves[0]; i++) {
        if (shared_curves[i].nid != nid) continue;
        if (pthread_once(&shared_curves[i].once, shared_curve_inits[i]) != 0) return NULL;
        return shared_curves[i].group == NULL ? NULL : &shared_curves[i];
    }
    return NULL;
}

/// The shared precomputed group of curve `nid`, or NULL (another curve, or the method has its
/// own table, or the precomputation failed: keys then keep their own group).
static const EC_GROUP *precomputed_group(int nid) {
    const struct shared_curve *c = shared_curve(nid);
    return c != NULL && c->precomputed ? c->group : NULL;
}

void *signet_ec_public_key_from_point(int nid, const uint8_t *point, size_t point_length) {
    const struct shared_curve *curve = shared_curve(nid);
    if (curve == NULL || point == NULL) return NULL;
    // The uncompressed form only (X9.62 §4.3.6: 0x04 ‖ x ‖ y, each coordinate the field's
    // length): no compressed (0x02/0x03) or hybrid (0x06/0x07) form, no infinity (0x00).
    size_t field = ((size_t)EC_GROUP_get_degree(curve->group) + 7) / 8;
    if (field == 0 || point_length != 1 + 2 * field || point[0] != POINT_CONVERSION_UNCOMPRESSED) return NULL;
    EC_KEY *key = EC_KEY_new();
    EC_POINT *q = NULL;
    if (key == NULL || EC_KEY_set_group(key, curve->group) != 1) goto refused;
    const EC_GROUP *group = EC_KEY_get0_group(key);
    q = EC_POINT_new(group);
    // EC_POINT_oct2point refuses a coordinate not below the field's prime and a point not on
    // the curve (EC_POINT_set_affine_coordinates checks it); both are checked again below, so
    // that this never rests on one OpenSSL version's internals. The curves here have cofactor 1:
    // every point on the curve but infinity has the group's order, so EC_KEY_check_key's
    // n·Q = O (a scalar multiplication, as costly as a verification) adds nothing.
    if (q == NULL || EC_POINT_oct2point(group, q, point, point_length, NULL) != 1) goto refused;
    if (EC_POINT_is_at_infinity(group, q) || EC_POINT_is_on_curve(group, q, NULL) != 1) goto refused;
    if (EC_KEY_set_public_key(key, q) != 1) goto refused;
    EC_POINT_free(q);
    return key;
refused:
    EC_POINT_free(q);
    EC_KEY_free(key);
    ERR_clear_error();
    return NULL;
}

size_t signet_ec_public_key_spki(void *ec_key, uint8_t **der) {
    if (ec_key == NULL || der == NULL) return 0;
    *der = NULL;
    int n = i2d_EC_PUBKEY((const EC_KEY *)ec_key, der);
    if (n <= 0) {
        ERR_clear_error();
        OPENSSL_free(*der);
        *der = NULL;
        return 0;
    }
    return (size_t)n;
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

// ECDSA over SHA-256(message) with an EC_KEY holding a private key; NULL on failure (the
// error queue cleared). The caller frees the signature.
static ECDSA_SIG *ecdsa_sign_sha256(void *ec_key, const uint8_t *message, size_t message_length) {
    unsigned char digest[SHA256_DIGEST_LENGTH];
    if (signet_sha2(SHA256_DIGEST_LENGTH, message, message_length, digest) != 1) return NULL;
    ECDSA_SIG *sig = ECDSA_do_sign(digest, SHA256_DIGEST_LENGTH, (EC_KEY *)ec_key);
    OPENSSL_cleanse(digest, sizeof digest);
    if (sig == NULL) ERR_clear_error();
    return sig;
}

size_t signet_ecdsa_sign_sha256(void *ec_key, const uint8_t *message, size_t message_length,
                                uint8_t *signature, size_t capacity) {
    if (ec_key == NULL || signature == NULL) return 0;
    if ((size_t)ECDSA_size((const EC_KEY *)ec_key) > capacity) return 0;
    ECDSA_SIG *sig = ecdsa_sign_sha256(ec_key, message, message_length);
    if (sig == NULL) return 0;
    unsigned char *out = signature;
    int length = i2d_ECDSA_SIG(sig, &out);
    ECDSA_SIG_free(sig);
    if (length <= 0) {
        ERR_clear_error();
        return 0;
    }
    return (size_t)length;
}

int signet_ecdsa_sign_sha256_raw(void *ec_key, const uint8_t *message, size_t message_length,
                                 uint8_t *signature, size_t half_length) {
    if (ec_key == NULL || signature == NULL || half_length == 0 || half_length > 66) return 0;
    ECDSA_SIG *sig = ecdsa_sign_sha256(ec_key, message, message_length);
    if (sig == NULL) return 0;
    const BIGNUM *r = NULL, *s = NULL;
    ECDSA_SIG_get0(sig, &r, &s);
    int ok = BN_bn2binpad(r, signature, (int)half_length) == (int)half_length
             && BN_bn2binpad(s, signature + half_length, (int)half_length) == (int)half_length;
    ECDSA_SIG_free(sig);
    if (!ok) {
        OPENSSL_cleanse(signature, 2 * half_length);
        ERR_clear_error();
        return 0;
    }
    return 1;
}

// MARK: - RSA public keys from their parts

void *signet_rsa_public_key(const uint8_t *modulus, size_t modulus_length, const uint8_t *exponent, size_t exponent_length) {
    if (modulus == NULL || exponent == NULL || modulus_length == 0 || exponent_length == 0 || modulus_length > INT_MAX
        || exponent_length > INT_MAX) {
        return NULL;
    }
    EVP_PKEY *key = NULL;
    BIGNUM *n = BN_bin2bn(modulus, (int)modulus_length, NULL);
    BIGNUM *e = BN_bin2bn(exponent, (int)exponent_length, NULL);
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *context = NULL;
    if (n == NULL || e == NULL || builder == NULL || OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, n) != 1
        || OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, e) != 1 || (params = OSSL_PARAM_BLD_to_param(builder)) == NULL
        || (context = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) == NULL || EVP_PKEY_fromdata_init(context) != 1
        || EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    EVP_PKEY_CTX_free(context);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(builder);
    BN_free(n);
    BN_free(e);
    ERR_clear_error();
    return key;
}

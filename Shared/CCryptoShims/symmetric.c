// The symmetric primitives of every request: HMAC (subject references, OTP, HKDF), AES-256-GCM
// (sealed ceremony handles) and random bytes (challenges, nonces, token ids), without OpenSSL 3's
// per-call implementation fetch.
//
// Measured on this machine (release, one thread, loaded machine; /tmp micro-benchmark of the same
// calls, figures in the commit that added this file):
//   HMAC() one-shot (EVP_Q_mac: EVP_MAC_fetch, a MAC context and a digest fetch per call) 2.2 µs,
//     the same HMAC-SHA-256 over the low-level SHA-256 context on the stack 0.23 µs;
//   AES-256-GCM seal with EVP_aes_256_gcm() (an implicit fetch, a cipher context and a provider
//     context per call) 1.45 µs, with the cipher fetched once 0.94 µs, and with a per-thread
//     context re-keyed per call 0.6-0.7 µs;
//   RAND_bytes(32) 0.96 µs and one getpid(2) (the DRBG's fork check) per call, against 13 ns per
//     32 bytes served from a 4 KiB per-thread buffer refilled by one RAND_bytes.
// Deprecated low-level SHA contexts: deprecated in OpenSSL 3.0, not removed (as ecdsa.c).
#define OPENSSL_SUPPRESS_DEPRECATED
#include "CCryptoShims.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

// MARK: - HMAC (RFC 2104) over the low-level SHA contexts

// The three hashes behind one small interface. Each context lives on the caller's stack.
union sha_ctx {
    SHA_CTX sha1;
    SHA256_CTX sha256;
    SHA512_CTX sha512;
};

struct sha_kind {
    size_t digest_length;
    size_t block_length;
};

static int sha_kind(int algorithm, struct sha_kind *kind) {
    switch (algorithm) {
    case 1: kind->digest_length = 20; kind->block_length = 64; return 1;
    case 256: kind->digest_length = 32; kind->block_length = 64; return 1;
    case 512: kind->digest_length = 64; kind->block_length = 128; return 1;
    default: return 0;
    }
}

static int sha_init(int algorithm, union sha_ctx *c) {
    switch (algorithm) {
    case 1: return SHA1_Init(&c->sha1);
    case 256: return SHA256_Init(&c->sha256);
    default: return SHA512_Init(&c->sha512);
    }
}

static int sha_update(int algorithm, union sha_ctx *c, const uint8_t *data, size_t length) {
    if (length == 0) return 1;
    switch (algorithm) {
    case 1: return SHA1_Update(&c->sha1, data, length);
    case 256: return SHA256_Update(&c->sha256, data, length);
    default: return SHA512_Update(&c->sha512, data, length);
    }
}

static int sha_final(int algorithm, union sha_ctx *c, uint8_t *digest) {
    switch (algorithm) {
    case 1: return SHA1_Final(digest, &c->sha1);
    case 256: return SHA256_Final(digest, &c->sha256);
    default: return SHA512_Final(digest, &c->sha512);
    }
}

size_t signet_hmac(int algorithm, const uint8_t *key, size_t key_length, const uint8_t *message, size_t message_length,
                   uint8_t *mac) {
    struct sha_kind kind;
    if (!sha_kind(algorithm, &kind)) return 0;
    // RFC 2104 §2: K0 is the key padded with zeros to the block length, or the key's hash
    // (then padded) when the key is longer than a block.
    uint8_t k0[128] = {0};
    uint8_t pad[128];
    uint8_t inner[64];
    union sha_ctx c;
    int ok = 1;
    if (key_length > kind.block_length) {
        ok = sha_init(algorithm, &c) && sha_update(algorithm, &c, key, key_length) && sha_final(algorithm, &c, k0);
    } else if (key_length > 0) {
        memcpy(k0, key, key_length);
    }
    // H((K0 ^ ipad) ‖ message)
    for (size_t i = 0; i < kind.block_length; i++) pad[i] = k0[i] ^ 0x36;
    ok = ok && sha_init(algorithm, &c) && sha_update(algorithm, &c, pad, kind.block_length)
        && sha_update(algorithm, &c, message, message_length) && sha_final(algorithm, &c, inner);
    // H((K0 ^ opad) ‖ inner)
    for (size_t i = 0; i < kind.block_length; i++) pad[i] = k0[i] ^ 0x5c;
    ok = ok && sha_init(algorithm, &c) && sha_update(algorithm, &c, pad, kind.block_length)
        && sha_update(algorithm, &c, inner, kind.digest_length) && sha_final(algorithm, &c, mac);
    // The key, its pads and the inner hash never stay on the stack.
    OPENSSL_cleanse(k0, sizeof k0);
    OPENSSL_cleanse(pad, sizeof pad);
    OPENSSL_cleanse(inner, sizeof inner);
    OPENSSL_cleanse(&c, sizeof c);
    return ok ? kind.digest_length : 0;
}

// MARK: - AES-256-GCM with the cipher fetched once and a context per thread

static pthread_once_t gcm_once = PTHREAD_ONCE_INIT;
static EVP_CIPHER *gcm_cipher;
static pthread_key_t gcm_context_key;
static int gcm_key_ok;

static void gcm_context_free(void *ctx) { EVP_CIPHER_CTX_free(ctx); }

static void gcm_init(void) {
    gcm_cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    gcm_key_ok = pthread_key_create(&gcm_context_key, gcm_context_free) == 0;
    ERR_clear_error();
}

// This thread's context, created on first use with the cipher set (no key, no nonce). Every
// operation below sets both again with EVP_CipherInit_ex2(ctx, NULL, key, nonce, enc), which
// re-keys the provider context and restarts GCM from the nonce (CRYPTO_gcm128_setiv clears the
// running hash and lengths): nothing of one operation reaches the next. The context is used
// from start to end of one C call, never across a suspension, so no two callers share it.
// Freed with the thread (pthread key destructor).
static EVP_CIPHER_CTX *gcm_context(void) {
    if (pthread_once(&gcm_once, gcm_init) != 0 || gcm_cipher == NULL || !gcm_key_ok) return NULL;
    EVP_CIPHER_CTX *ctx = pthread_getspecific(gcm_context_key);
    if (ctx != NULL) return ctx;
    ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return NULL;
    if (EVP_CipherInit_ex2(ctx, gcm_cipher, NULL, NULL, 1, NULL) != 1 || pthread_setspecific(gcm_context_key, ctx) != 0) {
        EVP_CIPHER_CTX_free(ctx);
        ERR_clear_error();
        return NULL;
    }
    return ctx;
}

int signet_aes256gcm_seal(const uint8_t *key, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
                          const uint8_t *plaintext, size_t plaintext_length, uint8_t *ciphertext, uint8_t *tag) {
    if (aad_length > INT32_MAX || plaintext_length > INT32_MAX) return 0;
    EVP_CIPHER_CTX *ctx = gcm_context();
    if (ctx == NULL) return 0;
    int len = 0;
    uint8_t final_out[16];  // GCM's final call writes nothing (a stream mode); never read
    int ok = EVP_CipherInit_ex2(ctx, NULL, key, nonce, 1, NULL) == 1
        && (aad_length == 0 || EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_length) == 1)
        && (plaintext_length == 0 || EVP_EncryptUpdate(ctx, ciphertext, &len, plaintext, (int)plaintext_length) == 1)
        && (size_t)len == (plaintext_length == 0 ? (size_t)len : plaintext_length)
        && EVP_EncryptFinal_ex(ctx, final_out, &len) == 1 && len == 0
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
    ERR_clear_error();
    return ok;
}

int signet_aes256gcm_open(const uint8_t *key, const uint8_t *nonce, const uint8_t *aad, size_t aad_length,
                          const uint8_t *ciphertext, size_t ciphertext_length, const uint8_t *tag, uint8_t *plaintext) {
    if (aad_length > INT32_MAX || ciphertext_length > INT32_MAX) return 0;
    EVP_CIPHER_CTX *ctx = gcm_context();
    if (ctx == NULL) return 0;
    int len = 0;
    uint8_t expected[16];
    uint8_t final_out[16];  // GCM's final call writes nothing (a stream mode); never read
    memcpy(expected, tag, 16);
    // The tag is set before the final call, on every call: EVP_DecryptFinal_ex compares the
    // computed tag with it in constant time (CRYPTO_memcmp) and fails on any difference.
    int ok = EVP_CipherInit_ex2(ctx, NULL, key, nonce, 0, NULL) == 1
        && (aad_length == 0 || EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_length) == 1)
        && (ciphertext_length == 0 || EVP_DecryptUpdate(ctx, plaintext, &len, ciphertext, (int)ciphertext_length) == 1)
        && (size_t)len == (ciphertext_length == 0 ? (size_t)len : ciphertext_length)
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, expected) == 1
        && EVP_DecryptFinal_ex(ctx, final_out, &len) == 1 && len == 0;
    ERR_clear_error();
    if (!ok && ciphertext_length > 0) OPENSSL_cleanse(plaintext, ciphertext_length);
    return ok;
}

// MARK: - Random bytes: a per-thread buffer of OpenSSL's CSPRNG output, wiped on fork

// Each thread keeps one page: a count and the bytes not yet served. A request takes bytes from
// the end of what is left and wipes them from the buffer as it takes them (bytes handed out are
// not kept). An empty buffer is refilled with one RAND_bytes call, OpenSSL's public DRBG (the
// generator every caller used before): the output is the same CSPRNG's, read in larger pieces.
//
// Fork safety by design, not by a check per call: the page is marked MADV_WIPEONFORK (Linux
// 4.14), so a child process sees it zero-filled, count included, and refills from its own DRBG
// (which OpenSSL reseeds in a child). No child ever serves bytes its parent also served or
// holds. Where the kernel refuses the mark the thread does not buffer at all: every request
// goes to RAND_bytes as before.
//
// Threads never share a page (pthread key; the page is wiped and unmapped when its thread
// ends), so no two threads serve the same bytes.
#define RANDOM_PAGE 4096
struct random_page {
    size_t remaining;
    int unbuffered;  // the kernel refused MADV_WIPEONFORK: this thread goes to RAND_bytes
    uint8_t bytes[RANDOM_PAGE - 2 * sizeof(size_t)];
};
_Static_assert(sizeof(struct random_page) == RANDOM_PAGE, "one page per thread");
// Requests longer than this go to RAND_bytes directly (keys, seeds): buffering pays for the
// small, frequent ones.
#define RANDOM_BUFFERED_MAX 256

static pthread_once_t random_once = PTHREAD_ONCE_INIT;
static pthread_key_t random_key;
static int random_key_ok;

static void random_page_free(void *p) {
    OPENSSL_cleanse(p, RANDOM_PAGE);
    munmap(p, RANDOM_PAGE);
}

static void random_init(void) { random_key_ok = pthread_key_create(&random_key, random_page_free) == 0; }

static struct random_page *random_page(void) {
    if (pthread_once(&random_once, random_init) != 0 || !random_key_ok) return NULL;
    struct random_page *page = pthread_getspecific(random_key);
    if (page != NULL) return page;
    void *p = mmap(NULL, RANDOM_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    page = p;
    page->remaining = 0;
    page->unbuffered = 0;
#ifdef MADV_WIPEONFORK
    if (madvise(p, RANDOM_PAGE, MADV_WIPEONFORK) != 0) page->unbuffered = 1;
#else
    page->unbuffered = 1;
#endif
    if (pthread_setspecific(random_key, page) != 0) {
        munmap(p, RANDOM_PAGE);
        return NULL;
    }
    return page;
}

int signet_random_bytes(uint8_t *out, size_t count) {
    if (count == 0) return 1;
    if (count > RANDOM_BUFFERED_MAX) return count <= INT32_MAX && RAND_bytes(out, (int)count) == 1;
    struct random_page *page = random_page();
    if (page == NULL || page->unbuffered) return RAND_bytes(out, (int)count) == 1;
    if (page->remaining < count) {
        // What is left is fewer bytes than asked: wiped and replaced, never served.
        if (RAND_bytes(page->bytes, (int)sizeof page->bytes) != 1) {
            OPENSSL_cleanse(page->bytes, sizeof page->bytes);
            page->remaining = 0;
            return 0;
        }
        page->remaining = sizeof page->bytes;
    }
    page->remaining -= count;
    memcpy(out, page->bytes + page->remaining, count);
    OPENSSL_cleanse(page->bytes + page->remaining, count);
    return 1;
}

int signet_random_is_buffered(void) {
    struct random_page *page = random_page();
    return page != NULL && !page->unbuffered;
}

long signet_random_thread_remaining(void) {
    if (pthread_once(&random_once, random_init) != 0 || !random_key_ok) return -1;
    struct random_page *page = pthread_getspecific(random_key);
    if (page == NULL || page->unbuffered) return -1;
    return (long)page->remaining;
}

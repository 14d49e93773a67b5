#ifndef SIGNET_CCRYPTOSHIMS_H
#define SIGNET_CCRYPTOSHIMS_H
// OpenSSL calls that the Crypto module makes through C: the low-level ECDSA sign and verify of ES256,
// whose API OpenSSL 3 marks deprecated (Swift would warn at every call). Only void pointers
// and plain C types cross this header, so no OpenSSL type is declared by two Clang modules.
#include <stddef.h>
#include <stdint.h>

/// The EC_KEY of an EVP_PKEY holding an EC key (a new reference), or NULL.
void *signet_ec_key_from_pkey(void *evp_pkey);

/// Frees what signet_ec_key_from_pkey returned.
void signet_ec_key_free(void *ec_key);

/// ECDSA verification of a DER signature over SHA-256(message) with an EC_KEY.
/// Returns 1 for a valid signature, 0 otherwise (errors included; the error queue is cleared).
int signet_ecdsa_verify_sha256(void *ec_key, const uint8_t *message, size_t message_length,
                               const uint8_t *signature, size_t signature_length);

/// ECDSA signature over SHA-256(message) with an EC_KEY holding a private key, DER-encoded into
/// `signature` (room for `capacity` bytes; 72 suffice for P-256). Returns the signature's length,
/// or 0 on failure (the error queue is cleared).
size_t signet_ecdsa_sign_sha256(void *ec_key, const uint8_t *message, size_t message_length,
                                uint8_t *signature, size_t capacity);

#endif

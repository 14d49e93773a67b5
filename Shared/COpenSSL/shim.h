#ifndef SIGNET_COPENSSL_H
#define SIGNET_COPENSSL_H
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#endif

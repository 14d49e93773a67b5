// JOSE: JWS, JWT, JWK and JWKS, on OpenSSL through the Crypto module.
//
// - ``JWK`` and ``JWKSet``: strict parsing of public keys and key sets, conversion to and
//   from `Crypto.PublicKey`, RFC 7638 thumbprints.
// - ``JWS``: compact serialization; ``JWSVerificationKey`` binds a key to the one algorithm
//   it verifies, so the algorithm never comes from the token.
// - ``JWTClaims``, ``JWTValidationOptions`` and ``JWTVerifier``: claim sets and their checks.
// - ``JWTSigner`` and ``SigningKeyRing``: ES256 signing, key files, rotation, the JWKS.
// - ``JOSEError``: stable error codes for all of the above.
//
// Never `alg: none`, never HS*, never an algorithm taken from the token itself
// (ARCHITECTURE.md, "Tokens and keys").

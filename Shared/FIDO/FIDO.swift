/// FIDO: CBOR, COSE, WebAuthn and (later) UAF verification.
///
/// Entry points:
/// - ``RegistrationVerifier`` — WebAuthn L3 §7.1, attestation through ``AttestationFormatVerifier``s
///   registered in an ``AttestationFormatRegistry`` (none, packed, fido-u2f, tpm, android-key,
///   android-safetynet, apple), trust through an ``AttestationTrustEvaluator``.
/// - Metadata and policy: ``MetadataService`` (FIDO MDS3), ``FIDOPolicy``.
/// - ``AssertionVerifier`` — WebAuthn L3 §7.2.
/// - Parsers they build on: ``CBORDecoder``, ``COSEKey``, ``AuthenticatorData``,
///   ``AttestationObject``, ``CollectedClientData``.
/// Every refusal is a ``WebAuthnError`` (or ``CBORError`` / ``COSEKeyError`` from the parsers)
/// with a stable code.

/// FIDO: CBOR, COSE, WebAuthn and (later) UAF verification.
///
/// Entry points:
/// - ``RegistrationVerifier`` — WebAuthn L3 §7.1, attestation through ``AttestationFormatVerifier``s
///   registered in an ``AttestationFormatRegistry`` (``NoneAttestation``, ``PackedAttestation``).
/// - ``AssertionVerifier`` — WebAuthn L3 §7.2.
/// - Parsers they build on: ``CBORDecoder``, ``COSEKey``, ``AuthenticatorData``,
///   ``AttestationObject``, ``CollectedClientData``.
/// Every refusal is a ``WebAuthnError`` (or ``CBORError`` / ``COSEKeyError`` from the parsers)
/// with a stable code.

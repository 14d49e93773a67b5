/// FIDO: CBOR, COSE, WebAuthn and UAF verification (see the files of this module).

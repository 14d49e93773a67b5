// base64url and the WebAuthn L3 JSON forms, shared by the console (served by signet-console at
// /console/webauthn-json.js) and the demo page (the local gateway serves this same file at
// /demo/webauthn-json.js). Both pages' CSP is script-src 'self': a same-origin script file, no
// inline code. Browsers with the L3 helpers (parseCreationOptionsFromJSON,
// parseRequestOptionsFromJSON, PublicKeyCredential.toJSON) use them; the rest is the fallback.
"use strict";

window.SignetWebAuthnJSON = (() => {
  function b64urlToBuffer(s) {
    const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4);
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }

  function bufferToB64url(buf) {
    const bytes = new Uint8Array(buf instanceof ArrayBuffer ? buf : buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
    let bin = "";
    for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  const descriptors = (list) => (list || []).map((d) => ({ ...d, id: b64urlToBuffer(d.id) }));

  function creationOptions(json) {
    if (typeof PublicKeyCredential.parseCreationOptionsFromJSON === "function") {
      return PublicKeyCredential.parseCreationOptionsFromJSON(json);
    }
    return {
      ...json,
      challenge: b64urlToBuffer(json.challenge),
      user: { ...json.user, id: b64urlToBuffer(json.user.id) },
      excludeCredentials: descriptors(json.excludeCredentials),
    };
  }

  function requestOptions(json) {
    if (typeof PublicKeyCredential.parseRequestOptionsFromJSON === "function") {
      return PublicKeyCredential.parseRequestOptionsFromJSON(json);
    }
    return { ...json, challenge: b64urlToBuffer(json.challenge), allowCredentials: descriptors(json.allowCredentials) };
  }

  function credentialJSON(credential) {
    if (typeof credential.toJSON === "function") return credential.toJSON();
    const r = credential.response;
    const response = { clientDataJSON: bufferToB64url(r.clientDataJSON) };
    if (r.attestationObject) {
      response.attestationObject = bufferToB64url(r.attestationObject);
      if (typeof r.getTransports === "function") response.transports = r.getTransports();
      if (typeof r.getAuthenticatorData === "function") response.authenticatorData = bufferToB64url(r.getAuthenticatorData());
      if (typeof r.getPublicKeyAlgorithm === "function") response.publicKeyAlgorithm = r.getPublicKeyAlgorithm();
      if (typeof r.getPublicKey === "function" && r.getPublicKey()) response.publicKey = bufferToB64url(r.getPublicKey());
    } else {
      response.authenticatorData = bufferToB64url(r.authenticatorData);
      response.signature = bufferToB64url(r.signature);
      if (r.userHandle) response.userHandle = bufferToB64url(r.userHandle);
    }
    return {
      id: credential.id,
      rawId: bufferToB64url(credential.rawId),
      type: credential.type,
      authenticatorAttachment: credential.authenticatorAttachment || undefined,
      response,
      clientExtensionResults: credential.getClientExtensionResults(),
    };
  }

  return Object.freeze({ b64urlToBuffer, bufferToB64url, creationOptions, requestOptions, credentialJSON });
})();

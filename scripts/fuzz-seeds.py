#!/usr/bin/env python3
"""Seeds for the fuzz targets (Tools/Fuzz), derived from ../shared/vectors and a few
hand-written inputs. The repository keeps the minimised corpus (Tools/Fuzz/Corpus); run this
again only to re-seed from the vectors, then minimise (scripts/fuzz.sh merge).

Usage: python3 scripts/fuzz-seeds.py [vectors-dir] [out-dir]
"""
import base64, hashlib, json, os, struct, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
vectors = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "..", "shared", "vectors")
out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, ".build", "fuzz-seeds")


def b64u(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def cbor(b, i=0):
    """A minimal definite-length CBOR decoder: (value, next index). Maps are lists of pairs."""
    ib = b[i]; mt, ai = ib >> 5, ib & 31; i += 1
    if ai < 24: n = ai
    elif ai == 24: n = b[i]; i += 1
    elif ai == 25: n = struct.unpack(">H", b[i:i+2])[0]; i += 2
    elif ai == 26: n = struct.unpack(">I", b[i:i+4])[0]; i += 4
    elif ai == 27: n = struct.unpack(">Q", b[i:i+8])[0]; i += 8
    else: raise ValueError("indefinite")
    if mt in (0, 1, 7): return (n if mt == 0 else -1 - n if mt == 1 else n), i
    if mt in (2, 3): return b[i:i+n], i + n
    if mt == 4:
        xs = []
        for _ in range(n): v, i = cbor(b, i); xs.append(v)
        return xs, i
    if mt == 5:
        xs = []
        for _ in range(n):
            k, i = cbor(b, i); v, i = cbor(b, i); xs.append((k, v))
        return xs, i
    if mt == 6: return cbor(b, i)
    raise ValueError(mt)


def get(m, key):
    for k, v in m:
        if k == key or (isinstance(k, bytes) and k == key.encode()): return v
    return None


registrations = json.load(open(os.path.join(vectors, "webauthn_registration.json")))
for r in registrations:
    resp = r["response"]["response"]
    att = b64u(resp["attestationObject"]); cdj = b64u(resp["clientDataJSON"])
    write("CBORFuzz", att)
    write("AttestationFuzz", hashlib.sha256(cdj).digest() + att)
    write("JSONFuzz", cdj)
    try:
        m, _ = cbor(att)
    except Exception:
        continue
    auth = get(m, "authData"); stmt = get(m, "attStmt") or []
    if isinstance(auth, bytes):
        write("AuthenticatorDataFuzz", auth)
        if len(auth) > 55 and auth[32] & 0x40:
            n = struct.unpack(">H", auth[53:55])[0]
            try:
                key, end = cbor(auth, 55 + n)
                write("COSEKeyFuzz", auth[55 + n:end]); write("CBORFuzz", auth[55 + n:end])
            except Exception:
                pass
    x5c = get(stmt, "x5c") if isinstance(stmt, list) else None
    if isinstance(x5c, list) and x5c:
        write("X509Fuzz", b"".join(x5c))
        for c in x5c: write("X509Fuzz", c)
    for name in ("certInfo", "pubArea"):
        v = get(stmt, name) if isinstance(stmt, list) else None
        if isinstance(v, bytes): write("TPMFuzz", v)
    resp_jws = get(stmt, "response") if isinstance(stmt, list) else None
    if isinstance(resp_jws, bytes):
        write("JWSFuzz", resp_jws)
        parts = resp_jws.split(b".")
        if len(parts) == 3:
            write("JSONFuzz", b64u(parts[0].decode())); write("JSONFuzz", b64u(parts[1].decode()))

for a in json.load(open(os.path.join(vectors, "webauthn_authentication.json"))):
    resp = a["response"]["response"]
    write("AuthenticatorDataFuzz", b64u(resp["authenticatorData"]))
    write("COSEKeyFuzz", b64u(a["credentialPublicKeyCose_b64url"]))

cose = json.load(open(os.path.join(vectors, "cose_keys.json")))
public = [k for k in cose["rfc8152_c7_keys"] if "jwk_public" in k]
for k in cose["rfc8152_c7_keys"]:
    write("COSEKeyFuzz", bytes.fromhex(k.get("cose_key_public_cbor_hex") or k["cose_key_cbor_hex"]))
for k in public:
    write("JWKSFuzz", json.dumps(k["jwk_public"]))
write("JWKSFuzz", json.dumps({"keys": [dict(k["jwk_public"], kid="k%d" % i) for i, k in enumerate(public)]}))
for k in cose["webauthn_credential_public_keys"]:
    write("COSEKeyFuzz", bytes.fromhex(k["cose_key_cbor_hex"]))
for k in cose["cose_sign1_examples"]:
    write("CBORFuzz", bytes.fromhex(k["cose_sign1_cbor_hex"]))

for j in json.load(open(os.path.join(vectors, "rfc_jose.json"))):
    write("JWSFuzz", j["jws_compact"])
    if "protected_header_json" in j: write("JSONFuzz", j["protected_header_json"])
    write("JWKSFuzz", json.dumps(j["jwk"]))

pem_certs = []
for a in json.load(open(os.path.join(vectors, "webauthn_trust_anchors.json"))):
    body = "".join(l for l in a["pem"].splitlines() if not l.startswith("-----"))
    der = base64.b64decode(body); pem_certs.append(der); write("X509Fuzz", der)

# MDS3: the small BLOB's payload, and its first entries on their own.
blob = open(os.path.join(vectors, "mds3_blob_go_webauthn_example.jwt")).read().strip()
h, p, s = blob.split(".")
payload = b64u(p)
write("MDSFuzz", payload)
doc = json.loads(payload)
for e in doc.get("entries", [])[:6]:
    write("MDSFuzz", json.dumps({"no": 1, "nextUpdate": "2030-01-01", "entries": [e]}))
    write("JSONFuzz", json.dumps(e)[:4000])
write("JWSFuzz", blob)

# JWS: claim sets that the target signs (first byte 0).
for claims in (
    {"iss": "https://issuer.example", "aud": "fuzz", "sub": "alice", "exp": 1700000600, "iat": 1700000000},
    {"iss": "https://issuer.example", "aud": ["fuzz", "x"], "sub": "bob", "exp": 1700000600, "nbf": 1699999990, "jti": "1", "amr": ["hwk"]},
):
    write("JWSFuzz", b"\x00" + json.dumps(claims).encode())

# FIDO UAF (UAFFuzz): a selector byte (0 TLV sequence, 1 registration assertion, 2 authentication
# assertion, 3 uafResponse text, 4 fcParams text), then the input.
for e in json.load(open(os.path.join(vectors, "uaf_messages.json"))):
    if "assertion_b64url" in e:
        raw = b64u(e["assertion_b64url"].rstrip("=").replace("+", "-").replace("/", "_"))
        write("UAFFuzz", b"\x00" + raw)
        write("UAFFuzz", (b"\x01" if e["kind"] == "uaf_reg_assertion" else b"\x02") + raw)
    if e["kind"] in ("uaf_reg_response", "uaf_auth_response"):
        write("UAFFuzz", b"\x03" + json.dumps([e["message"]]).encode())
        write("UAFFuzz", b"\x04" + e["message"]["fcParams"].encode())

# HTTP bodies: a selector byte, then a body (see HTTPBodyFuzz.bodyTypes).
bodies = [
    (0, {"displayName": "ACME", "rpId": "acme.example", "origins": ["https://acme.example"]}),
    (1, {"apiKey": "k" * 40}),
    (2, {"username": "alice", "displayName": "Alice", "attestation": "direct", "hints": ["security-key"],
         "authenticatorSelection": {"residentKey": "required", "userVerification": "required"}}),
    (3, {"handle": "h", "credential": registrations[0]["response"], "friendlyName": "Key"}),
    (4, {"username": "alice"}),
    (6, {"friendlyName": "Laptop", "status": "suspended"}),
    (8, {"username": "alice", "signals": {"ip": "10.0.0.1"}, "context": {"transactionId": "t"}}),
    (10, {"refreshToken": "r"}),
    (14, {"type": "email_otp", "email": "a@example.com"}),
    (14, {"type": "sms_otp", "phone": "+15550100"}),
    (15, {"code": "123456"}),
    (18, {"username": "alice", "text": "Pay", "amount": "10.00", "currency": "EUR", "payee": "Bob",
          "expiresInSeconds": 300, "customFields": {"a": "b"}}),
    (20, {"tcToken": "a.b.c"}),
]
for sel, body in bodies:
    write("HTTPBodyFuzz", bytes([sel]) + json.dumps(body).encode())

for text in ('{"a":[1,2.5,-0,1e2,"\\u00e9\\ud83d\\ude00",true,false,null],"b":{}}', '[]', '"x"', '-1.5E-7'):
    write("JSONFuzz", text)
print("seeds written to", out)

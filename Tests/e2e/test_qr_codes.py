"""The QR codes the oob service draws decode, with an independent decoder, to exactly their payload.

A tenant of its own (admin API of the registration service, one https origin for universal
links) asks the oob service, through the gateway with its RP key, for a QR session of each
payload form (universal link, deep link, compact id); the PNG each answer carries is decoded
with zxing-cpp (PyPI, not the library that drew it) and must read exactly `qrPayload`, whose
last segment is the session id and which holds nothing else the page was told.

Needs the local stack (scripts/stack.sh exports SIGNET_TEST_STACK=1). Without it it skips;
with CI set it fails instead.

Run: pip install -r Tests/e2e/requirements.txt && SIGNET_TEST_STACK=1 python3 -m pytest Tests/e2e/test_qr_codes.py
"""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import time
import urllib.error
import urllib.request

import pytest

GATEWAY = os.environ.get("SIGNET_GATEWAY_URL", "http://localhost:8080").rstrip("/")
REGISTRATION = "http://127.0.0.1:8081"
ADMIN_TOKEN = os.environ.get("SIGNET_ADMIN_TOKEN", "dev-admin-token")


def _call(method: str, url: str, token: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Authorization": f"Bearer {token}"})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.fixture(scope="module")
def tenant() -> tuple[str, str]:
    if os.environ.get("SIGNET_TEST_STACK") != "1":
        message = "no local stack (SIGNET_TEST_STACK=1 is set by scripts/stack.sh test)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    tenant_id = f"qr-{secrets.token_hex(4)}"
    key_id = f"k_{secrets.token_hex(8)}"
    key = f"qr-e2e-rp-key-{secrets.token_hex(16)}"
    status, body = _call(
        "PUT", f"{REGISTRATION}/v1/admin/tenants/{tenant_id}", ADMIN_TOKEN,
        {"displayName": "QR codes", "rpId": "localhost", "origins": ["https://bank.example", "http://localhost:8080"]})
    assert status in (200, 201), body
    status, body = _call("PUT", f"{REGISTRATION}/v1/admin/tenants/{tenant_id}/api-keys/{key_id}", ADMIN_TOKEN, {"apiKey": key})
    assert status in (200, 201), body
    return tenant_id, key


def _create(tenant: tuple[str, str], qr_type: str, web_url: str | None = None) -> dict:
    tenant_id, key = tenant
    deadline = time.monotonic() + 30
    request = {"purpose": "authenticate", "qrType": qr_type}
    if web_url is not None:
        request["webUrl"] = web_url
    while True:
        # The oob service learns of the tenant and its key from events, on its own time.
        status, body = _call("POST", f"{GATEWAY}/oob/v1/tenants/{tenant_id}/qr-sessions", key, request)
        if status == 201 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 201, body
    return body


# A web URL makes the universal link longer (a larger code): it must still read exactly.
WEB_URL = "https://bank.example/customers/sign-in/with-your-phone"


@pytest.mark.parametrize("qr_type", ["universalLink", "deepLink", "compact", "universalLink+webUrl"])
def test_the_png_decodes_to_exactly_the_payload(tenant: tuple[str, str], qr_type: str) -> None:
    import zxingcpp
    from PIL import Image

    with_web_url = qr_type.endswith("+webUrl")
    created = _create(tenant, qr_type.removesuffix("+webUrl"), WEB_URL if with_web_url else None)
    session_id = created["qrSessionId"]
    expected = {
        "universalLink": f"https://bank.example/qr/{session_id}",
        "deepLink": f"signet://qr/{session_id}",
        "compact": session_id,
        "universalLink+webUrl": f"{WEB_URL}/qr/{session_id}",
    }[qr_type]
    assert created["qrPayload"] == expected
    image = Image.open(io.BytesIO(base64.b64decode(created["qrCodePng"], validate=True)))
    results = zxingcpp.read_barcodes(image)
    assert [r.format for r in results] == [zxingcpp.BarcodeFormat.QRCode]
    assert results[0].text == expected
    # The SVG draws the same modules (a path or rects), not text a scanner could not read.
    assert created["qrCodeSvg"].lstrip().startswith(("<svg", "<?xml")) and expected not in created["qrCodeSvg"]

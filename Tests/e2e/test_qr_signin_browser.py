"""Sign in with your phone on the demo page (demo/, "Sign in with your phone") in a real browser.

Debian's Chromium, driven by Selenium, plays the desktop; a software phone in Python plays the
user's bound phone, as the Swift stack tests' SoftwareDevice does: a P-256 device key and a
user-auth key, the device created through the oob service's API (proving the device key), bound
to a fresh user of the demo tenant by the RP (its API key, as the demo's backend holds it), and a
`Device-Proof` (ES256 JWS over method, path, body hash, fresh nonce) on each of its calls.

- The page starts an adaptive sign-in, takes its `qr` step's code and shows it; the test takes
  the code's IMAGE from the page (a screenshot of the element, what a camera would see), decodes
  it with zxing-cpp to the payload, and the phone scans it: it reads the session id from the
  payload, claims the session and accepts. The page follows the session's status (Server-Sent
  Events), shows "scanned", then signs in: the session token the PAGE got is verified
  independently of Signet (ES256 against the JWKS, iss, aud, sub, exp) and names the phone's
  user; the phone's answer carries no token. A second scan of the same code is refused.
- A code nobody scans in time: the page (with EventSource taken away, so it follows the status
  by long polling) asks for the shortest lifetime the API allows (30 s, rewriting the page's
  challenge request in the page as a proxy would) and shows "expired" when the session expires;
  the phone's scan of that code is then refused as expired.

Every wait is on a condition of the page or of the API, never a fixed sleep.

Needs the local stack (scripts/stack.sh: SIGNET_TEST_STACK=1) with the demo tenant's sign-in
rules offering `qr` (scripts/stack.sh seeds them). Without the stack or the browser it skips;
with CI set it fails instead.

Run: pip install -r Tests/e2e/requirements.txt && SIGNET_TEST_STACK=1 python3 -m pytest Tests/e2e/test_qr_signin_browser.py
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import secrets
import time
import urllib.error
import urllib.request

import jwt
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from selenium.webdriver.common.by import By

# The demo page's fixtures and checks, shared with the passkey test of the same page.
from test_webauthn_browser import (  # noqa: F401  (browser, stack and jwks_client are fixtures)
    ARTIFACTS, AUDIENCE, DEMO_RP_API_KEY, GATEWAY, ISSUER, b64url, browser, describe, jwks_client, open_demo, page, shown, stack,
    text, verify_session_token, wait_until)

TENANT = "demo"
SESSION_ID = re.compile(r"(?:^|/)(qr_[0-9a-f]{32})$")


def call(method: str, url: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, dict]:
    """(status, JSON body) of one request; no exception for 4xx/5xx."""
    request = urllib.request.Request(url, data=body, method=method, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


class SoftwarePhone:
    """The user's phone in software (Tests/TestSupport/SoftwareDevice.swift's counterpart): a
    device key that signs every call's `Device-Proof`, a user-auth key, and the bank's app."""

    def __init__(self) -> None:
        self.device_key = ec.generate_private_key(ec.SECP256R1())
        self.user_auth_key = ec.generate_private_key(ec.SECP256R1())
        self.device_id: str | None = None

    @staticmethod
    def jwk(key) -> dict:
        numbers = key.public_key().public_numbers()
        return {"kty": "EC", "crv": "P-256", "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big"))}

    def proof(self, method: str, path: str, body: bytes) -> str:
        """`Device-Proof` for the oob service's `path` (without the gateway's /oob prefix)."""
        claims = {"htm": method, "htu": path, "nonce": b64url(secrets.token_bytes(18)), "iat": int(time.time())}
        if body:
            claims["bh"] = b64url(hashlib.sha256(body).digest())
        return jwt.encode(claims, self.device_key, algorithm="ES256", headers={"typ": "device-proof+jwt"})

    def send(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """A call of the app, through the gateway, as a phone on the internet makes it."""
        data = json.dumps(body, separators=(",", ":")).encode() if body is not None else b""
        headers = {"Device-Proof": self.proof(method, path, data)}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return call(method, GATEWAY + "/oob" + path, data if body is not None else None, headers)

    def enrol(self, username: str) -> None:
        """Creates the device (proving its key) and has the RP bind it to `username`."""
        status, created = self.send("POST", f"/v1/tenants/{TENANT}/devices", {
            "deviceKey": self.jwk(self.device_key), "userAuthKey": self.jwk(self.user_auth_key), "platform": "ios",
            "appId": "com.example.bank", "model": "iPhone15,2", "osVersion": "18.1", "pushToken": secrets.token_hex(32)})
        assert status == 201, created
        self.device_id = created["deviceId"]
        status, bound = call("POST", f"{GATEWAY}/oob/v1/tenants/{TENANT}/users/{username}/devices",
                             json.dumps({"deviceToken": created["deviceToken"]}).encode(),
                             {"Authorization": f"Bearer {DEMO_RP_API_KEY}", "Content-Type": "application/json"})
        assert status == 200, bound

    def scan(self, payload: str) -> tuple[int, dict]:
        """What the app does with a scanned payload: the session id is its last segment."""
        match = SESSION_ID.search(payload)
        assert match, f"not a QR session payload: {payload!r}"
        return self.send("POST", f"/v1/tenants/{TENANT}/devices/{self.device_id}/qr-sessions/{match.group(1)}/claim", {})

    def answer(self, session_id: str, decision: str) -> tuple[int, dict]:
        """The user's answer: an ACCEPT is signed by the user-auth key (the app unlocks it with
        biometry or a PIN) over `signet-qr-signin-v1\\n<qrSessionId>\\n<decision>`, raw r||s."""
        body = {"decision": decision}
        if decision == "ACCEPT":
            message = f"signet-qr-signin-v1\n{session_id}\n{decision}".encode()
            r, s = decode_dss_signature(self.user_auth_key.sign(message, ec.ECDSA(hashes.SHA256())))
            body["signature"] = b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
        return self.send("POST", f"/v1/tenants/{TENANT}/devices/{self.device_id}/qr-sessions/{session_id}/decision", body)


# ---- the page ----

def qr_state(driver) -> dict:
    return driver.execute_script(
        "const b = document.body; return {qr: b.dataset.qr || null, transport: b.dataset.qrTransport || null,"
        " state: b.dataset.state, busy: b.dataset.busy}")


def read_code_from_page(driver) -> str:
    """The code as the page shows it: a screenshot of the image element, decoded by zxing-cpp."""
    import zxingcpp
    from PIL import Image

    image = driver.find_element(By.ID, "qr-image")
    assert image.get_attribute("alt"), describe(driver)
    # Drawn (decoded and sized by the page), and in the viewport as a user would look at it.
    wait_until(driver, lambda d: d.execute_script(
        "const i = arguments[0]; return i.complete && i.naturalWidth > 0 && i.dataset.loaded === 'true'", image),
        "the code's image to be drawn")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", image)
    assert image.is_displayed()
    shot = image.screenshot_as_png
    results = zxingcpp.read_barcodes(Image.open(io.BytesIO(shot)))
    if [r.format for r in results] != [zxingcpp.BarcodeFormat.QRCode]:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "qr-element.png").write_bytes(shot)
        pytest.fail(f"the page's code did not decode ({results}); its screenshot is {ARTIFACTS / 'qr-element.png'}", pytrace=False)
    return results[0].text


def start_phone_sign_in(driver, username: str = "") -> str:
    field = driver.find_element(By.ID, "signin-username")
    field.clear()
    if username:
        field.send_keys(username)
    driver.find_element(By.ID, "phone-button").click()
    wait_until(driver, lambda d: qr_state(d)["qr"] in ("waiting", "failed"), "the page to show the code")
    assert qr_state(driver)["qr"] == "waiting", describe(driver) + f" {qr_state(driver)}"
    assert text(driver, "qr-status") == "Scan the code with the bank's app on your phone."
    # The live region says what happens, for screen readers too.
    status = driver.find_element(By.ID, "qr-status")
    assert status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"
    return read_code_from_page(driver)


# Wraps the page's fetch to keep the body of every answer to a qr verify call.
RECORD_VERIFY_ANSWERS = """
window.__verifyAnswers = [];
const original = window.fetch;
window.fetch = async (input, init) => {
  const response = await original(input, init);
  const url = typeof input === "string" ? input : input.url;
  if (url.includes("/methods/qr/verify")) window.__verifyAnswers.push(await response.clone().text());
  return response;
};
"""


# ---- tests ----

def test_the_phone_scans_the_code_on_the_page_and_the_page_is_signed_in(browser, jwks_client):
    driver = browser
    username = f"e2e-qr-{secrets.token_hex(5)}"
    phone = SoftwarePhone()
    phone.enrol(username)
    open_demo(driver)
    assert page(driver)["state"] == "signed-out"
    # What the page's verify calls answer, as the page's own fetch receives it (recorded by a
    # wrapper the test installs; the page's CSP does not apply to WebDriver's scripts).
    driver.execute_script(RECORD_VERIFY_ANSWERS)

    # Without a username: the phone's user is the one who signs in.
    payload = start_phone_sign_in(driver)
    # The tenant's only origin is http://localhost:8080: a universal link on it, with only the
    # session's id (no user, nothing else).
    assert re.fullmatch(r"http://localhost:8080/qr/qr_[0-9a-f]{32}", payload), payload
    session_id = SESSION_ID.search(payload).group(1)

    # The phone scans: the page follows the status by Server-Sent Events and says so.
    status, claimed = phone.scan(payload)
    assert status == 200 and claimed["purpose"] == "authenticate" and claimed["status"] == "SCANNED", claimed
    wait_until(driver, lambda d: qr_state(d)["qr"] == "scanned", "the page to show that the phone scanned the code")
    assert qr_state(driver)["transport"] == "sse"
    assert "confirm the sign-in on your phone" in text(driver, "qr-status")

    # The phone accepts; it learns the outcome, never the session.
    status, accepted = phone.answer(session_id, "ACCEPT")
    assert status == 200 and accepted["status"] == "SUCCEEDED", accepted
    assert "sessionToken" not in accepted and "eyJ" not in json.dumps(accepted)

    # The page signs in, as a passkey sign-in does, with the phone's user.
    wait_until(driver, lambda d: page(d).get("state") == "signed-in" and page(d).get("busy") == "false",
               "the page to be signed in")
    assert qr_state(driver)["qr"] == "succeeded" and not shown(driver, "error"), describe(driver)
    assert text(driver, "account-username") == username
    assert shown(driver, "session-by-phone") and not shown(driver, "session-by-passkey")
    token = text(driver, "session-token")
    claims = verify_session_token(token, username, jwks_client)
    assert "qr" in claims["amr"], claims
    shown_claims = {td.get_attribute("data-claim"): td.text for td in driver.find_elements(By.CSS_SELECTOR, "#claims-body td")}
    assert shown_claims["sub"] == username and shown_claims["aud"] in (AUDIENCE, json.dumps([AUDIENCE]))
    assert shown_claims["iss"] == ISSUER
    # The page keeps the session token only (no refresh token anywhere on it), and never
    # receives one: the gateway's verify route asks for a session without it.
    assert "refresh" not in driver.find_element(By.TAG_NAME, "main").text.lower()
    answers = driver.execute_script("return window.__verifyAnswers")
    done = [json.loads(a) for a in answers if '"SUCCEEDED"' in a]
    assert len(done) == 1 and done[0]["sessionToken"] == token, answers
    assert "refreshToken" not in done[0] and "rt_" not in "".join(answers), answers

    # The same code, scanned again (a photograph of it): refused.
    status, again = phone.scan(payload)
    assert status == 409 and again["code"] == "qr_session_already_used", again

    # Signing out clears the session and the phone's panel.
    driver.find_element(By.ID, "signout-button").click()
    wait_until(driver, lambda d: page(d).get("state") == "signed-out", "the page to sign out")
    assert text(driver, "session-token") == "" and qr_state(driver)["qr"] is None and not shown(driver, "qr-panel")


EXPIRES_IN = 30  # the shortest lifetime the qr step's challenge takes

SHORT_LIVED = """
const seconds = arguments[0];
const original = window.fetch;
window.fetch = (input, init) => {
    // As a proxy between the page and its backend would: the qr step's challenge asks for a
    // short-lived code.
    if (/\\/demo\\/api\\/signins\\/si_[0-9a-f]{32}\\/methods\\/qr\\/challenge$/.test(String(input)) && init) {
        init = Object.assign({}, init, {body: JSON.stringify({expiresInSeconds: seconds})});
    }
    return original(input, init);
};
// Without EventSource, the page follows the status by long polling.
window.EventSource = undefined;
"""


def test_a_code_nobody_scans_in_time_shows_expired_and_is_refused_after(browser):
    driver = browser
    username = f"e2e-qr-{secrets.token_hex(5)}"
    phone = SoftwarePhone()
    phone.enrol(username)
    open_demo(driver)
    driver.execute_script(SHORT_LIVED, EXPIRES_IN)

    # With the username typed: only that user's phone may use the code.
    payload = start_phone_sign_in(driver, username)
    assert qr_state(driver)["transport"] == "poll"
    expires = driver.find_element(By.ID, "qr-expires").get_attribute("datetime")
    assert expires, describe(driver)

    # Nobody scans. The session expires (30 s), and the page says so once its status does.
    wait_until(driver, lambda d: qr_state(d)["qr"] == "expired", "the page to show the code expired", timeout=EXPIRES_IN + 40)
    assert "expired" in text(driver, "qr-status")
    assert not shown(driver, "qr-image") and shown(driver, "qr-retry")
    assert page(driver)["state"] == "signed-out" and page(driver)["busy"] == "false"
    # Not a refusal of the user: no error is shown.
    assert not shown(driver, "error"), describe(driver)

    # The photographed code is worth nothing now.
    status, late = phone.scan(payload)
    assert status == 410 and late["code"] == "qr_session_expired", late

    # A new code is a click away, and it works.
    driver.find_element(By.ID, "qr-retry").click()
    wait_until(driver, lambda d: qr_state(d)["qr"] == "waiting", "a new code")
    fresh = read_code_from_page(driver)
    assert fresh != payload
    status, claimed = phone.scan(fresh)
    assert status == 200, claimed
    status, accepted = phone.answer(SESSION_ID.search(fresh).group(1), "ACCEPT")
    assert status == 200 and accepted["status"] == "SUCCEEDED", accepted
    wait_until(driver, lambda d: page(d).get("state") == "signed-in", "the page to be signed in with the new code")
    assert text(driver, "account-username") == username

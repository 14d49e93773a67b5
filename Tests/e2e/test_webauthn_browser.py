"""The demo relying party (demo/, served by the gateway at /demo/) in a real browser.

Debian's Chromium, driven by Selenium, with a CDP virtual authenticator (CTAP2, internal
transport, resident keys, user verification) stands in for the user's device:

- register a passkey for a fresh username, sign out, sign in with the username, sign out, sign
  in without a username (discoverable credential), then sign in by picking the passkey from the
  username field's autofill (conditional mediation);
- every session token is verified independently of Signet: ES256 signature against the
  published JWKS (PyJWT + cryptography), iss, aud, sub, exp;
- tampered browser responses are refused, and the page shows the problem+json `code`;
- the RP API key never reaches the browser, and /demo/api/ exposes only the demo's routes.

Two facts about Chromium's virtual authenticator environment shape the test:

- With the environment's UI disabled (what Selenium's virtual-authenticator API sets up),
  Chromium picks the account itself: a conditional (autofill) request is answered at once
  when the authenticator holds a matching passkey, and refused at once (NotAllowedError) when
  it holds none. So while the page is signed out the test turns the authenticator's automatic
  user-presence simulation off: a request that needs a press then idles (and never resumes),
  i.e. the autofill request stays pending as in a real browser. The page must abort it before
  a modal request (as with a real browser); the page's options request for the modal ceremony
  is held until it has, and presence is turned back on for the modal request only. Tampered
  finish requests are held until presence is off again, since after a refusal the page offers
  autofill anew.
- With the UI enabled (CDP WebAuthn.enable {enableUI: true}), a conditional request stays
  pending as in a real browser and modal requests wait for a dialog headless Chromium cannot
  operate. The conditional step runs there: the passkey (its private key exported from the
  first environment) is loaded into a new virtual authenticator, and the test clicks the
  username field and chooses the passkey from the autofill suggestions with the keyboard.

Needs the local stack (scripts/stack.sh exports SIGNET_TEST_STACK=1) with the gateway at
SIGNET_GATEWAY_URL (default http://localhost:8080, the demo tenant's origin). Without the
stack or the browser it skips; with CI set it fails instead.

Run: pip install -r Tests/e2e/requirements.txt && SIGNET_TEST_STACK=1 python3 -m pytest Tests/e2e
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import time
import urllib.error
import urllib.request
from pathlib import Path

import jwt
import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions
from selenium.webdriver.support.ui import WebDriverWait

GATEWAY = os.environ.get("SIGNET_GATEWAY_URL", "http://localhost:8080").rstrip("/")
DEMO = GATEWAY + "/demo/"
ISSUER = os.environ.get("SIGNET_SESSION_ISSUER", GATEWAY + "/authentication")
JWKS_URL = GATEWAY + "/authentication/.well-known/jwks.json"
AUDIENCE = "demo"
RP_ID = "localhost"
DEMO_RP_API_KEY = os.environ.get("SIGNET_DEMO_RP_API_KEY", "dev-demo-rp-key")
CHROMIUM = os.environ.get("SIGNET_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SIGNET_CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = Path(os.environ.get("SIGNET_DATA_DIR", Path(__file__).resolve().parents[2] / ".data")) / "logs" / "e2e"


def unavailable(reason: str) -> None:
    """Skips locally; under CI a missing stack or browser is a failure, not a skip."""
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


def http(method: str, url: str, body: dict | None = None, headers: dict | None = None):
    """(status, headers, body bytes) of one request; no exception for 4xx/5xx."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


@pytest.fixture(scope="session")
def stack():
    if os.environ.get("SIGNET_TEST_STACK") != "1":
        unavailable("SIGNET_TEST_STACK is not set: start the local stack (bash scripts/stack.sh test)")
    try:
        # The services' probes are not served through the gateway: a public route is.
        status, _, _ = http("GET", GATEWAY + "/authentication/.well-known/jwks.json")
        demo_status, _, _ = http("GET", DEMO)
    except OSError as e:
        pytest.fail(f"SIGNET_TEST_STACK=1 but the gateway at {GATEWAY} does not answer: {e}", pytrace=False)
    if status != 200 or demo_status != 200:
        pytest.fail(f"gateway at {GATEWAY}: authentication JWKS {status}, /demo/ {demo_status}", pytrace=False)
    return GATEWAY


@pytest.fixture
def browser(stack, request):
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            unavailable(f"{path} is missing: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # Root (CI, sessions) needs --no-sandbox; /dev/shm is small in containers.
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,1000",
                     "--no-first-run", "--disable-background-networking", "--disable-sync"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    yield driver
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        try:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            stem = ARTIFACTS / request.node.name
            driver.save_screenshot(str(stem) + ".png")
            stem.with_suffix(".txt").write_text(
                describe(driver) + "\n\nbrowser console:\n" + "\n".join(str(e) for e in driver.get_log("browser")))
            print(f"browser state saved under {stem}.png/.txt")
        except WebDriverException:
            pass
    driver.quit()


@pytest.fixture(scope="session")
def jwks_client(stack):
    return jwt.PyJWKClient(JWKS_URL, cache_keys=False, cache_jwk_set=False)


# ---- the virtual authenticator ----

AUTHENTICATOR = dict(protocol="ctap2", transport="internal", has_resident_key=True,
                     has_user_verification=True, is_user_verified=True, is_user_consenting=True)


def add_authenticator(driver) -> str:
    """A virtual authenticator in Selenium's (UI-less) environment, before the page loads, so
    that the page's first WebAuthn request already goes to it."""
    driver.get(GATEWAY + "/demo/favicon.svg")
    driver.add_virtual_authenticator(VirtualAuthenticatorOptions(**AUTHENTICATOR))
    return driver.virtual_authenticator_id


def set_presence(driver, enabled: bool) -> None:
    driver.execute_cdp_cmd("WebAuthn.setAutomaticPresenceSimulation",
                           {"authenticatorId": driver.virtual_authenticator_id, "enabled": enabled})


def cdp_b64(urlsafe: str) -> str:
    """Selenium's credential dicts are base64url; CDP's binary fields are standard base64."""
    return urlsafe.replace("-", "+").replace("_", "/")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def move_to_ui_environment(driver, credentials) -> str:
    """Replaces the UI-less environment by one with the WebAuthn UI enabled (conditional
    requests stay pending until the user picks a passkey), holding the same passkeys."""
    driver.remove_virtual_authenticator()
    driver.execute_cdp_cmd("WebAuthn.disable", {})
    driver.execute_cdp_cmd("WebAuthn.enable", {"enableUI": True})
    authenticator_id = driver.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
        "isUserVerified": True, "automaticPresenceSimulation": True}})["authenticatorId"]
    for credential in credentials:
        c = credential.to_dict()
        driver.execute_cdp_cmd("WebAuthn.addCredential", {"authenticatorId": authenticator_id, "credential": {
            "credentialId": cdp_b64(c["credentialId"]), "isResidentCredential": c["isResidentCredential"],
            "rpId": c["rpId"], "privateKey": cdp_b64(c["privateKey"]), "userHandle": cdp_b64(c["userHandle"]),
            "signCount": c["signCount"]}})
    return authenticator_id


# ---- the page ----

def page(driver) -> dict:
    return driver.execute_script(
        "const b = document.body; return b ? {state: b.dataset.state, conditional: b.dataset.conditional,"
        " busy: b.dataset.busy} : {}")


def text(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).get_attribute("textContent").strip()


def shown(driver, element_id: str) -> bool:
    return driver.find_element(By.ID, element_id).is_displayed()


def describe(driver) -> str:
    try:
        return (f"url={driver.current_url} page={page(driver)} status={text(driver, 'status')!r} "
                f"error={'shown' if shown(driver, 'error') else 'hidden'}: "
                f"{text(driver, 'error-title')!r} code={text(driver, 'error-code')!r} {text(driver, 'error-detail')!r}")
    except WebDriverException as e:
        return f"(page not readable: {e.msg})"


def wait_until(driver, condition, what: str, timeout: float = 20):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: condition(d))
    except TimeoutException:
        pytest.fail(f"timed out waiting for {what}; {describe(driver)}", pytrace=False)


def open_demo(driver) -> None:
    driver.get(DEMO)
    # The page settles its autofill request: pending, or (UI-less environment without a
    # passkey) refused at once, which the page reports as stopped without an alert.
    wait_until(driver, lambda d: page(d).get("conditional") in ("pending", "stopped", "unavailable"),
               "the page's passkey autofill request to settle")


def wait_idle(driver, state: str, what: str, timeout: float = 20) -> None:
    wait_until(driver, lambda d: page(d).get("state") == state and page(d).get("busy") == "false", what, timeout)


def assert_no_error(driver) -> None:
    assert not shown(driver, "error"), describe(driver)


def register(driver, username: str) -> None:
    field = driver.find_element(By.ID, "register-username")
    field.clear()
    field.send_keys(username)
    driver.find_element(By.ID, "register-button").click()


def wait_until_sign_in_knows(username: str, timeout: float = 15) -> None:
    """The authentication service learns of a new credential from registration's event (its
    read model is eventually consistent, usually within tens of milliseconds): wait until the
    user's sign-in options list a credential, so that a test about something else does not
    race the event under a loaded machine."""
    deadline = time.monotonic() + timeout
    url = GATEWAY + "/authentication/v1/tenants/demo/webauthn/authentications/options"
    while True:
        status, _, body = http("POST", url, {"username": username}, {"Authorization": f"Bearer {DEMO_RP_API_KEY}"})
        if status == 200 and json.loads(body)["publicKey"].get("allowCredentials"):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the authentication service did not learn {username}'s credential within {timeout} s (last: {status})")
        time.sleep(0.05)


def sign_out(driver) -> None:
    """Signs out with user presence off: the page's new autofill request then idles at the
    authenticator (Chromium's virtual device leaves a request that needs a press idle and never
    resumes it) instead of being answered at once, so it stays pending as in a real browser."""
    set_presence(driver, False)
    driver.find_element(By.ID, "signout-button").click()
    wait_until(driver, lambda d: page(d) == {"state": "signed-out", "conditional": "pending", "busy": "false"},
               "the signed-out page with a pending autofill request")
    assert text(driver, "session-token") == "" and text(driver, "account-username") == ""


def start_modal(driver, options_path: str, click) -> None:
    """Starts a modal ceremony while the page's autofill request idles (presence off). The page
    aborts that request before it asks for options, so the options request is held until then;
    presence comes back on for the modal request only, and the idle request cannot complete."""
    hook(driver, options_path, hold=True)
    click()
    wait_held(driver, options_path)
    assert page(driver)["conditional"] == "stopped", describe(driver)
    set_presence(driver, True)
    release(driver, options_path)
    unhook(driver, options_path)


def sign_in_modal(driver, button_id: str, username: str | None = None) -> None:
    if username is not None:
        field = driver.find_element(By.ID, "signin-username")
        field.clear()
        field.send_keys(username)
    start_modal(driver, "/authentications/options", driver.find_element(By.ID, button_id).click)


def session_token(driver, username: str, jwks_client) -> dict:
    """The page's session token, verified against the JWKS; its claims, as the page shows them too."""
    assert text(driver, "account-username") == username
    token = text(driver, "session-token")
    claims = verify_session_token(token, username, jwks_client)
    assert claims["cid"] == text(driver, "session-credential")
    shown_claims = {td.get_attribute("data-claim"): td.text
                    for td in driver.find_elements(By.CSS_SELECTOR, "#claims-body td")}
    assert shown_claims["sub"] == username and shown_claims["aud"] in (AUDIENCE, json.dumps([AUDIENCE]))
    assert shown_claims["iss"] == ISSUER and shown_claims["exp"].startswith(str(claims["exp"]))
    return claims


def verify_session_token(token: str, username: str, jwks_client) -> dict:
    """Independent of Signet's code: PyJWT checks the ES256 signature with the key the JWKS
    publishes under the token's kid, and iss, aud, sub, exp, iat."""
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "ES256" and header.get("kid"), header
    key = jwks_client.get_signing_key_from_jwt(token)
    assert key.key_id == header["kid"]
    claims = jwt.decode(token, key.key, algorithms=["ES256"], audience=AUDIENCE, issuer=ISSUER, leeway=5,
                        options={"require": ["iss", "sub", "aud", "exp", "iat"], "verify_signature": True})
    now = time.time()
    assert claims["sub"] == username
    assert claims["iat"] <= now + 5 < claims["exp"] + 5 and claims["exp"] > now
    assert claims["auth_time"] <= now + 5 and claims["amr"] and claims["sid"] and claims["jti"]
    # The signature really is checked: the same token with a changed subject does not verify.
    head, payload, signature = token.split(".")
    forged = dict(claims, sub=username + "-not")
    forged_token = ".".join([head, b64url(json.dumps(forged, separators=(",", ":")).encode()), signature])
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(forged_token, key.key, algorithms=["ES256"], audience=AUDIENCE, issuer=ISSUER)
    return claims


def press(driver, key: str, code: int) -> None:
    for kind in ("rawKeyDown", "keyUp"):
        driver.execute_cdp_cmd("Input.dispatchKeyEvent", {
            "type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code})


def choose_passkey_from_autofill(driver, timeout: float = 30) -> None:
    """What a user does: click the username field, move to the passkey suggestion, press Enter.
    The suggestions appear once Chromium has listed the passkeys for the pending request, so
    this is retried until the page reacts."""
    field = driver.find_element(By.ID, "signin-username")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        field.click()
        time.sleep(0.7)
        press(driver, "ArrowDown", 40)
        time.sleep(0.4)
        # Without a highlighted suggestion this Enter submits the empty form instead; the page
        # then asks for a username and the autofill request stays pending.
        press(driver, "Enter", 13)
        try:
            WebDriverWait(driver, 3, poll_frequency=0.1).until(lambda d: page(d).get("conditional") != "pending")
            return
        except TimeoutException:
            continue
    pytest.fail(f"the passkey was not offered in the username field's autofill; {describe(driver)}", pytrace=False)


HOOK = """
const [path, script, hold] = arguments;
if (!window.__e2eFetch) {
    const b64d = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
    const b64e = (u) => btoa(String.fromCharCode(...u)).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
    window.__e2eFetch = window.fetch;
    window.__e2eHooks = {};
    window.__e2eHeld = {};
    window.__e2eRelease = {};
    window.fetch = async (input, init) => {
        const url = String(input);
        const key = url.startsWith("/demo/api/") ? url.slice("/demo/api".length) : null;
        const hook = key === null ? undefined : window.__e2eHooks[key];
        if (hook && init && typeof init.body === "string") {
            const body = JSON.parse(init.body);
            hook.mutate(body, b64d, b64e);
            init = Object.assign({}, init, {body: JSON.stringify(body)});
            if (hook.hold) {
                await new Promise((resolve) => { window.__e2eRelease[key] = resolve; window.__e2eHeld[key] = true; });
                window.__e2eHeld[key] = false;
            }
        }
        return window.__e2eFetch(input, init);
    };
}
if (script === null) delete window.__e2eHooks[path];
else window.__e2eHooks[path] = {mutate: new Function("body", "b64d", "b64e", script), hold};
"""


def hook(driver, path: str, script: str = "", hold: bool = False) -> None:
    """Intercepts the page's POST to /demo/api{path} in the page (as a proxy in the network
    would): `script` rewrites the parsed JSON `body` (b64d/b64e convert base64url); with hold,
    the request waits for release()."""
    driver.execute_script(HOOK, path, script, hold)


def unhook(driver, path: str) -> None:
    driver.execute_script(HOOK, path, None, False)


def wait_held(driver, path: str) -> None:
    wait_until(driver, lambda d: d.execute_script("return !!(window.__e2eHeld && window.__e2eHeld[arguments[0]])", path),
               f"the page's request to /demo/api{path}")


def release(driver, path: str) -> None:
    driver.execute_script("window.__e2eRelease[arguments[0]]()", path)


# ---- tests ----

def test_register_sign_out_sign_in_with_and_without_username_then_autofill(browser, jwks_client):
    driver = browser
    username = f"e2e-{secrets.token_hex(6)}"
    add_authenticator(driver)
    open_demo(driver)
    assert page(driver)["state"] == "signed-out"
    assert driver.execute_script("return PublicKeyCredential.isConditionalMediationAvailable()") is True
    assert driver.find_element(By.ID, "signin-username").get_attribute("autocomplete") == "username webauthn"

    # Register a passkey (resident key required, UV preferred).
    register(driver, username)
    wait_idle(driver, "registered", "the registration to finish")
    assert_no_error(driver)
    assert text(driver, "account-username") == username
    [credential] = driver.get_credentials()
    credential_id = credential.id.rstrip("=")  # Selenium gives padded base64url
    assert credential.is_resident_credential and credential.rp_id == RP_ID
    # The user handle is random, never the username.
    assert credential.user_handle and base64.urlsafe_b64decode(credential.user_handle) != username.encode()
    details = driver.find_element(By.ID, "credential-details")
    assert details.get_attribute("data-credential-id") == credential_id
    assert "none" in details.text and "-7" in details.text

    # Sign out; sign in with the username (the page cancels its pending autofill request first).
    wait_until_sign_in_knows(username)
    sign_out(driver)
    sign_in_modal(driver, "signin-username-button", username)
    wait_idle(driver, "signed-in", "the sign-in with a username")
    assert_no_error(driver)
    first = session_token(driver, username, jwks_client)
    assert first["cid"] == credential_id

    # Sign out; sign in without a username: the discoverable credential names the user.
    sign_out(driver)
    sign_in_modal(driver, "signin-passkey-button")
    wait_idle(driver, "signed-in", "the sign-in with a passkey, without a username")
    assert_no_error(driver)
    second = session_token(driver, username, jwks_client)
    assert second["cid"] == credential_id and second["sid"] != first["sid"] and second["jti"] != first["jti"]

    # Sign out; sign in through the username field's autofill (conditional mediation), in an
    # environment whose autofill waits for the user, with the same passkey.
    sign_out(driver)
    move_to_ui_environment(driver, driver.get_credentials())
    open_demo(driver)
    assert page(driver) == {"state": "signed-out", "conditional": "pending", "busy": "false"}, describe(driver)
    # Nothing happens until the user chooses a passkey.
    time.sleep(1.0)
    assert page(driver) == {"state": "signed-out", "conditional": "pending", "busy": "false"}, describe(driver)
    choose_passkey_from_autofill(driver)
    wait_idle(driver, "signed-in", "the sign-in through autofill")
    assert page(driver)["conditional"] == "completed"
    assert_no_error(driver)
    third = session_token(driver, username, jwks_client)
    assert third["cid"] == credential_id and third["sid"] not in (first["sid"], second["sid"])


def test_tampered_responses_are_refused_and_the_page_shows_the_code(browser, jwks_client):
    driver = browser
    username = f"e2e-{secrets.token_hex(6)}"
    add_authenticator(driver)
    open_demo(driver)

    # A registration response whose clientDataJSON claims another origin. It is held until
    # presence is off: after the refusal the page offers autofill again, which must idle.
    hook(driver, "/registrations", """
        const clientData = JSON.parse(new TextDecoder().decode(b64d(body.credential.response.clientDataJSON)));
        clientData.origin = "https://evil.example";
        body.credential.response.clientDataJSON = b64e(new TextEncoder().encode(JSON.stringify(clientData)));
    """, hold=True)
    register(driver, username)
    wait_held(driver, "/registrations")
    set_presence(driver, False)
    release(driver, "/registrations")
    wait_until(driver, lambda d: shown(d, "error") and page(d).get("busy") == "false", "the refusal to be shown")
    assert text(driver, "error-code") == "origin_not_allowed", describe(driver)
    assert text(driver, "error-heading") == "The server refused this"
    assert page(driver)["state"] == "signed-out"
    unhook(driver, "/registrations")
    # The authenticator made a passkey the server refused; forget it, and register for real.
    driver.remove_all_credentials()
    start_modal(driver, "/registrations/options", lambda: register(driver, username))
    wait_idle(driver, "registered", "the registration to finish")
    assert_no_error(driver)

    # An assertion whose signature was changed in transit (held, like the registration above).
    wait_until_sign_in_knows(username)
    sign_out(driver)
    hook(driver, "/authentications", """
        const signature = b64d(body.credential.response.signature);
        signature[signature.length - 1] ^= 0x01;
        body.credential.response.signature = b64e(signature);
    """, hold=True)
    sign_in_modal(driver, "signin-username-button", username)
    wait_held(driver, "/authentications")
    set_presence(driver, False)
    release(driver, "/authentications")
    wait_until(driver, lambda d: page(d) == {"state": "signed-out", "conditional": "pending", "busy": "false"}
               and shown(d, "error"), "the refusal to be shown, with autofill offered again")
    assert text(driver, "error-code") == "signature_invalid", describe(driver)
    assert text(driver, "error-heading") == "The server refused this"
    assert text(driver, "session-token") == ""

    # The same passkey, untouched, still signs in: the refusal was the tampering's.
    unhook(driver, "/authentications")
    sign_in_modal(driver, "signin-username-button")
    wait_idle(driver, "signed-in", "the sign-in after the refused one")
    assert_no_error(driver)
    session_token(driver, username, jwks_client)


def test_the_demo_backend_keeps_the_rp_key_and_exposes_only_its_routes(stack):
    # The page and its script carry no key; the gateway adds it, whatever the browser sends.
    for asset in ("", "demo.js", "webauthn-json.js", "index.html"):
        status, headers, body = http("GET", DEMO + asset)
        assert status == 200 and DEMO_RP_API_KEY.encode() not in body
    status, headers, _ = http("GET", DEMO)
    assert "script-src 'self'" in headers.get("Content-Security-Policy", "")
    # The shared script is the console's file, served as a script under the same policy.
    status, headers, body = http("GET", DEMO + "webauthn-json.js")
    assert "javascript" in headers.get("Content-Type", "") and "script-src 'self'" in headers.get("Content-Security-Policy", "")
    assert b"window.SignetWebAuthnJSON" in body
    # The key opens a sign-up only (for a username with nothing registered); registering needs
    # that sign-up token or the user's own session token, never the RP key.
    username = f"e2e-{secrets.token_hex(4)}"
    status, _, body = http("POST", DEMO + "api/registrations/options", {"username": username},
                           {"Authorization": "Bearer not-the-key"})
    assert status == 401, status
    status, _, body = http("POST", DEMO + "api/signups", {"username": username})
    assert status == 201, (status, body)
    token = json.loads(body)["signUpToken"]
    status, _, body = http("POST", DEMO + "api/registrations/options", {"username": username},
                           {"Authorization": f"Bearer {token}"})
    assert status == 200 and json.loads(body)["publicKey"]["rp"]["id"] == RP_ID
    status, _, body = http("POST", DEMO + "api/registrations/options", {"username": username + "-other"},
                           {"Authorization": f"Bearer {token}"})
    assert status == 403, status

    # Without the gateway's help the same call needs the key.
    status, _, body = http("POST", GATEWAY + "/registration/v1/tenants/demo/webauthn/registrations/options",
                           {"username": "x"})
    assert status == 401 and json.loads(body)["code"] == "unauthorized"
    # Nothing else of the RP or admin API is reachable under /demo/api/.
    for method, path in (("GET", "api/users/someone/credentials"), ("GET", "api/tenants/demo"),
                         ("PUT", "api/admin/tenants/demo"), ("POST", "api/registrations/options/../../users/x/credentials")):
        status, headers, body = http(method, DEMO + path, {} if method != "GET" else None)
        assert status == 404, (method, path, status)
    status, headers, body = http("GET", DEMO + "api/anything")
    assert headers.get("Content-Type", "").startswith("application/problem+json") and json.loads(body)["code"] == "not_found"
    for path in ("api/registrations/options", "api/registrations", "api/authentications/options", "api/authentications"):
        status, _, _ = http("GET", DEMO + path)
        assert status in (403, 405), (path, status)

"""The admin console (signet-console, served by the gateway at /console/) in a real browser.

Debian's Chromium, driven by Selenium, with a CDP virtual authenticator (CTAP2, internal,
resident keys, user verification) as the operator's device, as in test_webauthn_browser.py:

- an administrator enrols a passkey with the enrolment code, signs out, signs in again with
  the discoverable passkey, creates a tenant and an API key (which then works against the RP
  API), stores a ruleset (the editor flags JSON that does not parse as it is typed) and reads
  the explain trace, reads the FIDO policy and rotates the tcToken key; the session cookie is
  HttpOnly and SameSite=Strict;
- calls without the session, or with a forged CSRF token, are refused;
- a user of the demo tenant (registered in the same browser through the demo's backend) is
  found through the console, and the administrator suspends and resumes the user's passkey,
  while the live feed (server-sent events) shows the suspension's event;
- a viewer sees the change controls disabled, and the backend refuses a change made behind
  the page's back with the viewer's own CSRF token.

Needs the local stack (SIGNET_TEST_STACK=1) with its console (operators `admin` and `viewer`,
enrolment code SIGNET_CONSOLE_ENROLMENT_CODE, default dev-console-enrolment-code), each
enrolled here once per stack.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions
from selenium.webdriver.support.ui import WebDriverWait

from test_webauthn_browser import AUTHENTICATOR, GATEWAY, browser, http, stack, text  # noqa: F401 (fixtures)

CONSOLE = GATEWAY + "/console/"
ENROLMENT_CODE = os.environ.get("SIGNET_CONSOLE_ENROLMENT_CODE", "dev-console-enrolment-code")
REGISTRATION = os.environ.get("SIGNET_REGISTRATION_URL", "http://127.0.0.1:8081")


def wait(driver, seconds: float = 20):
    return WebDriverWait(driver, seconds, poll_frequency=0.1)


def state(driver) -> str:
    return driver.execute_script("return document.body.dataset.state")


def status(driver) -> str:
    return text(driver, "status")


def error_code(driver) -> str:
    return "" if not driver.find_element(By.ID, "error").is_displayed() else text(driver, "error-code")


def open_console(driver) -> None:
    """A virtual authenticator before the page loads, then the page, signed out."""
    driver.get(GATEWAY + "/console/console.css")
    driver.add_virtual_authenticator(VirtualAuthenticatorOptions(**AUTHENTICATOR))
    driver.get(CONSOLE)
    wait(driver).until(lambda d: state(d) == "signed-out" and d.find_element(By.ID, "signed-out").is_displayed())


def enrol(driver, username: str) -> None:
    driver.find_element(By.ID, "enrol-username").send_keys(username)
    driver.find_element(By.ID, "enrol-code").send_keys(ENROLMENT_CODE)
    driver.find_element(By.ID, "enrol").click()
    wait(driver).until(lambda d: state(d) == "signed-in" or error_code(d))
    assert state(driver) == "signed-in", f"enrolment refused: {error_code(driver)} {text(driver, 'error-detail')}"
    assert text(driver, "who-name") == username


def fetch(driver, method: str, path: str, body=None, csrf: str | None = None, credentials: str = "same-origin") -> dict:
    """A call made from the page's origin behind the page's back: {status, code, body}."""
    return driver.execute_async_script(
        """
        const [method, path, body, csrf, credentials, done] = arguments;
        const headers = {"Content-Type": "application/json"};
        if (csrf) headers["X-CSRF-Token"] = csrf;
        fetch(path, {method, headers, credentials, body: body === null ? undefined : JSON.stringify(body)})
          .then(async (r) => { const t = await r.text(); let j = {}; try { j = JSON.parse(t); } catch {}
                               done({status: r.status, code: j.code || null, body: j}); })
          .catch((e) => done({status: 0, code: String(e), body: {}}));
        """, method, path, body, csrf, credentials)


def click(driver, element_id: str) -> None:
    """Clicks after clearing the status and error lines, so that a wait sees this click's outcome."""
    driver.execute_script("document.getElementById('status').textContent = ''; document.getElementById('error').hidden = true")
    driver.find_element(By.ID, element_id).click()


def set_value(driver, element_id: str, value: str) -> None:
    """Sets a field's text as typing would end (an input event follows)."""
    driver.execute_script(
        "const e = document.getElementById(arguments[0]); e.value = arguments[1];"
        " e.dispatchEvent(new Event('input', {bubbles: true}));", element_id, value)


RULESET = {"rules": [
    {"name": "big-amount", "when": {"fact": "context.transactionAmount", "op": "gt", "value": 1000},
     "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2", "fido2"]]},
    {"name": "passkey", "action": "TRIGGER_AUTHENTICATION", "sequences": [["fido2"]]},
]}


def test_an_administrator_signs_in_with_a_passkey_and_manages_a_tenant_its_key_and_ruleset(browser):
    driver = browser
    open_console(driver)
    enrol(driver, "admin")
    assert text(driver, "who-role") == "administrator"
    cookie = {c["name"]: c for c in driver.get_cookies()}["signet_console"]
    assert cookie["httpOnly"] is True and cookie.get("sameSite") == "Strict" and cookie["path"] == "/console/"
    # The page never holds the session token: the cookie is not readable by script.
    assert "signet_console" not in driver.execute_script("return document.cookie")

    # Sign out, then in again with the discoverable passkey (it reaches the authentication
    # service by event: a first try may be refused).
    driver.find_element(By.ID, "sign-out").click()
    wait(driver).until(lambda d: state(d) == "signed-out")
    for _ in range(50):
        click(driver, "sign-in")
        wait(driver).until(lambda d: state(d) == "signed-in" or error_code(d))
        if state(driver) == "signed-in":
            break
        time.sleep(0.2)
    assert state(driver) == "signed-in" and text(driver, "who-name") == "admin"

    # A tenant.
    tenant = "e2e-" + secrets.token_hex(4)
    driver.find_element(By.ID, "tenant-id").send_keys(tenant)
    driver.find_element(By.ID, "tenant-name").send_keys("Browser Bank")
    driver.find_element(By.ID, "tenant-rpid").send_keys("bank.example")
    driver.find_element(By.ID, "tenant-origins").send_keys("https://bank.example")
    click(driver, "tenant-save")
    wait(driver).until(lambda d: "saved" in status(d) or error_code(d))
    assert "saved" in status(driver), error_code(driver)
    assert "Browser Bank" in text(driver, "tenant-view")

    # An API key, shown once, that works against the RP API.
    click(driver, "key-create")
    wait(driver).until(lambda d: d.find_element(By.ID, "key-shown").is_displayed() or error_code(d))
    api_key = driver.find_element(By.ID, "key-shown-value").get_attribute("value")
    assert api_key, error_code(driver)
    code, _, _ = http("GET", f"{REGISTRATION}/v1/tenants/{tenant}/api-keys/current", headers={"Authorization": f"Bearer {api_key}"})
    assert code == 200

    # The ruleset editor flags what does not parse, as it is typed.
    set_value(driver, "ruleset-json", '{"rules": [')
    assert driver.find_element(By.ID, "ruleset-json").get_attribute("aria-invalid") == "true"
    assert "Not JSON yet" in text(driver, "ruleset-check")
    set_value(driver, "ruleset-json", json.dumps(RULESET))
    assert driver.find_element(By.ID, "ruleset-json").get_attribute("aria-invalid") == "false"
    # Stored once the tenant has reached the authentication service.
    for _ in range(50):
        click(driver, "ruleset-save")
        wait(driver).until(lambda d: "saved" in status(d) or error_code(d))
        if "Ruleset authentication saved" in status(driver):
            break
        time.sleep(0.2)
    assert "Ruleset authentication saved (version 1)" in status(driver), error_code(driver)

    # The tenant's UAF facets and policy, its apps and a template with its preview.
    set_value(driver, "uaf-facets", "https://bank.example\nios:bundle-id:com.example.bank")
    set_value(driver, "uaf-policy", '{"accepted": [')
    assert driver.find_element(By.ID, "uaf-policy").get_attribute("aria-invalid") == "true"
    set_value(driver, "uaf-policy", '{"accepted": [[{"aaid": ["ABCD#0001"]}]]}')
    assert driver.find_element(By.ID, "uaf-policy").get_attribute("aria-invalid") == "false"
    click(driver, "uaf-save")
    wait(driver).until(lambda d: "UAF settings saved" in status(d) or error_code(d))
    assert "UAF settings saved" in status(driver), error_code(driver)
    assert text(driver, "uaf-appid").endswith(f"/v1/tenants/{tenant}/uaf/facets")
    set_value(driver, "app-domains", f"{tenant}.example")
    set_value(driver, "app-ios", "ABCDE12345.com.example.bank")
    set_value(driver, "app-android", "com.example.bank " + ":".join(["AB"] * 32))
    driver.find_element(By.CSS_SELECTOR, '#app-qr option[value="compact"]').click()
    for _ in range(50):  # once the tenant has reached the oob service
        click(driver, "app-save")
        wait(driver).until(lambda d: "App settings saved" in status(d) or error_code(d))
        if "App settings saved" in status(driver):
            break
        time.sleep(0.2)
    assert "App settings saved" in status(driver), error_code(driver)
    set_value(driver, "app-ios", "")
    click(driver, "app-load")
    wait(driver).until(lambda d: "App settings loaded" in status(d) or error_code(d))
    assert driver.find_element(By.ID, "app-ios").get_attribute("value") == "ABCDE12345.com.example.bank"
    set_value(driver, "template-locale", "fr")
    set_value(driver, "template-subject", "Code {{tenant}}")
    set_value(driver, "template-text", "Votre code : {{code}} ({{minutes}} min)")
    set_value(driver, "template-sms", "Code {{code}}")
    click(driver, "template-preview")
    wait(driver).until(lambda d: "Preview ready" in status(d) or error_code(d))
    assert text(driver, "preview-text") == "Votre code : 123456 (5 min)", error_code(driver)
    assert text(driver, "preview-sms-count") == "11"
    set_value(driver, "template-text", "Votre code : {{code")
    click(driver, "template-preview")
    wait(driver).until(lambda d: error_code(d))
    assert error_code(driver) == "invalid_template"
    set_value(driver, "template-text", "Votre code : {{code}}")
    click(driver, "template-save")
    wait(driver).until(lambda d: "Template saved" in status(d) or error_code(d))
    assert "Template saved" in status(driver), error_code(driver)

    # The explain trace.
    set_value(driver, "explain-facts", '{"context": {"transactionAmount": 50}}')
    click(driver, "explain")
    wait(driver).until(lambda d: "Explained" in status(d) or error_code(d))
    assert "rule passkey" in text(driver, "trace-decision")
    items = [li.get_attribute("textContent") for li in driver.find_elements(By.CSS_SELECTOR, "#trace-rules li")]
    assert items[0].startswith("big-amount: did not match (context.transactionAmount gt 1000 was false; actual 50)"), items
    assert items[1] == "passkey: matched", items

    # The FIDO policy read, the tcToken signing key rotated (once the tenant is on the
    # transaction service).
    click(driver, "policy-load")
    wait(driver).until(lambda d: "loaded" in status(d) or error_code(d))
    assert status(driver) == "fido-policy loaded.", error_code(driver)
    json.loads(driver.find_element(By.ID, "policy-json").get_attribute("value"))
    # The metadata's model picker answers (the local stack loads no FIDO metadata: none listed).
    click(driver, "models-search")
    wait(driver).until(lambda d: "model(s) found" in status(d) or error_code(d))
    assert status(driver) == "0 model(s) found.", error_code(driver)
    # The FIDO2 policy as a form: user verification required; an inconsistent attestation
    # rule refused by the service with its code, nothing stored.
    click(driver, "fido-load")
    wait(driver).until(lambda d: "policy loaded" in status(d) or error_code(d))
    assert status(driver) == "FIDO2 policy loaded.", error_code(driver)
    driver.find_element(By.CSS_SELECTOR, '#fido-uv option[value="required"]').click()
    click(driver, "fido-save")
    wait(driver).until(lambda d: "policy saved" in status(d) or error_code(d))
    assert status(driver) == "FIDO2 policy saved.", error_code(driver)
    assert fetch(driver, "GET", f"/console/api/tenants/{tenant}/fido-policy")["body"]["userVerification"] == "required"
    driver.find_element(By.CSS_SELECTOR, '#fido-conveyance option[value="none"]').click()
    if not driver.find_element(By.ID, "fido-att-required").is_selected():
        driver.find_element(By.ID, "fido-att-required").click()
    click(driver, "fido-save")
    wait(driver).until(lambda d: "policy saved" in status(d) or error_code(d))
    assert error_code(driver) not in ("", "(none)"), status(driver)
    assert fetch(driver, "GET", f"/console/api/tenants/{tenant}/fido-policy")["body"]["attestation"]["required"] is False

    # The authentication settings as a form: a number changed, the rest kept.
    click(driver, "settings-load")
    wait(driver).until(lambda d: "settings loaded" in status(d) or error_code(d))
    assert "Authentication settings loaded." == status(driver), error_code(driver)
    per_ip = driver.find_element(By.ID, "set-per-ip").get_attribute("value")
    set_value(driver, "set-lock-after", "7")
    click(driver, "settings-save")
    wait(driver).until(lambda d: "settings saved" in status(d) or error_code(d))
    assert "Authentication settings saved." == status(driver), error_code(driver)
    stored = fetch(driver, "GET", f"/console/api/tenants/{tenant}/authentication-settings")
    assert stored["status"] == 200 and stored["body"]["lockAfterFailures"] == 7
    assert str(stored["body"]["signInsPerMinutePerIP"]) == per_ip
    for _ in range(50):
        click(driver, "tctoken-rotate")
        wait(driver).until(lambda d: "rotated" in status(d) or error_code(d))
        if "rotated" in status(driver):
            break
        time.sleep(0.2)
    assert "tcToken signing key rotated; new key id" in status(driver), error_code(driver)

    # Without the session, or with a forged CSRF token, nothing changes.
    change = {"displayName": "Hijacked", "rpId": "bank.example", "origins": ["https://bank.example"]}
    anonymous = fetch(driver, "PUT", f"/console/api/tenants/{tenant}", change, credentials="omit")
    assert (anonymous["status"], anonymous["code"]) == (401, "console_session_required")
    forged = fetch(driver, "PUT", f"/console/api/tenants/{tenant}", change, csrf=secrets.token_urlsafe(32))
    assert (forged["status"], forged["code"]) == (403, "console_csrf_invalid")
    missing = fetch(driver, "PUT", f"/console/api/tenants/{tenant}", change)
    assert (missing["status"], missing["code"]) == (403, "console_csrf_invalid")
    code, _, body = http("GET", f"{REGISTRATION}/v1/tenants/{tenant}")
    assert code == 200 and json.loads(body)["displayName"] == "Browser Bank"

    # A user of the demo tenant with a passkey (made here through the demo relying party's
    # backend, in this browser), found through the console and suspended, then resumed.
    user = "console-e2e-" + secrets.token_hex(4)
    registered = driver.execute_async_script(
        """
        const [username, done] = arguments;
        const post = async (path, body, token) => {
          const headers = {"Content-Type": "application/json"};
          if (token) headers.Authorization = `Bearer ${token}`;
          const r = await fetch("/demo/api" + path, {method: "POST", headers, body: JSON.stringify(body), credentials: "omit"});
          return r.json();
        };
        (async () => {
          const token = (await post("/signups", {username})).signUpToken;
          const options = await post("/registrations/options",
            {username, authenticatorSelection: {residentKey: "required", userVerification: "preferred"}}, token);
          const credential = await navigator.credentials.create({publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options.publicKey)});
          const resource = await post("/registrations", {handle: options.handle, credential: credential.toJSON(), friendlyName: "Demo key"}, token);
          done(resource.credentialId || JSON.stringify(resource));
        })().catch((e) => done("error: " + e));
        """, user)
    assert registered and not registered.startswith("error") and not registered.startswith("{"), registered
    # The live feed, started before the suspension.
    driver.find_element(By.ID, "events-toggle").click()
    wait(driver).until(lambda d: text(d, "events-state") == "live")
    assert driver.find_element(By.ID, "events-toggle").get_attribute("aria-pressed") == "true"
    tenant_field = driver.find_element(By.ID, "tenant-id")
    tenant_field.clear()
    tenant_field.send_keys("demo")
    driver.find_element(By.ID, "user-name").send_keys(user)
    click(driver, "user-find")
    wait(driver).until(lambda d: "passkey(s)" in status(d) or error_code(d))
    rows = driver.find_elements(By.CSS_SELECTOR, f'#user-credentials tbody tr[data-credential-id="{registered}"]')
    assert len(rows) == 1, error_code(driver)
    assert "Demo key" in rows[0].text and "active" in rows[0].text
    button = rows[0].find_element(By.TAG_NAME, "button")
    assert button.text == "Suspend"
    driver.execute_script("document.getElementById('status').textContent = ''")
    button.click()
    wait(driver).until(lambda d: "suspended." in status(d) or error_code(d))
    assert "suspended." in status(driver), error_code(driver)

    def demo_status():
        code, _, body = http("GET", f"{REGISTRATION}/v1/tenants/demo/users/{user}/credentials",
                             headers={"Authorization": f"Bearer {os.environ.get('SIGNET_DEMO_RP_API_KEY', 'dev-demo-rp-key')}"})
        assert code == 200
        return {c["credentialId"]: c["status"] for c in json.loads(body)["credentials"]}[registered]
    assert demo_status() == "suspended"
    # ...whose event arrives in the feed, with its tenant and nothing of the user.
    changed = '#events li[data-type="signet.registration.credential.status.changed.v1"]'
    wait(driver, 30).until(lambda d: any("(tenant demo)" in li.text for li in d.find_elements(By.CSS_SELECTOR, changed)))
    assert user not in text(driver, "events")
    assert "signet.registration.credential.status.changed.v1" in text(driver, "event-counts")
    row = driver.find_element(By.CSS_SELECTOR, f'#user-credentials tbody tr[data-credential-id="{registered}"]')
    assert "suspended" in row.text
    driver.execute_script("document.getElementById('status').textContent = ''")
    row.find_element(By.TAG_NAME, "button").click()
    wait(driver).until(lambda d: "resumed." in status(d) or error_code(d))
    assert demo_status() == "active"

    # The user found by prefix, opened from the results: passkeys and methods (masked).
    set_value(driver, "user-prefix", user[:-2])
    click(driver, "user-search")
    wait(driver).until(lambda d: "user(s) found" in status(d) or error_code(d))
    found = driver.find_element(By.CSS_SELECTOR, f'#user-results button[data-username="{user}"]')
    driver.execute_script("document.getElementById('status').textContent = ''")
    found.click()
    wait(driver).until(lambda d: "passkey(s)" in status(d) or error_code(d))
    assert f"User {user}: 1 passkey(s), 1 method(s)" in status(driver), error_code(driver)
    # The data-rights fetch: the document, with the user's sessions and sign-ins tables.
    click(driver, "user-data")
    wait(driver).until(lambda d: "fetched" in status(d) or error_code(d))
    assert f"Data of {user} generated" in text(driver, "user-data-summary"), error_code(driver)
    assert "registration" in text(driver, "user-data-summary")
    # The erasure, confirmed, completes with a signed receipt.
    click(driver, "user-erase")
    wait(driver).until(lambda d: error_code(d) or "requested" in status(d))
    assert "requested" not in status(driver)  # not without the confirmation
    driver.find_element(By.ID, "erase-confirm").click()
    click(driver, "user-erase")
    wait(driver).until(lambda d: "requested" in status(d) or error_code(d))
    assert "Erasure of" in status(driver), error_code(driver)
    for _ in range(100):
        click(driver, "erasure-check")
        wait(driver).until(lambda d: "Erasure" in status(d) or error_code(d))
        if text(driver, "erasure-status") == "COMPLETED":
            break
        time.sleep(0.3)
    assert text(driver, "erasure-status") == "COMPLETED", error_code(driver)
    receipt = driver.find_element(By.ID, "erasure-receipt").get_attribute("value")
    assert receipt.count(".") == 2
    header = json.loads(base64.urlsafe_b64decode(receipt.split(".")[0] + "=="))
    assert header["typ"] == "erasure-receipt+jwt"
    assert user not in receipt and user not in base64.urlsafe_b64decode(receipt.split(".")[1] + "==").decode()


def test_a_viewer_changes_nothing(browser):
    driver = browser
    open_console(driver)
    enrol(driver, "viewer")
    assert text(driver, "who-role") == "viewer"
    for fieldset in driver.find_elements(By.CSS_SELECTOR, "fieldset.needs-administrator"):
        assert fieldset.get_attribute("disabled") is not None
    assert driver.find_element(By.ID, "unlock").get_attribute("disabled") is not None
    for control in ["user-data", "user-erase", "erase-confirm"]:
        assert driver.find_element(By.ID, control).get_attribute("disabled") is not None, control
    # Keyboard: every control of the page is reachable with Tab and has a name.
    unnamed = driver.execute_script(
        """
        return [...document.querySelectorAll('#signed-in input, #signed-in select, #signed-in textarea, #signed-in button')]
          .filter((e) => e.tabIndex < 0 || !(e.labels?.length || e.getAttribute('aria-label') || (e.tagName === 'BUTTON' && e.textContent.trim())))
          .map((e) => e.id || e.outerHTML.slice(0, 60));
        """)
    assert unnamed == [], unnamed
    # Contrast: every visible element with text of its own reaches WCAG AA (4.5:1) against the
    # first opaque background behind it (disabled controls included: they are read too).
    low = driver.execute_script(
        """
        const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
        const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
          .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
        const background = (e) => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
          if (c.length === 3 || c[3] > 0) return c.slice(0, 3); } return [255, 255, 255]; };
        const low = [];
        for (const e of document.querySelectorAll('body *')) {
          if (!e.offsetParent || ![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
          const [a, b] = [lum(rgb(getComputedStyle(e).color).slice(0, 3)), lum(background(e))];
          const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
          if (ratio < 4.5) low.push(`${e.tagName}#${e.id} ${ratio.toFixed(2)}`);
        }
        return low;
        """)
    assert low == [], low
    # Behind the page's back, with the viewer's own valid CSRF token: refused by the backend.
    session = fetch(driver, "GET", "/console/api/session")
    assert session["status"] == 200 and session["body"]["role"] == "viewer"
    csrf = session["body"]["csrfToken"]
    tenant = "e2e-viewer-" + secrets.token_hex(4)
    change = {"displayName": "Viewer's", "rpId": "bank.example", "origins": ["https://bank.example"]}
    refused = fetch(driver, "PUT", f"/console/api/tenants/{tenant}", change, csrf=csrf)
    assert (refused["status"], refused["code"]) == (403, "console_role_insufficient")
    key = fetch(driver, "POST", "/console/api/tenants/demo/api-keys", None, csrf=csrf)
    assert (key["status"], key["code"]) == (403, "console_role_insufficient")
    code, _, _ = http("GET", f"{REGISTRATION}/v1/tenants/{tenant}")
    assert code == 404
    # The services' readiness.
    click(driver, "services-check")
    wait(driver).until(lambda d: "ready" in status(d) or error_code(d))
    assert status(driver) == "All services are ready.", error_code(driver)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#services tbody tr")) == 5
    versions = {row.find_elements(By.TAG_NAME, "td")[4].text for row in driver.find_elements(By.CSS_SELECTOR, "#services tbody tr")}
    assert len(versions) == 1 and "unknown" not in versions and "" not in versions, versions
    # The viewer finds users.
    driver.find_element(By.ID, "tenant-id").send_keys("demo")
    driver.find_element(By.ID, "user-name").send_keys("nobody-" + secrets.token_hex(4))
    click(driver, "user-find")
    wait(driver).until(lambda d: "passkey(s)" in status(d) or error_code(d))
    # Reading is allowed.
    demo = fetch(driver, "GET", "/console/api/tenants/demo")
    assert demo["status"] == 200 and demo["body"]["id"] == "demo"
    # ...and searches them, but never reads a user's data document nor erases.
    search = fetch(driver, "GET", "/console/api/tenants/demo/users?prefix=console-e2e-")
    assert search["status"] == 200 and isinstance(search["body"]["users"], list)
    data = fetch(driver, "GET", "/console/api/tenants/demo/users/someone/data")
    assert (data["status"], data["code"]) == (403, "console_role_insufficient")
    erase = fetch(driver, "DELETE", "/console/api/tenants/demo/users/someone", None, csrf=csrf)
    assert (erase["status"], erase["code"]) == (403, "console_role_insufficient")

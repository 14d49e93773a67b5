// Signet demo relying party: passkey registration and sign-in against the demo tenant, and
// "Sign in with your phone" (the adaptive sign-in's `qr` step: a code the user's bound phone
// scans and confirms; this page then gets the session, the phone never does).
// The backend routes under /demo/api/ are served by the gateway. Only the sign-up route carries
// the RP API key (added by the gateway, for usernames that have nothing registered yet); a
// passkey is registered with that sign-up token, or with the signed-in user's own session
// token, so nobody can add a passkey to somebody else's account.
"use strict";

(() => {
  const API = "/demo/api";
  const $ = (id) => document.getElementById(id);

  // base64url and the WebAuthn JSON forms: webauthn-json.js, shared with the console.
  const { b64urlToBuffer, creationOptions, requestOptions, credentialJSON } = window.SignetWebAuthnJSON;

  // ---- backend calls; failures are problem+json documents (RFC 9457) with a `code` ----

  class Problem extends Error {
    constructor(doc, status, local = false) {
      super(doc.detail || doc.title || `HTTP ${status}`);
      this.local = local;
      this.status = status;
      this.title = doc.title || `HTTP ${status}`;
      this.detail = doc.detail || "";
      this.code = doc.code || `http_${status}`;
    }
  }

  function post(path, body, token) {
    return call("POST", path, body, token);
  }

  function get(path, signal) {
    return call("GET", path, undefined, null, signal);
  }

  async function call(method, path, body, token, signal) {
    let res;
    const headers = { Accept: "application/json, application/problem+json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (token) headers.Authorization = `Bearer ${token}`;
    try {
      res = await fetch(API + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit",
        cache: "no-store",
        signal,
      });
    } catch (e) {
      if (e && e.name === "AbortError") throw e;
      throw new Problem({ title: "The server could not be reached", detail: String(e.message || e), code: "network_error" }, 0);
    }
    const type = res.headers.get("Content-Type") || "";
    const doc = type.includes("json") ? await res.json().catch(() => null) : null;
    if (!res.ok) throw new Problem(doc || { title: `HTTP ${res.status}`, detail: res.statusText }, res.status);
    if (!doc) throw new Problem({ title: "Unexpected response", detail: `expected JSON, got ${type || "nothing"}`, code: "bad_response" }, res.status);
    return doc;
  }

  // ---- page state ----

  // session: the signed-in user's { username, token }, in this page's memory only.
  // qr: the running "sign in with your phone" ({ signinId, cancelled, source, controller }).
  const state = { busy: false, conditional: null, session: null, qr: null };

  function status(text) {
    $("status").textContent = text;
  }

  function clearError() {
    $("error").hidden = true;
    $("error-title").textContent = "";
    $("error-code").textContent = "";
    $("error-detail").textContent = "";
  }

  function showError(e) {
    const box = $("error");
    if (e instanceof Problem) {
      $("error-heading").textContent = e.local ? "Check the form"
        : e.status >= 500 || e.status === 0 ? "The server could not finish this" : "The server refused this";
      $("error-title").textContent = e.title + ".";
      $("error-code").textContent = e.code;
      $("error-detail").textContent = e.detail;
    } else if (e && e.name) {
      // A DOMException from the WebAuthn API: cancelled, timed out, no matching passkey, …
      $("error-heading").textContent = "The browser did not complete this";
      $("error-title").textContent = explainDOMException(e);
      $("error-code").textContent = e.name;
      $("error-detail").textContent = e.message || "";
    } else {
      $("error-heading").textContent = "Something went wrong";
      $("error-title").textContent = "Unexpected error.";
      $("error-code").textContent = "client_error";
      $("error-detail").textContent = String(e);
    }
    box.hidden = false;
    status("");
  }

  function explainDOMException(e) {
    switch (e.name) {
      case "NotAllowedError": return "The request was cancelled, timed out, or no passkey was chosen.";
      case "InvalidStateError": return "This authenticator already holds a passkey for this account.";
      case "SecurityError": return "This page's address is not allowed to use passkeys for this site.";
      case "NotSupportedError": return "This authenticator does not support what the site asked for.";
      case "AbortError": return "The request was aborted.";
      default: return "The browser refused the request.";
    }
  }

  function setBusy(busy) {
    state.busy = busy;
    document.body.dataset.busy = busy ? "true" : "false";
    for (const id of ["signin-username-button", "signin-passkey-button", "phone-button", "register-button", "signout-button"]) {
      $(id).disabled = busy;
    }
  }

  function show(view) {
    document.body.dataset.state = view;
    $("signed-out").hidden = view !== "signed-out";
    $("account").hidden = view === "signed-out";
    $("registration-info").hidden = view !== "registered";
    $("session-info").hidden = view !== "signed-in";
  }

  function setConditionalState(value, text) {
    document.body.dataset.conditional = value;
    $("conditional-state").textContent = text;
  }

  // ---- conditional mediation (passkey autofill on the username field) ----

  let conditionalFailures = 0;

  function conditionalAvailable() {
    return typeof PublicKeyCredential !== "undefined" &&
      typeof PublicKeyCredential.isConditionalMediationAvailable === "function"
      ? PublicKeyCredential.isConditionalMediationAvailable().catch(() => false)
      : Promise.resolve(false);
  }

  function startConditional() {
    if (state.conditional || document.body.dataset.state !== "signed-out") return;
    const controller = new AbortController();
    const run = { controller, done: null };
    state.conditional = run;
    run.done = (async () => {
      let timer;
      let ownsBusy = false;
      try {
        if (!(await conditionalAvailable())) {
          setConditionalState("unavailable", "Passkey autofill is not available in this browser; use the buttons below.");
          return;
        }
        if (controller.signal.aborted) return;
        const options = await post("/authentications/options", {});
        if (controller.signal.aborted) return;
        // The ceremony handle expires; start a fresh request before it does.
        const lifetime = Math.max(30000, (options.publicKey.timeout || 300000) - 10000);
        timer = setTimeout(() => { if (state.conditional === run) restartConditional(); }, lifetime);
        setConditionalState("pending", "Passkey autofill is ready: choose a passkey from the username field's suggestions.");
        const credential = await navigator.credentials.get({
          mediation: "conditional",
          publicKey: requestOptions(options.publicKey),
          signal: controller.signal,
        });
        clearTimeout(timer);
        if (state.conditional === run) state.conditional = null;
        if (!credential || controller.signal.aborted) return;
        setConditionalState("completed", "Passkey chosen from autofill.");
        ownsBusy = true;
        setBusy(true);
        clearError();
        status("Checking your passkey…");
        await finishSignIn(options.handle, credential);
        conditionalFailures = 0;
      } catch (e) {
        if (controller.signal.aborted || (e && e.name === "AbortError")) return;
        setConditionalState("stopped", "Passkey autofill stopped; use the buttons below.");
        if (e instanceof Problem) {
          // The server refused the chosen passkey (or could not be reached): say so, and offer
          // autofill again, without spinning on repeated failures.
          showError(e);
          conditionalFailures += 1;
          if (conditionalFailures <= 3) {
            setTimeout(() => { if (!state.busy) startConditional(); }, 1000 * conditionalFailures);
          }
        }
        // A browser-side refusal of a request the user did not start is not worth an alert;
        // the buttons still work.
      } finally {
        clearTimeout(timer);
        if (state.conditional === run) state.conditional = null;
        if (ownsBusy) setBusy(false);
      }
    })();
  }

  // Cancels a pending autofill request (a modal request cannot start while it is pending).
  async function stopConditional() {
    const run = state.conditional;
    if (!run) return;
    state.conditional = null;
    run.controller.abort();
    await run.done;
    setConditionalState("stopped", "Passkey autofill paused.");
  }

  async function restartConditional() {
    await stopConditional();
    await startConditional();
  }

  // ---- ceremonies ----

  async function register(event) {
    event.preventDefault();
    if (state.busy) return;
    const username = $("register-username").value.trim();
    const displayName = $("register-display-name").value.trim();
    clearError();
    if (!username) {
      $("register-username").setAttribute("aria-invalid", "true");
      $("register-username").focus();
      showError(new Problem({ title: "Enter a username", detail: "A username names the account the passkey is for.", code: "username_missing" }, 400, true));
      return;
    }
    $("register-username").removeAttribute("aria-invalid");
    setBusy(true);
    await stopConditional();
    try {
      status("Asking the server for registration options…");
      const body = {
        username,
        authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
        attestation: "none",
      };
      if (displayName) body.displayName = displayName;
      // The signed-in user adds a passkey to their own account with their session token;
      // anyone else signs up, which the server allows only for a username with nothing
      // registered.
      let token = state.session && state.session.username === username ? state.session.token : null;
      if (!token) {
        status("Opening a sign-up…");
        token = (await post("/signups", { username })).signUpToken;
      }
      const options = await post("/registrations/options", body, token);
      status("Follow your browser's prompt to create a passkey…");
      const credential = await navigator.credentials.create({ publicKey: creationOptions(options.publicKey) });
      status("Registering the passkey…");
      const resource = await post("/registrations", {
        handle: options.handle,
        credential: credentialJSON(credential),
        friendlyName: "Passkey created in the demo",
      }, token);
      $("register-form").reset();
      showRegistered(username, resource);
      status(`Passkey registered for ${username}.`);
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
      startConditional();
    }
  }

  async function signIn(username) {
    if (state.busy) return;
    clearError();
    setBusy(true);
    await stopConditional();
    try {
      status("Asking the server for sign-in options…");
      const options = await post("/authentications/options", username ? { username } : {});
      status("Follow your browser's prompt to use your passkey…");
      const credential = await navigator.credentials.get({ publicKey: requestOptions(options.publicKey) });
      status("Checking your passkey…");
      await finishSignIn(options.handle, credential);
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
      startConditional();
    }
  }

  async function finishSignIn(handle, credential) {
    const result = await post("/authentications", { handle, credential: credentialJSON(credential) });
    state.session = { username: result.username, token: result.sessionToken };
    showSession(result);
    status(`Signed in as ${result.username}.`);
  }

  // ---- sign in with your phone (the adaptive sign-in's `qr` step) ----

  const QR_FINISHED = new Set(["SUCCEEDED", "FAILED", "EXPIRED"]);
  const QR_TEXT = {
    starting: "Asking the server for a code…",
    waiting: "Scan the code with the bank's app on your phone.",
    scanned: "Your phone scanned the code: confirm the sign-in on your phone.",
    working: "Your phone confirmed: signing you in on this computer…",
    succeeded: "Signed in with your phone.",
    failed: "The sign-in with your phone did not succeed.",
    expired: "The code expired before it was used. Show a new code to try again.",
    cancelled: "Sign-in with your phone cancelled.",
  };
  const QR_REASONS = { user_rejected: "it was rejected on the phone" };

  // The page's view of the flow: body[data-qr] (for styles and tests) and the live region.
  function setQRState(value, text) {
    document.body.dataset.qr = value;
    $("qr-status").textContent = text || QR_TEXT[value];
  }

  function resetQR() {
    stopWatching(state.qr);
    state.qr = null;
    delete document.body.dataset.qr;
    delete document.body.dataset.qrTransport;
    $("qr-panel").hidden = true;
    for (const attribute of ["src", "width", "height", "data-loaded"]) $("qr-image").removeAttribute(attribute);
    $("qr-status").textContent = "";
    $("qr-retry").hidden = true;
    $("qr-cancel").textContent = "Cancel";
  }

  function stopWatching(run) {
    if (!run) return;
    run.cancelled = true;
    if (run.source) run.source.close();
    run.controller.abort();
  }

  function showQR(shown) {
    // The PNG from the API, as a data: URL (the page's CSP allows data: images only).
    if (!/^[A-Za-z0-9+/]+=*$/.test(shown.qrCodePng || "")) {
      throw new Problem({ title: "Unexpected response", detail: "The code's image is not base64 PNG.", code: "bad_response" }, 200);
    }
    const image = $("qr-image");
    // Drawn at a whole multiple of its pixels (about 256 px wide), so every module stays square
    // and sharp for the camera.
    image.onload = () => {
      const scale = Math.max(1, Math.round(256 / image.naturalWidth));
      image.width = image.naturalWidth * scale;
      image.height = image.naturalHeight * scale;
      image.dataset.loaded = "true";
    };
    delete image.dataset.loaded;
    image.src = `data:image/png;base64,${shown.qrCodePng}`;
    image.hidden = false;
    $("qr-expires").textContent = new Date(shown.expiresAt).toLocaleTimeString();
    $("qr-expires").dateTime = shown.expiresAt;
    $("qr-figure").hidden = false;
    $("qr-panel").hidden = false;
    $("qr-retry").hidden = true;
  }

  // What each status of the QR session means on this page.
  function onQRStatus(view) {
    if (view.status === "PENDING") setQRState("waiting");
    else if (view.status === "SCANNED") setQRState("scanned");
  }

  // Follows the QR session until it is finished: Server-Sent Events (each answer is one event;
  // the EventSource reconnects with Last-Event-ID for the next), else long polling from the
  // last revision seen. Resolves with the finished session's view.
  async function followQR(run, shown) {
    const query = `watchToken=${encodeURIComponent(shown.watchToken)}`;
    const path = `/qr-sessions/${encodeURIComponent(shown.qrSessionId)}`;
    let since = 0;
    if (typeof EventSource === "function") {
      document.body.dataset.qrTransport = "sse";
      const outcome = await new Promise((resolve) => {
        const source = new EventSource(`${API}${path}?${query}`);
        run.source = source;
        source.addEventListener("status", (event) => {
          let view;
          try { view = JSON.parse(event.data); } catch (e) { return; }
          if (run.cancelled || typeof view.revision !== "number" || view.revision <= since) return;
          since = view.revision;
          onQRStatus(view);
          if (QR_FINISHED.has(view.status)) {
            source.close();
            resolve(view);
          }
        });
        source.addEventListener("error", () => {
          // CONNECTING: the EventSource reconnects by itself. CLOSED: the server ended the
          // stream without a finished status (or refused it), or the browser gave up; long
          // polling takes over from the last revision seen.
          if (source.readyState === EventSource.CLOSED) resolve(null);
        });
        run.controller.signal.addEventListener("abort", () => { source.close(); resolve(null); });
      });
      if (outcome) return outcome;
    }
    let failures = 0;
    document.body.dataset.qrTransport = "poll";
    while (!run.cancelled) {
      let view;
      try {
        view = await get(`${path}?${query}&waitSeconds=25&sinceRevision=${since}`, run.controller.signal);
        failures = 0;
      } catch (e) {
        if (run.cancelled) break;
        // A network error or a busy server: try again a few times, a little later each time.
        if (!(e instanceof Problem) || (e.status !== 0 && e.status < 500) || ++failures > 3) throw e;
        await new Promise((r) => setTimeout(r, 1000 * failures));
        continue;
      }
      if (view.revision > since) {
        since = view.revision;
        onQRStatus(view);
      }
      if (QR_FINISHED.has(view.status)) return view;
    }
    throw new DOMException("Cancelled", "AbortError");
  }

  async function signInWithPhone() {
    if (state.busy) return;
    clearError();
    resetQR();
    setBusy(true);
    await stopConditional();
    const run = { signinId: null, cancelled: false, source: null, controller: new AbortController() };
    state.qr = run;
    const username = $("signin-username").value.trim();
    let outcome = null;
    try {
      $("qr-cancel").textContent = "Cancel";
      $("qr-panel").hidden = false;
      $("qr-figure").hidden = true;
      setQRState("starting");
      const started = await post("/signins", username ? { username } : {});
      const offered = (started.sequences || []).some((sequence) => sequence[0] === "qr");
      if (started.status !== "IN_PROGRESS" || !offered) {
        throw new Problem({
          title: "Signing in with a phone is not offered here",
          detail: "The tenant's sign-in rules offer no step with a phone for this sign-in.",
          code: "qr_not_offered",
        }, 409, true);
      }
      if (run.cancelled) return;
      run.signinId = started.signinId;
      const steps = `/signins/${encodeURIComponent(started.signinId)}/methods/qr`;
      const shown = await post(`${steps}/challenge`, {});
      if (run.cancelled) return;
      showQR(shown);
      setQRState("waiting");
      status("");
      outcome = await followQR(run, shown);
      if (run.cancelled) return;
      if (outcome.status === "EXPIRED") {
        // Not a failed attempt: nobody scanned in time. The code is gone; a new one is a click away.
        $("qr-figure").hidden = true;
        $("qr-retry").hidden = false;
        setQRState("expired");
        return;
      }
      // SUCCEEDED or FAILED: the sign-in's verify says what it means for this page (and
      // counts a refusal for anti-hammering).
      if (outcome.status === "SUCCEEDED") setQRState("working");
      $("qr-figure").hidden = true;
      const progress = await post(`${steps}/verify`, {});
      if (progress.status !== "SUCCEEDED" || !progress.sessionToken) {
        throw new Problem({ title: "The sign-in needs another step", detail: "This demo finishes sign-ins that one step completes.", code: "signin_incomplete" }, 200);
      }
      // The refresh token of the answer is not kept: this page holds the session token only.
      const claims = decodeJWTPart(progress.sessionToken.split(".")[1]);
      state.session = { username: claims.sub, token: progress.sessionToken };
      setQRState("succeeded");
      showSession({ username: claims.sub, sessionToken: progress.sessionToken, expiresAt: progress.expiresAt, credentialId: null });
      status(`Signed in as ${claims.sub} with your phone.`);
    } catch (e) {
      if (run.cancelled || (e && e.name === "AbortError")) return;
      $("qr-figure").hidden = true;
      $("qr-retry").hidden = false;
      const reason = outcome && outcome.status === "FAILED" ? QR_REASONS[outcome.reason] : null;
      setQRState("failed", reason ? `${QR_TEXT.failed}: ${reason}.` : QR_TEXT.failed);
      showError(e);
    } finally {
      run.finished = true;
      stopWatching(run);
      // What is left on the panel (the outcome, "Show a new code") is closed, not cancelled.
      $("qr-cancel").textContent = "Close";
      setBusy(false);
      startConditional();
    }
  }

  function cancelQR() {
    const run = state.qr;
    resetQR();
    if (run && !run.finished) status(QR_TEXT.cancelled);
  }

  function signOut() {
    // The token lives only in this page's memory; forgetting it ends the demo session.
    state.session = null;
    resetQR();
    $("session-token").textContent = "";
    $("token-header").textContent = "";
    $("claims-body").replaceChildren();
    $("credential-details").replaceChildren();
    $("account-username").textContent = "";
    clearError();
    show("signed-out");
    status("Signed out.");
    $("signin-username").value = "";
    conditionalFailures = 0;
    startConditional();
  }

  // ---- views ----

  function addRow(dl, term, value) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    dl.append(dt, dd);
  }

  function showRegistered(username, resource) {
    $("account-username").textContent = username;
    const dl = $("credential-details");
    dl.replaceChildren();
    addRow(dl, "Credential ID", resource.credentialId);
    addRow(dl, "Authenticator (AAGUID)", resource.aaguid);
    addRow(dl, "Attestation", `${resource.attestationFormat} (${resource.attestationType})`);
    addRow(dl, "Algorithm", String(resource.algorithm));
    addRow(dl, "User verified", resource.userVerified ? "yes" : "no");
    addRow(dl, "Backup eligible / backed up", `${resource.backupEligible ? "yes" : "no"} / ${resource.backupState ? "yes" : "no"}`);
    dl.dataset.credentialId = resource.credentialId;
    show("registered");
    $("account-heading").focus();
  }

  function decodeJWTPart(part) {
    const bytes = new Uint8Array(b64urlToBuffer(part));
    return JSON.parse(new TextDecoder().decode(bytes));
  }

  function formatClaim(name, value) {
    if (["exp", "iat", "nbf", "auth_time"].includes(name) && typeof value === "number") {
      return `${value} (${new Date(value * 1000).toISOString()})`;
    }
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  // result: { username, sessionToken, expiresAt, credentialId } (null credentialId: signed in
  // with the phone, whose session names no credential of this browser).
  function showSession(result) {
    $("account-username").textContent = result.username;
    $("session-credential").textContent = result.credentialId || "";
    $("session-by-passkey").hidden = !result.credentialId;
    $("session-by-phone").hidden = !!result.credentialId;
    $("session-expires").textContent = result.expiresAt;
    $("session-expires").dateTime = result.expiresAt;
    $("session-token").textContent = result.sessionToken;
    const body = $("claims-body");
    body.replaceChildren();
    try {
      const [header, payload] = result.sessionToken.split(".");
      $("token-header").textContent = JSON.stringify(decodeJWTPart(header), null, 2);
      for (const [name, value] of Object.entries(decodeJWTPart(payload))) {
        const tr = document.createElement("tr");
        const th = document.createElement("th");
        th.scope = "row";
        th.textContent = name;
        const td = document.createElement("td");
        td.textContent = formatClaim(name, value);
        td.dataset.claim = name;
        tr.append(th, td);
        body.append(tr);
      }
    } catch (e) {
      $("token-header").textContent = "The session token could not be decoded.";
    }
    show("signed-in");
    $("account-heading").focus();
  }

  // ---- wiring ----

  function init() {
    // Signing in with the phone needs no WebAuthn in this browser.
    $("phone-button").addEventListener("click", signInWithPhone);
    $("qr-retry").addEventListener("click", signInWithPhone);
    $("qr-cancel").addEventListener("click", cancelQR);
    $("signout-button").addEventListener("click", signOut);
    if (typeof window.PublicKeyCredential === "undefined" || !navigator.credentials) {
      const p = $("support");
      p.textContent = "This browser does not support passkeys (Web Authentication), or this page is not in a secure context.";
      p.hidden = false;
      setConditionalState("unavailable", "Passkey autofill is not available.");
      for (const id of ["signin-username-button", "signin-passkey-button", "register-button"]) $(id).disabled = true;
      return;
    }
    $("register-form").addEventListener("submit", register);
    $("signin-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const username = $("signin-username").value.trim();
      if (!username) {
        $("signin-username").focus();
        showError(new Problem({ title: "Enter a username, or use “Sign in with a passkey”", detail: "", code: "username_missing" }, 400, true));
        return;
      }
      signIn(username);
    });
    $("signin-passkey-button").addEventListener("click", () => signIn(null));
    show("signed-out");
    setBusy(false);
    startConditional();
  }

  init();
})();

// Signet console: operators sign in with a passkey of the operators' tenant; every call goes to
// the console's own backend (/console/api/), which holds the admin token and forwards what the
// operator's role allows. The browser holds an HttpOnly session cookie only; state-changing
// calls carry the session's CSRF token in X-CSRF-Token.
"use strict";

(() => {
  const API = "/console/api";
  const $ = (id) => document.getElementById(id);
  let session = null;

  // The WebAuthn JSON forms: webauthn-json.js, shared with the demo page.
  const { creationOptions, requestOptions, credentialJSON } = window.SignetWebAuthnJSON;

  // ---- calls to the console backend; failures are problem+json with a `code` ----

  class Problem extends Error {
    constructor(doc, status) {
      super(doc.detail || doc.title || `HTTP ${status}`);
      this.doc = doc;
      this.status = status;
    }
  }

  async function call(method, path, body) {
    const headers = {};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET" && session) headers["X-CSRF-Token"] = session.csrfToken;
    const response = await fetch(API + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin", cache: "no-store",
    });
    const text = await response.text();
    let doc = {};
    try { doc = text ? JSON.parse(text) : {}; } catch { doc = { title: `HTTP ${response.status}` }; }
    if (!response.ok) {
      if (response.status === 401 && doc.code === "console_session_required") showSignedOut();
      throw new Problem(doc, response.status);
    }
    return doc;
  }

  function say(text) {
    $("error").hidden = true;
    $("status").textContent = text;
  }
  function fail(error) {
    $("status").textContent = "";
    const doc = error instanceof Problem ? error.doc : { title: error.name || "Error", detail: error.message };
    $("error-title").textContent = doc.title || "Refused";
    $("error-code").textContent = doc.code || "(none)";
    $("error-detail").textContent = doc.detail || "";
    $("error").hidden = false;
    $("error").focus?.();
  }
  function act(fn) {
    return async (event) => {
      event?.preventDefault?.();
      try { await fn(); } catch (error) { fail(error); }
    };
  }

  // ---- session ----

  function showSignedIn(s) {
    session = s;
    document.body.dataset.state = "signed-in";
    document.body.dataset.role = s.role;
    $("who-name").textContent = s.username;
    $("who-role").textContent = s.role;
    $("who").hidden = false;
    $("signed-out").hidden = true;
    $("signed-in").hidden = false;
    // The server refuses what the role does not allow; the page also says so.
    for (const f of document.querySelectorAll(".needs-administrator")) f.disabled = s.role !== "administrator";
    for (const b of document.querySelectorAll(".needs-operator")) b.disabled = s.role === "viewer";
    $("main").focus();
  }
  function showSignedOut() {
    if (feed) stopFeed();
    session = null;
    document.body.dataset.state = "signed-out";
    $("who").hidden = true;
    $("signed-out").hidden = false;
    $("signed-in").hidden = true;
  }

  $("sign-in").addEventListener("click", act(async () => {
    say("Waiting for your passkey…");
    const options = await call("POST", "/sign-in/options", {});
    const credential = await navigator.credentials.get({ publicKey: requestOptions(options.publicKey) });
    showSignedIn(await call("POST", "/sign-in", { handle: options.handle, credential: credentialJSON(credential) }));
    say(`Signed in as ${session.username}.`);
  }));

  $("enrol-form").addEventListener("submit", act(async () => {
    say("Creating your passkey…");
    const options = await call("POST", "/enrolments/options", { username: $("enrol-username").value, code: $("enrol-code").value });
    const credential = await navigator.credentials.create({ publicKey: creationOptions(options.publicKey) });
    showSignedIn(await call("POST", "/enrolments", { handle: options.handle, credential: credentialJSON(credential) }));
    $("enrol-code").value = "";
    say(`Passkey enrolled; signed in as ${session.username}.`);
  }));

  $("sign-out").addEventListener("click", act(async () => {
    await call("POST", "/sign-out");
    showSignedOut();
    say("Signed out.");
  }));

  // ---- tenants and keys ----

  const tenant = () => encodeURIComponent($("tenant-id").value.trim());

  function showTenant(t) {
    const view = $("tenant-view");
    view.replaceChildren();
    for (const [name, value] of [["Id", t.id], ["Display name", t.displayName], ["RP ID", t.rpId],
      ["Origins", (t.origins || []).join(", ")], ["Revision", String(t.revision)]]) {
      const dt = document.createElement("dt");
      dt.textContent = name;
      const dd = document.createElement("dd");
      dd.textContent = value ?? "";
      view.append(dt, dd);
    }
    $("tenant-name").value = t.displayName || "";
    $("tenant-rpid").value = t.rpId || "";
    $("tenant-origins").value = (t.origins || []).join("\n");
  }

  $("tenant-open-form").addEventListener("submit", act(async () => {
    showTenant(await call("GET", `/tenants/${tenant()}`));
    say(`Tenant ${$("tenant-id").value} opened.`);
  }));

  $("tenant-form").addEventListener("submit", act(async () => {
    const origins = $("tenant-origins").value.split("\n").map((s) => s.trim()).filter(Boolean);
    showTenant(await call("PUT", `/tenants/${tenant()}`, { displayName: $("tenant-name").value, rpId: $("tenant-rpid").value.trim(), origins }));
    say(`Tenant ${$("tenant-id").value} saved.`);
  }));

  function showKey(k) {
    $("key-shown-id").textContent = k.keyId;
    $("key-shown-value").value = k.apiKey;
    $("key-shown").hidden = false;
    $("key-id").value = k.keyId;
    $("key-shown-value").focus();
  }

  $("key-create").addEventListener("click", act(async () => {
    showKey(await call("POST", `/tenants/${tenant()}/api-keys`));
    say("API key created.");
  }));
  $("key-rotate").addEventListener("click", act(async () => {
    const old = $("key-id").value.trim();
    const k = await call("POST", `/tenants/${tenant()}/api-keys/${encodeURIComponent(old)}/rotate`);
    showKey(k);
    say(k.revokedKeyId ? `Key ${old} rotated and revoked.` : `New key created; ${old} could not be revoked.`);
  }));
  $("key-revoke").addEventListener("click", act(async () => {
    const old = $("key-id").value.trim();
    await call("DELETE", `/tenants/${tenant()}/api-keys/${encodeURIComponent(old)}`);
    $("key-shown").hidden = true;
    say(`Key ${old} revoked.`);
  }));

  // ---- facets, apps and the UAF policy ----

  const lines = (id) => $(id).value.split("\n").map((s) => s.trim()).filter(Boolean);

  function checkUAFPolicy() {
    const box = $("uaf-policy");
    let message = "";
    if (box.value.trim()) {
      try {
        const value = JSON.parse(box.value);
        if (!value || !Array.isArray(value.accepted) || value.accepted.length === 0) message = "A UAF policy is an object with a non-empty accepted array.";
      } catch (error) {
        message = `Not JSON yet: ${error.message}`;
      }
    }
    box.setAttribute("aria-invalid", message ? "true" : "false");
    $("uaf-policy-check").textContent = message || (box.value.trim() ? "Well-formed." : "Empty: every authenticator Signet can verify.");
    return !message;
  }
  $("uaf-policy").addEventListener("input", checkUAFPolicy);

  function showUAF(u) {
    $("uaf-appid").textContent = u.appId || "";
    $("uaf-facets").value = (u.facetIds || []).join("\n");
    $("uaf-policy").value = u.policy ? JSON.stringify(u.policy, null, 2) : "";
    $("uaf-surrogate").checked = u.allowSurrogateWithoutMetadata !== false;
    checkUAFPolicy();
  }
  $("uaf-load").addEventListener("click", act(async () => {
    showUAF(await call("GET", `/tenants/${tenant()}/uaf-settings`));
    say("UAF settings loaded.");
  }));
  $("uaf-form").addEventListener("submit", act(async () => {
    if (!checkUAFPolicy()) { $("uaf-policy").focus(); return; }
    const body = { facetIds: lines("uaf-facets"), allowSurrogateWithoutMetadata: $("uaf-surrogate").checked };
    if ($("uaf-policy").value.trim()) body.policy = JSON.parse($("uaf-policy").value);
    const saved = await call("PUT", `/tenants/${tenant()}/uaf-settings`, body);
    showUAF(saved);
    say(`UAF settings saved (revision ${saved.revision}).`);
  }));

  function showApps(a) {
    $("app-domains").value = (a.domains || []).join("\n");
    $("app-ios").value = (a.iosAppIds || []).join("\n");
    $("app-android").value = (a.androidApps || []).map((x) => [x.packageName, ...(x.sha256CertFingerprints || [])].join(" ")).join("\n");
    $("app-qr").value = a.defaultQrType || "";
    $("app-weburl").value = a.webUrl || "";
  }
  $("app-load").addEventListener("click", act(async () => {
    try {
      showApps(await call("GET", `/tenants/${tenant()}/app-settings`));
      say("App settings loaded.");
    } catch (error) {
      if (!(error instanceof Problem) || error.doc.code !== "app_settings_not_found") throw error;
      showApps({});
      say("The tenant has no app settings yet.");
    }
  }));
  $("app-form").addEventListener("submit", act(async () => {
    const body = {
      domains: lines("app-domains"), iosAppIds: lines("app-ios"),
      androidApps: lines("app-android").map((line) => {
        const [packageName, ...sha256CertFingerprints] = line.split(/\s+/);
        return { packageName, sha256CertFingerprints };
      }),
    };
    if ($("app-qr").value) body.defaultQrType = $("app-qr").value;
    if ($("app-weburl").value.trim()) body.webUrl = $("app-weburl").value.trim();
    showApps(await call("PUT", `/tenants/${tenant()}/app-settings`, body));
    say("App settings saved.");
  }));
  $("app-delete").addEventListener("click", act(async () => {
    await call("DELETE", `/tenants/${tenant()}/app-settings`);
    showApps({});
    say("App settings removed.");
  }));

  // ---- message templates and their preview ----

  const templatePath = () => `/tenants/${tenant()}/templates/${$("template-kind").value}/${encodeURIComponent($("template-locale").value.trim())}`;
  function templateBody() {
    const body = { emailSubject: $("template-subject").value, emailText: $("template-text").value, smsText: $("template-sms").value };
    if ($("template-html").value.trim()) body.emailHTML = $("template-html").value;
    return body;
  }
  function showTemplate(t) {
    $("template-subject").value = t.emailSubject || "";
    $("template-text").value = t.emailText || "";
    $("template-html").value = t.emailHTML || "";
    $("template-sms").value = t.smsText || "";
  }
  $("template-load").addEventListener("click", act(async () => {
    try {
      showTemplate(await call("GET", templatePath()));
      say("Template loaded.");
    } catch (error) {
      if (!(error instanceof Problem) || error.doc.code !== "not_found") throw error;
      showTemplate({});
      say("The tenant has no template of this kind and locale; the defaults apply.");
    }
  }));
  $("template-preview").addEventListener("click", act(async () => {
    const p = await call("POST", templatePath() + "/preview", templateBody());
    $("preview-subject").textContent = p.emailSubject;
    $("preview-text").textContent = p.emailText;
    $("preview-html").textContent = p.emailHTML || "(none)";
    $("preview-sms").textContent = p.smsText;
    $("preview-sms-count").textContent = String(p.smsCharacters);
    $("template-preview-view").hidden = false;
    say("Preview ready.");
  }));
  $("template-form").addEventListener("submit", act(async () => {
    await call("PUT", templatePath(), templateBody());
    say("Template saved.");
  }));
  $("template-delete").addEventListener("click", act(async () => {
    await call("DELETE", templatePath());
    showTemplate({});
    say("Template removed; the defaults apply.");
  }));

  // ---- rulesets and the explain trace ----

  const kind = () => $("ruleset-kind").value;

  // Validation as you type: the JSON must parse and have a rules array; the service checks
  // the rest on save and names the field it refuses.
  function checkRuleset() {
    const box = $("ruleset-json");
    let message = "";
    try {
      const value = JSON.parse(box.value);
      if (!value || !Array.isArray(value.rules)) message = "A ruleset is an object with a rules array.";
    } catch (error) {
      message = `Not JSON yet: ${error.message}`;
    }
    box.setAttribute("aria-invalid", message ? "true" : "false");
    $("ruleset-check").textContent = message || "Well-formed.";
    return !message;
  }
  $("ruleset-json").addEventListener("input", checkRuleset);

  $("ruleset-load").addEventListener("click", act(async () => {
    const stored = await call("GET", `/tenants/${tenant()}/rulesets/${kind()}`);
    $("ruleset-json").value = JSON.stringify({ rules: stored.rules || [] }, null, 2);
    checkRuleset();
    say(`Ruleset ${kind()} loaded${stored.version ? ` (version ${stored.version})` : ""}.`);
  }));

  $("ruleset-form").addEventListener("submit", act(async () => {
    if (!checkRuleset()) { $("ruleset-json").focus(); return; }
    const stored = await call("PUT", `/tenants/${tenant()}/rulesets/${kind()}`, JSON.parse($("ruleset-json").value));
    say(`Ruleset ${kind()} saved (version ${stored.version}).`);
  }));

  function showTrace(trace) {
    const d = trace.decision || {};
    $("trace-decision").textContent = `Decision: ${d.action || "?"}${d.matchedRule ? `, rule ${d.matchedRule}` : ", no rule matched"}`;
    const list = $("trace-rules");
    list.replaceChildren();
    for (const r of trace.rules || []) {
      const li = document.createElement("li");
      const b = r.because;
      const why = b ? ` (${b.fact} ${b.op} ${JSON.stringify(b.value)} was false; actual ${JSON.stringify(b.actual)})` : "";
      li.textContent = `${r.rule}: ${r.matched ? "matched" : "did not match"}${why}`;
      li.dataset.matched = String(!!r.matched);
      list.append(li);
    }
  }

  $("explain-form").addEventListener("submit", act(async () => {
    let facts;
    try { facts = JSON.parse($("explain-facts").value); } catch (error) { throw new Error(`Facts are not JSON: ${error.message}`); }
    showTrace(await call("POST", `/tenants/${tenant()}/rulesets/${kind()}/explain`, { facts }));
    say("Explained.");
  }));

  // ---- policies and keys ----

  const policy = () => $("policy-kind").value;
  $("policy-load").addEventListener("click", act(async () => {
    $("policy-json").value = JSON.stringify(await call("GET", `/tenants/${tenant()}/${policy()}`), null, 2);
    say(`${policy()} loaded.`);
  }));
  $("policy-form").addEventListener("submit", act(async () => {
    let doc;
    try { doc = JSON.parse($("policy-json").value); } catch (error) { throw new Error(`Not JSON: ${error.message}`); }
    $("policy-json").value = JSON.stringify(await call("PUT", `/tenants/${tenant()}/${policy()}`, doc), null, 2);
    say(`${policy()} saved.`);
  }));
  $("tctoken-rotate").addEventListener("click", act(async () => {
    const rotated = await call("POST", `/tenants/${tenant()}/tctoken-keys/rotate`);
    say(`tcToken signing key rotated; new key id ${rotated.kid}.`);
  }));

  // ---- the FIDO2 policy as a form (members it does not show, such as appId, are kept) ----

  let loadedFIDO = null;
  function showFIDO(p) {
    loadedFIDO = p;
    $("fido-uv").value = p.userVerification || "preferred";
    $("fido-rk").value = p.residentKey || "preferred";
    $("fido-level").value = p.minimumCertificationLevel || "";
    const a = p.attestation || {};
    $("fido-conveyance").value = a.conveyance || "none";
    $("fido-att-required").checked = !!a.required;
    $("fido-accept-none").checked = a.acceptNone !== false;
    $("fido-accept-self").checked = a.acceptSelf !== false;
    $("fido-allowed").value = (p.allowedAAGUIDs || []).join("\n");
    $("fido-disallowed").value = (p.disallowedAAGUIDs || []).join("\n");
    $("fido-algorithms").value = (p.allowedAlgorithms || []).join(", ");
    $("fido-autocreate").checked = !!p.autoCreatePasskey;
  }
  $("fido-load").addEventListener("click", act(async () => {
    showFIDO(await call("GET", `/tenants/${tenant()}/fido-policy`));
    say("FIDO2 policy loaded.");
  }));
  $("fido-form").addEventListener("submit", act(async () => {
    if (!loadedFIDO) throw new Error("Load the FIDO2 policy first.");
    const doc = { ...loadedFIDO };
    doc.userVerification = $("fido-uv").value;
    doc.residentKey = $("fido-rk").value;
    if ($("fido-level").value) doc.minimumCertificationLevel = $("fido-level").value; else delete doc.minimumCertificationLevel;
    doc.attestation = { conveyance: $("fido-conveyance").value, required: $("fido-att-required").checked,
      acceptNone: $("fido-accept-none").checked, acceptSelf: $("fido-accept-self").checked };
    const allowed = lines("fido-allowed");
    if (allowed.length) doc.allowedAAGUIDs = allowed; else delete doc.allowedAAGUIDs;
    doc.disallowedAAGUIDs = lines("fido-disallowed");
    doc.allowedAlgorithms = $("fido-algorithms").value.split(",").map((x) => x.trim()).filter(Boolean).map(Number);
    doc.autoCreatePasskey = $("fido-autocreate").checked;
    showFIDO(await call("PUT", `/tenants/${tenant()}/fido-policy`, doc));
    say("FIDO2 policy saved.");
  }));

  // ---- authentication settings as a form (the members it does not show are kept) ----

  // The password check's bearer token comes as "***" and goes back so: the service keeps the
  // stored token for the same verify URL, and refuses the redaction with a new one.
  const numericSettings = [["set-probation-after", "probationAfterFailures"], ["set-probation-seconds", "probationSeconds"],
    ["set-lock-after", "lockAfterFailures"], ["set-quick-window", "quickAuthWindowSeconds"], ["set-per-ip", "signInsPerMinutePerIP"],
    ["set-per-tenant", "signInsPerSecondPerTenant"], ["set-otp-lifetime", "otpLifetimeSeconds"]];
  let loadedSettings = null;
  function showSettings(doc) {
    loadedSettings = doc;
    for (const [id, name] of numericSettings) $(id).value = doc[name] ?? "";
    $("set-quick-enabled").checked = doc.quickAuthEnabled !== false;
    // Absent, the service's default (open only while the tenant has no ruleset): kept absent.
    $("set-direct-sign-in").value = typeof doc.directSignIn === "boolean" ? String(doc.directSignIn) : "";
    $("set-timezone").value = doc.timeZone || "";
    $("set-locations").value = JSON.stringify(doc.locations || {}, null, 2);
  }
  $("settings-load").addEventListener("click", act(async () => {
    showSettings(await call("GET", `/tenants/${tenant()}/authentication-settings`));
    say("Authentication settings loaded.");
  }));
  $("settings-form").addEventListener("submit", act(async () => {
    if (!loadedSettings) throw new Error("Load the authentication settings first.");
    const doc = { ...loadedSettings };
    for (const [id, name] of numericSettings) {
      const value = Number($(id).value);
      if (!Number.isInteger(value)) { $(id).focus(); throw new Error(`${$(id).labels[0].textContent} must be a whole number.`); }
      doc[name] = value;
    }
    doc.quickAuthEnabled = $("set-quick-enabled").checked;
    if ($("set-direct-sign-in").value === "") delete doc.directSignIn;
    else doc.directSignIn = $("set-direct-sign-in").value === "true";
    doc.timeZone = $("set-timezone").value.trim();
    try { doc.locations = JSON.parse($("set-locations").value || "{}"); } catch (error) { $("set-locations").focus(); throw new Error(`Location lists are not JSON: ${error.message}`); }
    showSettings(await call("PUT", `/tenants/${tenant()}/authentication-settings`, doc));
    say("Authentication settings saved.");
  }));

  // ---- the metadata's models, picked into the policy being edited ----

  // A FIDO2 model goes into the FIDO2 policy form's allowed models (once loaded), a
  // UAF model into the UAF policy's accepted criteria; the administrator then saves.
  function pickModel(m) {
    if (m.aaguid) {
      if (!loadedFIDO) throw new Error("Load the FIDO2 policy first.");
      $("fido-allowed").value = [...new Set([...lines("fido-allowed"), m.aaguid])].join("\n");
      say(`${m.name} added to the FIDO2 policy's allowed models; save to apply.`);
    } else if (m.aaid) {
      const doc = $("uaf-policy").value.trim() ? JSON.parse($("uaf-policy").value) : { accepted: [] };
      doc.accepted = [...(doc.accepted || []), [{ aaid: [m.aaid] }]];
      $("uaf-policy").value = JSON.stringify(doc, null, 2);
      checkUAFPolicy();
      say(`${m.name} added to the UAF policy's accepted authenticators; save to apply.`);
    } else {
      throw new Error("This model has neither an AAGUID nor an AAID.");
    }
  }

  let modelsNext = null;
  async function findModels(after) {
    const params = new URLSearchParams({ q: $("models-query").value });
    if (after) params.set("after", after);
    const page = await call("GET", `/metadata/models?${params}`);
    const body = $("models").querySelector("tbody");
    if (!after) body.replaceChildren();
    for (const m of page.models || []) {
      const row = document.createElement("tr");
      row.dataset.id = m.id;
      const icon = document.createElement("td");
      if (m.icon && m.icon.startsWith("data:image/")) {
        const img = document.createElement("img");
        img.src = m.icon;
        img.alt = "";
        img.width = 24;
        img.height = 24;
        icon.append(img);
      }
      row.append(icon);
      for (const value of [m.name, m.protocolFamily, m.certificationLevel || "not certified", `${m.status || "?"}${m.statusDate ? ` (${m.statusDate})` : ""}`, m.id]) {
        const cell = document.createElement("td");
        cell.textContent = value;
        row.append(cell);
      }
      const cell = document.createElement("td");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "needs-administrator-button";
      button.textContent = m.aaguid ? "Allow in the FIDO policy" : "Accept in the UAF policy";
      button.setAttribute("aria-label", `${button.textContent}: ${m.name}`);
      button.disabled = !session || session.role !== "administrator" || !(m.aaguid || m.aaid);
      button.addEventListener("click", act(async () => pickModel(m)));
      cell.append(button);
      row.append(cell);
      body.append(row);
    }
    modelsNext = page.next || null;
    $("models-more").hidden = !modelsNext;
    $("models").hidden = false;
    say(`${body.children.length} model(s) found${modelsNext ? "; more follow" : ""}.`);
  }
  $("models-form").addEventListener("submit", act(async () => findModels(null)));
  $("models-more").addEventListener("click", act(async () => findModels(modelsNext)));

  // ---- users and their passkeys ----

  const canOperate = () => session && (session.role === "operator" || session.role === "administrator");

  function showCredentials(username, list) {
    $("user-shown").textContent = username;
    const body = $("user-credentials").querySelector("tbody");
    body.replaceChildren();
    for (const c of list.credentials || []) {
      const row = document.createElement("tr");
      row.dataset.credentialId = c.credentialId;
      for (const value of [c.friendlyName || "(unnamed)", c.credentialId, c.status + (c.statusReason ? ` (${c.statusReason})` : ""), c.lastUsedAt || "never"]) {
        const cell = document.createElement("td");
        cell.textContent = value;
        row.append(cell);
      }
      const cell = document.createElement("td");
      const button = document.createElement("button");
      button.type = "button";
      const next = c.status === "suspended" ? "active" : "suspended";
      button.textContent = next === "suspended" ? "Suspend" : "Resume";
      button.setAttribute("aria-label", `${button.textContent} ${c.friendlyName || c.credentialId}`);
      button.disabled = !canOperate();
      button.addEventListener("click", act(async () => {
        await call("PATCH", `/tenants/${tenant()}/users/${encodeURIComponent(username)}/credentials/${encodeURIComponent(c.credentialId)}`, { status: next });
        showCredentials(username, await call("GET", `/tenants/${tenant()}/users/${encodeURIComponent(username)}/credentials`));
        say(`Passkey ${c.friendlyName || c.credentialId} ${next === "suspended" ? "suspended" : "resumed"}.`);
      }));
      cell.append(button);
      row.append(cell);
      body.append(row);
    }
    $("user-credentials").hidden = false;
  }

  $("unlock-form").addEventListener("submit", act(async () => {
    const username = $("user-name").value;
    const method = $("unlock-method").value.trim();
    await call("POST", `/tenants/${tenant()}/users/${encodeURIComponent(username)}/methods/${encodeURIComponent(method)}/unlock`);
    say(`${method} unlocked for ${username}.`);
  }));

  function fillTable(id, rows, key) {
    const body = $(id).querySelector("tbody");
    body.replaceChildren();
    for (const values of rows) {
      const row = document.createElement("tr");
      if (key) row.dataset.key = values[0];
      for (const value of values) {
        const cell = document.createElement("td");
        if (value instanceof Node) cell.append(value); else cell.textContent = value ?? "";
        row.append(cell);
      }
      body.append(row);
    }
    $(id).hidden = false;
    return body;
  }

  const userPath = (username) => `/tenants/${tenant()}/users/${encodeURIComponent(username)}`;

  async function openUser(username) {
    $("user-name").value = username;
    $("user-data-view").hidden = true;
    $("erasure-view").hidden = true;
    showCredentials(username, await call("GET", `${userPath(username)}/credentials`));
    const methods = await call("GET", `${userPath(username)}/methods`);
    fillTable("user-methods", (methods.methods || []).map((m) => [m.type, m.masked || "", m.status, m.methodId]), true);
    let devices = "";
    try {
      const list = await call("GET", `${userPath(username)}/devices`);
      fillTable("user-devices", (list.devices || []).map((d) => [d.deviceId, d.platform, d.model || "", d.active ? "yes" : "no", d.pushEnabled ? "yes" : "no"]), true);
      devices = `, ${(list.devices || []).length} device(s)`;
    } catch (error) {
      // The oob service learns the console's key of a new tenant by event: a moment later it answers.
      $("user-devices").hidden = true;
      devices = ", devices unavailable";
    }
    say(`User ${username}: ${$("user-credentials").querySelectorAll("tbody tr").length} passkey(s), ` +
      `${$("user-methods").querySelectorAll("tbody tr").length} method(s)${devices}.`);
  }

  $("user-form").addEventListener("submit", act(async () => openUser($("user-name").value)));

  let searchNext = null;
  async function search(after) {
    const params = new URLSearchParams({ prefix: $("user-prefix").value });
    if (after) params.set("after", after);
    const page = await call("GET", `/tenants/${tenant()}/users?${params}`);
    const list = $("user-results");
    if (!after) list.replaceChildren();
    for (const u of page.users || []) {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = u.username;
      button.dataset.username = u.username;
      button.setAttribute("aria-label", `Open user ${u.username}`);
      button.addEventListener("click", act(async () => openUser(u.username)));
      li.append(button, ` created ${u.createdAt}${u.passkeyOnly ? ", passkey only" : ""}`);
      list.append(li);
    }
    searchNext = page.next || null;
    $("user-search-more").hidden = !searchNext;
    say(`${list.children.length} user(s) found${searchNext ? "; more follow" : ""}.`);
  }
  $("user-search-form").addEventListener("submit", act(async () => search(null)));
  $("user-search-more").addEventListener("click", act(async () => search(searchNext)));

  // ---- a user's data: the data-rights fetch, sessions, erasure and its receipt ----

  function showUserData(username, doc) {
    const auth = (doc.parts || {}).authentication || {};
    const body = fillTable("user-sessions", (auth.sessions || []).map((x) => [x.sid, (x.amr || []).join(" "), x.createdAt, x.expiresAt, x.revokedAt || ""]), true);
    for (const row of body.children) {
      const session = (auth.sessions || []).find((x) => x.sid === row.dataset.key);
      const cell = document.createElement("td");
      if (session && !session.revokedAt) {
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = "Revoke";
        button.setAttribute("aria-label", `Revoke session ${session.sid}`);
        button.addEventListener("click", act(async () => {
          await call("DELETE", `/tenants/${tenant()}/sessions/${encodeURIComponent(session.sid)}`);
          showUserData(username, await call("GET", `${userPath(username)}/data`));
          say(`Session ${session.sid} revoked.`);
        }));
        cell.append(button);
      }
      row.append(cell);
    }
    fillTable("user-signins", (auth.signIns || []).slice(-20).reverse().map((x) =>
      [x.signinId, x.status, x.matchedRule || "", (x.completedMethods || []).join(" "), x.createdAt]), true);
    const parts = Object.keys(doc.parts || {}).sort();
    const missing = (doc.missing || []).map((m) => `${m.service} (${m.reason})`);
    $("user-data-summary").textContent = `Data of ${doc.username} generated ${doc.generatedAt}: parts ${parts.join(", ")}` +
      (missing.length ? `; missing ${missing.join(", ")}` : "") + ".";
    $("user-data-json").textContent = JSON.stringify(doc, null, 2);
    $("user-data-view").hidden = false;
  }

  $("user-data").addEventListener("click", act(async () => {
    const username = $("user-name").value;
    showUserData(username, await call("GET", `${userPath(username)}/data`));
    say(`Data of ${username} fetched.`);
  }));

  let erasureId = null;
  function showErasure(e) {
    $("erasure-id").textContent = e.erasureId;
    $("erasure-status").textContent = e.status;
    const list = $("erasure-parts");
    list.replaceChildren();
    for (const part of e.parts || []) {
      const li = document.createElement("li");
      const tallies = Object.entries(part.tallies || {}).map(([k, v]) => `${k} ${v}`).join(", ");
      li.textContent = `${part.service}: ${part.status}${tallies ? ` (${tallies})` : ""}`;
      list.append(li);
    }
    $("erasure-receipt").value = e.receipt || "";
    $("erasure-view").hidden = false;
  }
  $("user-erase").addEventListener("click", act(async () => {
    const username = $("user-name").value;
    if (!$("erase-confirm").checked) { $("erase-confirm").focus(); throw new Error("Tick the confirmation first."); }
    const started = await call("DELETE", userPath(username));
    $("erase-confirm").checked = false;
    erasureId = started.erasureId;
    $("erasure-check").hidden = false;
    showErasure({ erasureId, status: "PENDING", parts: [] });
    say(`Erasure of ${username} requested (${erasureId}).`);
  }));
  $("erasure-check").addEventListener("click", act(async () => {
    const e = await call("GET", `/tenants/${tenant()}/erasures/${encodeURIComponent(erasureId)}`);
    showErasure(e);
    say(`Erasure ${e.status === "COMPLETED" ? "completed; receipt shown" : "pending"}.`);
  }));

  // ---- the services' readiness ----

  $("services-check").addEventListener("click", act(async () => {
    // Readiness and version of each service; the event counters are the live feed's table.
    const list = await call("GET", "/services");
    const body = $("services").querySelector("tbody");
    body.replaceChildren();
    for (const s of list.services || []) {
      const row = document.createElement("tr");
      row.dataset.service = s.service;
      const checks = Object.entries(s.checks || {}).map(([k, v]) => `${k}: ${v}`).join(", ");
      for (const value of [s.service, s.ready ? "yes" : "no", s.status, checks, s.version || "unknown"]) {
        const cell = document.createElement("td");
        cell.textContent = value;
        row.append(cell);
      }
      body.append(row);
    }
    $("services").hidden = false;
    const down = (list.services || []).filter((s) => !s.ready).map((s) => s.service);
    say(down.length ? `Not ready: ${down.join(", ")}.` : "All services are ready.");
  }));

  // ---- the live feed (server-sent events) ----

  let feed = null;
  const counts = new Map();

  function showEvent(e) {
    counts.set(e.type, (counts.get(e.type) || 0) + 1);
    const li = document.createElement("li");
    li.dataset.type = e.type;
    li.textContent = `${e.time} ${e.type}${e.tenant ? ` (tenant ${e.tenant})` : ""}`;
    const list = $("events");
    list.prepend(li);
    while (list.children.length > 200) list.lastElementChild.remove();
    const body = $("event-counts").querySelector("tbody");
    body.replaceChildren();
    for (const [type, n] of [...counts.entries()].sort()) {
      const row = document.createElement("tr");
      const name = document.createElement("th");
      name.scope = "row";
      name.textContent = type;
      const value = document.createElement("td");
      value.textContent = String(n);
      row.append(name, value);
      body.append(row);
    }
  }

  function stopFeed() {
    if (feed) feed.close();
    feed = null;
    $("events-toggle").textContent = "Start the live feed";
    $("events-toggle").setAttribute("aria-pressed", "false");
    $("events-state").textContent = "stopped";
  }

  function startFeed() {
    // The backend answers each request with what is new and ends it; EventSource reconnects
    // with the last id it saw.
    feed = new EventSource(API + "/events");
    feed.addEventListener("signet", (message) => showEvent(JSON.parse(message.data)));
    feed.addEventListener("open", () => { $("events-state").textContent = "live"; });
    $("events-toggle").textContent = "Stop the live feed";
    $("events-toggle").setAttribute("aria-pressed", "true");
  }

  $("events-toggle").addEventListener("click", () => (feed ? stopFeed() : startFeed()));

  // An open session (a reload) is picked up; otherwise the sign-in is shown.
  call("GET", "/session").then(showSignedIn, showSignedOut);
})();

#!/usr/bin/env python3
"""Static checks of the files in deploy/ (needs only Python 3 and PyYAML).

    python3 deploy/check.py

No container engine or cluster is involved: this checks that the files parse and agree
with each other and with the code (topic names, ports, database names), not that they run.
Prints one line per failure and 'N passed, N failed' at the end; exits 1 on any failure.
"""
import glob
import os
import re
import subprocess
import sys

import yaml

DEPLOY = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DEPLOY)
SERVICES = {"registration": 8081, "authentication": 8082, "transaction": 8083, "oob": 8084, "pii": 8085}
# The peers each service calls on /v1/internal (their SIGNET_<PEER>_URL), checked in compose and
# the Kubernetes ConfigMap.
PEERS = {"oob": ["authentication", "registration"], "authentication": ["registration", "oob", "transaction"], "registration": ["authentication"]}
passed, failed = 0, 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


# 1. Every YAML file parses.
docs = {}
for path in sorted(glob.glob(os.path.join(DEPLOY, "**", "*.yaml"), recursive=True)):
    rel = os.path.relpath(path, DEPLOY)
    try:
        docs[rel] = load_all(path)
        check(True, rel)
    except yaml.YAMLError as e:
        check(False, f"{rel}: does not parse: {e}")

# 2. Topics expected by the code (Shared/Schema/Topics.swift), when the source is present.
expected_topics = {f"signet.{s}" for s in SERVICES} | {f"signet.{s}.dlq" for s in SERVICES}
# The other topics the code names (requests to oob, erasure tallies, the policy broadcast): each
# must be created by name in both topic scripts.
named_topics = set()
topics_swift = os.path.join(ROOT, "Shared", "Schema", "Topics.swift")
if os.path.exists(topics_swift):
    src = open(topics_swift).read()
    named_topics = set(re.findall(r'static let \w+ = "(signet\.[a-z]+\.[a-z.]+)"', src))
    check("signet.authentication.policy" in named_topics, f"Topics.swift named topics {sorted(named_topics)}")
    code_topics = set(re.findall(r'static let \w+ = "(signet\.[a-z]+)"', src))
    check(code_topics == {f"signet.{s}" for s in SERVICES}, f"Topics.swift event topics {code_topics}")
    check('"signet.\\(service.rawValue).dlq"' in src, "Topics.swift dead-letter naming changed")


def script_topics(script, loop_var="s"):
    """The topic names a create-topics script makes, from its service loop."""
    m = re.search(r"for " + loop_var + r" in ([a-z ]+); do", script)
    names = m.group(1).split() if m else []
    made = set()
    for n in names:
        if re.search(r'create "signet\.\$+' + loop_var + r'"', script):
            made.add(f"signet.{n}")
        if re.search(r'create "signet\.\$+' + loop_var + r'\.dlq"', script):
            made.add(f"signet.{n}.dlq")
    return made


def bash_syntax_ok(script):
    return subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True).returncode == 0


# 3. Kubernetes manifests.
k8s = {rel: ds for rel, ds in docs.items() if rel.startswith("kubernetes" + os.sep) and not rel.endswith("kustomization.yaml")}
objects = {}
for rel, ds in k8s.items():
    for d in ds:
        name = (d.get("metadata") or {}).get("name")
        check(bool(d.get("apiVersion")) and bool(d.get("kind")) and bool(name), f"{rel}: apiVersion/kind/metadata.name")
        if d.get("kind") != "Namespace":
            check(d["metadata"].get("namespace") == "signet", f"{rel}: {d.get('kind')}/{name} not in namespace signet")
        objects[(d.get("kind"), name)] = d

secret_keys = set(objects.get(("Secret", "signet-secrets"), {}).get("stringData", {}))
config_keys = set(objects.get(("ConfigMap", "signet-config"), {}).get("data", {}))
check(("Namespace", "signet") in objects, "Namespace signet")
check(bool(secret_keys) and bool(config_keys), "signet-secrets and signet-config exist")

kustom = docs.get(os.path.join("kubernetes", "kustomization.yaml"), [{}])[0]
for res in kustom.get("resources", []):
    check(os.path.exists(os.path.join(DEPLOY, "kubernetes", res)), f"kustomization resource {res} missing")
check("secrets.example.yaml" not in kustom.get("resources", []), "kustomization must not apply the example secrets")

for svc, port in SERVICES.items():
    dep = objects.get(("Deployment", svc))
    check(dep is not None, f"Deployment {svc}")
    if dep is None:
        continue
    spec = dep["spec"]
    labels = spec["template"]["metadata"]["labels"]
    check(spec["selector"]["matchLabels"].items() <= labels.items(), f"{svc}: selector does not match pod labels")
    pod = spec["template"]["spec"]
    check(pod.get("terminationGracePeriodSeconds") == 30, f"{svc}: terminationGracePeriodSeconds")
    check(pod.get("securityContext", {}).get("runAsNonRoot") is True, f"{svc}: pod runAsNonRoot")
    (c,) = pod["containers"]
    env = {e["name"]: e for e in c.get("env", [])}
    check(env.get("SIGNET_HTTP_PORT", {}).get("value") == str(port), f"{svc}: SIGNET_HTTP_PORT")
    check(c["ports"][0]["containerPort"] == port and c["ports"][0]["name"] == "http", f"{svc}: containerPort")
    check(c["readinessProbe"]["httpGet"]["path"] == "/readyz", f"{svc}: readiness /readyz")
    check(c["livenessProbe"]["httpGet"]["path"] == "/healthz", f"{svc}: liveness /healthz")
    check(c["lifecycle"]["preStop"]["exec"]["command"] == ["/bin/sleep", "5"], f"{svc}: preStop sleep 5")
    sc = c.get("securityContext", {})
    check(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
          and sc.get("capabilities", {}).get("drop") == ["ALL"], f"{svc}: container securityContext")
    check({"cpu", "memory"} <= set(c["resources"]["requests"]) and "memory" in c["resources"]["limits"], f"{svc}: resources")
    check([r["configMapRef"]["name"] for r in c.get("envFrom", [])] == ["signet-config"], f"{svc}: envFrom signet-config")
    for e in env.values():
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if ref:
            check(ref["name"] == "signet-secrets" and ref["key"] in secret_keys, f"{svc}: secret key {ref['key']} not in example")
    check({"SIGNET_ADMIN_TOKEN", "SIGNET_INTERNAL_TOKEN"} <= set(env), f"{svc}: admin and internal tokens from the Secret")
    grace = int(config_keys and objects[("ConfigMap", "signet-config")]["data"]["SIGNET_SHUTDOWN_GRACE_SECONDS"])
    check(5 + grace + 5 < pod["terminationGracePeriodSeconds"], f"{svc}: preStop + shutdown grace + flush must fit")
    sv = objects.get(("Service", svc), {}).get("spec", {})
    check(sv.get("selector") == spec["selector"]["matchLabels"], f"{svc}: Service selector")
    check(sv.get("ports", [{}])[0].get("targetPort") == "http", f"{svc}: Service targetPort")
    pdb = objects.get(("PodDisruptionBudget", svc), {}).get("spec", {})
    check(pdb.get("selector", {}).get("matchLabels") == spec["selector"]["matchLabels"], f"{svc}: PDB selector")
    hpa = objects.get(("HorizontalPodAutoscaler", svc), {}).get("spec", {})
    check(hpa.get("scaleTargetRef", {}).get("name") == svc and hpa.get("minReplicas", 0) >= 2, f"{svc}: HPA")

job = objects.get(("Job", "signet-kafka-topics"))
check(job is not None, "Job signet-kafka-topics")
if job:
    jc = job["spec"]["template"]["spec"]["containers"][0]
    script = jc["command"][-1]
    check(bash_syntax_ok(script), "topics Job script: bash -n")
    check(script_topics(script) == expected_topics, f"topics Job creates {sorted(script_topics(script))}")
    for t in sorted(named_topics):
        check(f'create "{t}"' in script, f"topics Job creates {t}")
    check("$(" not in script, "topics Job script: Kubernetes would expand $(...)")
    bootstrap = [e for e in jc["env"] if e["name"] == "BOOTSTRAP"][0]["valueFrom"]["configMapKeyRef"]
    check(bootstrap["key"] in config_keys, "topics Job: bootstrap key in signet-config")

# 4. Compose file, interpolated with env.example as compose would.
env_example = {}
for line in open(os.path.join(DEPLOY, "env.example")):
    if "=" in line and not line.lstrip().startswith("#"):
        k, v = line.rstrip("\n").split("=", 1)
        env_example[k.strip()] = v


def interpolate(text, env):
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name, op, arg = m.group(1), m.group(2), m.group(3)
        val = env.get(name)
        if op == ":?" and not val:
            raise KeyError(f"{name} required: {arg}")
        if op == ":-" and not val:
            return arg
        return val or ""
    return re.sub(r"\$\$|\$\{([A-Z0-9_]+)(?:(:[-?])([^}]*))?\}", sub, text)


raw = open(os.path.join(DEPLOY, "compose.yaml")).read()
try:
    compose = yaml.safe_load(interpolate(raw, env_example))
    check(True, "compose interpolation")
except KeyError as e:
    compose = None
    check(False, f"compose interpolation: {e}")
try:
    interpolate(raw, {})
    check(False, "compose must refuse to start without the secrets")
except KeyError:
    check(True, "compose requires secrets")

if compose:
    svcs = compose["services"]
    nets, vols = set(compose.get("networks", {})), set(compose.get("volumes", {}))
    for name, s in svcs.items():
        deps = s.get("depends_on", [])
        for dep in deps:
            check(dep in svcs, f"compose {name}: depends_on {dep}")
        for n in s.get("networks", []):
            check(n in nets, f"compose {name}: network {n}")
        for v in s.get("volumes", []):
            src = v.split(":")[0]
            if src.startswith("."):
                check(os.path.exists(os.path.join(DEPLOY, src)), f"compose {name}: {src} missing")
            else:
                check(src in vols, f"compose {name}: volume {src}")
    for svc, port in SERVICES.items():
        s = svcs.get(svc, {})
        args = s.get("build", {}).get("args", {})
        check(args.get("SERVICE") == f"signet-{svc}" and args.get("HTTP_PORT") == str(port), f"compose {svc}: build args")
        e = s.get("environment", {})
        check(e.get("SIGNET_HTTP_PORT") == str(port) and e.get("SIGNET_HTTP_HOST") == "0.0.0.0", f"compose {svc}: port/host")
        check(f"@postgres:5432/signet_{svc}?" in e.get("SIGNET_DATABASE_URL", "") and f"//signet_{svc}:" in e["SIGNET_DATABASE_URL"],
              f"compose {svc}: database URL")
        check({"SIGNET_ADMIN_TOKEN", "SIGNET_INTERNAL_TOKEN"} <= set(e), f"compose {svc}: admin and internal tokens")
        check(s.get("build", {}).get("dockerfile") == "deploy/Containerfile"
              and os.path.normpath(os.path.join(DEPLOY, s["build"]["context"])) == ROOT, f"compose {svc}: build context")
        check(s.get("read_only") is True and s.get("cap_drop") == ["ALL"], f"compose {svc}: hardening")
    # Internal calls a service makes reach their peer's compose host and port (QR registration:
    # oob asks authentication for the phone's token and registration for its credential).
    for svc, peers in PEERS.items():
        e = svcs.get(svc, {}).get("environment", {})
        for peer in peers:
            var = f"SIGNET_{peer.upper()}_URL"
            check(e.get(var) == f"http://{peer}:{SERVICES[peer]}", f"compose {svc}: {var} is http://{peer}:{SERVICES[peer]}")
    hc = svcs["registration"]["healthcheck"]["test"]
    check(hc[:3] == ["CMD", "bash", "-c"] and bash_syntax_ok(hc[3]) and "${SIGNET_HTTP_PORT}" in hc[3], "compose healthcheck")
    topics_script = svcs["kafka-topics"]["command"][0]
    check(bash_syntax_ok(topics_script), "compose kafka-topics script: bash -n")
    check(script_topics(topics_script) == expected_topics, f"compose kafka-topics creates {sorted(script_topics(topics_script))}")
    for t in sorted(named_topics):
        check(f'create "{t}"' in topics_script, f"compose kafka-topics creates {t}")
    check(svcs["kafka"]["image"] == svcs["kafka-topics"]["image"] == job["spec"]["template"]["spec"]["containers"][0]["image"],
          "one Kafka image everywhere")

# 5. Gateway routes = compose services and ports, prefix stripped.
conf = open(os.path.join(DEPLOY, "nginx", "gateway.conf")).read()
for svc, port in SERVICES.items():
    block = re.search(r"location /" + svc + r"/ \{(.*?)\}", conf, re.S)
    check(block is not None, f"gateway: location /{svc}/")
    if block:
        body = block.group(1)
        check(f"set $signet_upstream {svc}:{port};" in body, f"gateway: /{svc}/ upstream {svc}:{port}")
        check(f"rewrite ^/{svc}(/.*)$ $1 break;" in body, f"gateway: /{svc}/ strips its prefix")
# App association files: at the domain's root, to the oob service with the path kept (the
# Host tells it the tenant), in both gateways.
for name in ("apple-app-site-association", "assetlinks.json"):
    block = re.search(r"location = /\.well-known/" + re.escape(name) + r" \{(.*?)\}", conf, re.S)
    check(block is not None and "set $signet_upstream oob:8084;" in block.group(1) and "rewrite" not in block.group(1),
          f"gateway: /.well-known/{name} to oob:8084, path kept")
check("client_max_body_size 64k;" in conf, "gateway: client_max_body_size 64k")
# Routes whose bodies carry PNG images: each gateway lets through the service's exact bound
# (64 KiB + images × base64url of a 32 KiB PNG), computed from the Swift constants.
def swift_int(path, name):
    text = open(os.path.join(ROOT, *path.split("/"))).read()
    m = re.search(r"static let " + name + r" = ([0-9 *]+)\n", text)
    return eval(m.group(1)) if m else None  # a product of integer literals only
png = swift_int("Shared/Schema/TransactionAPI.swift", "maximumBytes")
images = swift_int("Shared/Schema/TransactionAPI.swift", "maximumImages")
forms = swift_int("Services/Authentication/UAFTransactionContents.swift", "maximumForms")
check(None not in (png, images, forms), "gateway: image body constants found in the Swift source")
if None not in (png, images, forms):
    encoded = (png * 4 + 2) // 3
    bounds = {"transaction": 64 * 1024 + images * encoded, "uaf": 64 * 1024 + forms * encoded}
    local = open(os.path.join(DEPLOY, "local", "gateway.conf.in")).read()
    for name, text in (("deploy", conf), ("local", local)):
        tx = re.search(r"location /transaction/ \{[^}]*?client_max_body_size (\d+)k;", text, re.S)
        uaf = re.search(r"location ~ \^/authentication/v1/tenants/\[\^/\]\+/uaf/authentications/requests\$ \{[^}]*?client_max_body_size (\d+)k;", text, re.S)
        check(tx is not None and int(tx.group(1)) * 1024 >= bounds["transaction"], f"{name} gateway: /transaction/ takes {bounds['transaction']} bytes")
        check(uaf is not None and int(uaf.group(1)) * 1024 >= bounds["uaf"], f"{name} gateway: UAF authentication requests take {bounds['uaf']} bytes")
check("$request_body" not in conf, "gateway: request bodies never logged")

# 6. Databases created by the init script.
sql = open(os.path.join(DEPLOY, "postgres", "init-databases.sql")).read()
for svc in SERVICES:
    check(f"CREATE DATABASE signet_{svc} OWNER signet_{svc}" in sql, f"init SQL: database signet_{svc}")
    check(f"REVOKE ALL ON DATABASE signet_{svc} FROM PUBLIC;" in sql, f"init SQL: signet_{svc} closed to PUBLIC")

# 7. What the code requires, set everywhere it runs (parsed from the Swift source).
config_swift = open(os.path.join(ROOT, "Shared", "ServiceKit", "ServiceConfiguration.swift")).read()
required = {}
for svc, names in re.findall(r"case \.(\w+): \[([^\]]*)\]", config_swift[config_swift.index("func requiredSecrets"):]):
    required[svc] = re.findall(r'"(SIGNET_[A-Z0-9_]+)"', names)
check(set(required) == set(SERVICES), f"requiredSecrets covers every service: {sorted(required)}")
file_vars = set(re.findall(r'"(SIGNET_[A-Z0-9_]+)"', open(os.path.join(ROOT, "Shared", "Platform", "Environment.swift")).read()))
for svc in SERVICES:
    needs = required.get(svc, []) + ["SIGNET_ADMIN_TOKEN", "SIGNET_INTERNAL_TOKEN"]
    dep = objects.get(("Deployment", svc))
    if dep:
        (c,) = dep["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e for e in c.get("env", [])}
        mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"].get("volumes", [])}
        for var in needs:
            direct = var in env or var in config_keys
            via_file = var + "_FILE" in env and var in file_vars
            check(direct or via_file, f"k8s {svc}: {var} is not set (env, ConfigMap or {var}_FILE)")
            # A file variable must name a file of a mounted Secret volume whose key exists.
            path_var = var if var.endswith("_FILE") else var + "_FILE"
            if path_var in env and "value" in env[path_var]:
                folder, name = os.path.split(env[path_var]["value"])
                vol = volumes.get(mounts.get(folder, ""), {}).get("secret", {})
                items = {i["path"]: i["key"] for i in vol.get("items", [])}
                check(vol.get("secretName") == "signet-secrets" and items.get(name) in secret_keys,
                      f"k8s {svc}: {path_var} names {env[path_var]['value']}, not a key of signet-secrets mounted there")
    s = (compose or {}).get("services", {}).get(svc, {}) if compose else {}
    e = s.get("environment", {})
    for var in needs:
        check(var in e or var + "_FILE" in e, f"compose {svc}: {var} is not set")
# Tracing export: the variables the exporter reads are parsed from the Swift source; the
# endpoint is wired (empty, i.e. off, by default) in compose, the ConfigMap and env.example.
otlp_swift = open(os.path.join(ROOT, "Shared", "ServiceKit", "OTLPExporter.swift")).read()
otlp_vars = set(re.findall(r'"(SIGNET_OTLP_[A-Z0-9_]+)"', otlp_swift))
check("SIGNET_OTLP_ENDPOINT" in otlp_vars, f"the OTLP exporter reads SIGNET_OTLP_ENDPOINT: {sorted(otlp_vars)}")
check("SIGNET_OTLP_ENDPOINT" in config_keys, "k8s: SIGNET_OTLP_ENDPOINT is in the ConfigMap")
config_data = objects.get(("ConfigMap", "signet-config"), {}).get("data", {})
for peer in sorted({p for peers in PEERS.values() for p in peers}):
    var = f"SIGNET_{peer.upper()}_URL"
    check(config_data.get(var) == f"http://{peer}.signet.svc.cluster.local:{SERVICES[peer]}", f"k8s: {var} in the ConfigMap")
check("SIGNET_OTLP_ENDPOINT" in env_example, "env.example lists SIGNET_OTLP_ENDPOINT")
# FIDO metadata: the production templates download the BLOB over https (the registration service
# refuses any other scheme); compose passes it to registration, empty when unset.
check(str(config_data.get("SIGNET_MDS_BLOB_URL", "")).startswith("https://"), "k8s: SIGNET_MDS_BLOB_URL (https) is in the ConfigMap")
check(str(env_example.get("SIGNET_MDS_BLOB_URL", "")).startswith("https://"), "env.example sets SIGNET_MDS_BLOB_URL (https)")
mds_env = ((compose or {}).get("services", {}).get("registration", {}) or {}).get("environment", {})
check("SIGNET_MDS_BLOB_URL" in mds_env, "compose registration: SIGNET_MDS_BLOB_URL is wired")
for svc in SERVICES:
    e = ((compose or {}).get("services", {}).get(svc, {}) or {}).get("environment", {})
    check("SIGNET_OTLP_ENDPOINT" in e, f"compose {svc}: SIGNET_OTLP_ENDPOINT is wired")
# Every variable compose interpolates is documented in env.example (the optional ones too).
for var in sorted(set(re.findall(r"(?<!\$)\$\{([A-Z0-9_]+)", raw))):
    check(var in env_example, f"env.example lacks {var} (used by compose.yaml)")
# Probe paths exist on every service (the shared health routes).
health = open(os.path.join(ROOT, "Shared", "ServiceKit", "HealthRoutes.swift")).read()
# (`router.get` for a route whose handler may wait, `router.getOpen(…, immediate:)` for one that
# answers at once.)
for path in ("/healthz", "/readyz"):
    check(f'router.get("{path}"' in health or f'router.getOpen("{path}", immediate:' in health,
          f"probe path {path} is not served (HealthRoutes.swift)")
# PodDisruptionBudgets and HPAs target Deployments that exist, and select their pods.
for (kind, name), d in objects.items():
    if kind == "HorizontalPodAutoscaler":
        ref = d["spec"]["scaleTargetRef"]
        check(ref.get("kind") == "Deployment" and ("Deployment", ref.get("name")) in objects, f"HPA {name} targets a missing Deployment")
    if kind == "PodDisruptionBudget":
        sel = d["spec"].get("selector", {}).get("matchLabels", {"": "none"})
        check(any(sel.items() <= dd["spec"]["template"]["metadata"]["labels"].items()
                  for (k, _), dd in objects.items() if k == "Deployment"), f"PDB {name} selects no Deployment's pods")
    if kind == "Deployment":
        for c in d["spec"]["template"]["spec"]["containers"]:
            res = c.get("resources", {})
            check({"cpu", "memory"} <= set(res.get("requests", {})) and {"cpu", "memory"} <= set(res.get("limits", {})),
                  f"Deployment {name}: requests and limits for cpu and memory")

# 7b. The admin console (signet-console): not one of the five services (no database, no
# topics), wired like them: image, compose service, Kubernetes Deployment and Service,
# gateway location (path kept), and the secrets its configuration requires.
CONSOLE_PORT = 8086
console_swift = os.path.join(ROOT, "Services", "Console", "ConsoleService.swift")
check(os.path.exists(console_swift) and f"defaultPort = {CONSOLE_PORT}" in open(console_swift).read(), "console: default port 8086")
console_needs = ["SIGNET_ADMIN_TOKEN", "SIGNET_CONSOLE_RP_API_KEY"]
if os.path.exists(console_swift):
    src = open(console_swift).read()
    for var in console_needs + ["SIGNET_CONSOLE_OPERATORS", "SIGNET_CONSOLE_ORIGIN", "SIGNET_CONSOLE_ENROLMENT_CODE", "SIGNET_REGISTRATION_URL"]:
        check(f'"{var}"' in src, f"console: {var} not read by ConsoleService.swift")
for var in ["SIGNET_CONSOLE_RP_API_KEY", "SIGNET_CONSOLE_ENROLMENT_CODE"]:
    check(var in file_vars, f"console: {var} may come from a file (Environment.fileVariables)")
dep = objects.get(("Deployment", "console"))
check(dep is not None, "Deployment console")
if dep:
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    env = {e["name"]: e for e in c.get("env", [])}
    check(env.get("SIGNET_HTTP_PORT", {}).get("value") == str(CONSOLE_PORT), "console: SIGNET_HTTP_PORT")
    check(c["ports"][0]["containerPort"] == CONSOLE_PORT and c["ports"][0]["name"] == "http", "console: containerPort")
    check(c["readinessProbe"]["httpGet"]["path"] == "/readyz" and c["livenessProbe"]["httpGet"]["path"] == "/healthz", "console: probes")
    check(pod.get("securityContext", {}).get("runAsNonRoot") is True, "console: pod runAsNonRoot")
    sc = c.get("securityContext", {})
    check(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
          and sc.get("capabilities", {}).get("drop") == ["ALL"], "console: container securityContext")
    check(dep["spec"].get("replicas") == 1 and ("HorizontalPodAutoscaler", "console") not in objects,
          "console: one replica (sessions live in the process), no HPA")
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for var in console_needs:
        ok = var in env or var in config_keys or var + "_FILE" in env
        check(ok, f"k8s console: {var} is not set")
        if var + "_FILE" in env:
            folder, name = os.path.split(env[var + "_FILE"]["value"])
            vol = volumes.get(mounts.get(folder, ""), {}).get("secret", {})
            items = {i["path"]: i["key"] for i in vol.get("items", [])}
            check(vol.get("secretName") == "signet-secrets" and items.get(name) in secret_keys, f"k8s console: {var}_FILE not a mounted key of signet-secrets")
    for e in env.values():
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if ref:
            check(ref["name"] == "signet-secrets" and ref["key"] in secret_keys, f"console: secret key {ref['key']} not in example")
    sv = objects.get(("Service", "console"), {}).get("spec", {})
    check(sv.get("selector") == dep["spec"]["selector"]["matchLabels"] and sv.get("ports", [{}])[0].get("port") == CONSOLE_PORT, "console: Service")
if compose:
    s = compose["services"].get("console", {})
    args = s.get("build", {}).get("args", {})
    check(args.get("SERVICE") == "signet-console" and args.get("HTTP_PORT") == str(CONSOLE_PORT), "compose console: build args")
    e = s.get("environment", {})
    check(e.get("SIGNET_HTTP_PORT") == str(CONSOLE_PORT) and e.get("SIGNET_HTTP_HOST") == "0.0.0.0", "compose console: port/host")
    for var in console_needs + ["SIGNET_CONSOLE_OPERATORS"]:
        check(var in e or var + "_FILE" in e, f"compose console: {var} is not set")
    check(s.get("read_only") is True and s.get("cap_drop") == ["ALL"], "compose console: hardening")
    check("console" in compose["services"]["gateway"].get("depends_on", []), "compose gateway: depends on the console")
block = re.search(r"location /console/ \{(.*?)\}", conf, re.S)
check(block is not None and f"set $signet_upstream console:{CONSOLE_PORT};" in block.group(1) and "rewrite" not in block.group(1),
      "gateway: /console/ to console:8086, path kept")
local_conf = open(os.path.join(DEPLOY, "local", "gateway.conf.in")).read()
check(f"upstream console {{ server 127.0.0.1:{CONSOLE_PORT};" in local_conf and "location /console/ { proxy_pass http://console; }" in local_conf,
      "local gateway: /console/ to 127.0.0.1:8086")
for name in ("apple-app-site-association", "assetlinks.json"):
    check(f"location = /.well-known/{name} {{ proxy_pass http://oob; }}" in local_conf, f"local gateway: /.well-known/{name} to oob")
for f in ["Containerfile", os.path.join("local", "Containerfile.service")]:
    text = open(os.path.join(DEPLOY, f)).read()
    check("SIGNET_CONSOLE_ASSETS_DIR=/usr/local/share/signet/console" in text, f"{f}: the console's assets and SIGNET_CONSOLE_ASSETS_DIR")

# 8. The manifests against the Kubernetes API schemas (kubernetes-validate, offline), strict:
# unknown fields fail, and so does an API version that is removed in a checked release or
# deprecated (a newer version of the same group serves the kind), which the tool itself only
# warns about.
try:
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError
except ImportError:
    kubernetes_validate = None
    print("kubernetes-validate is not installed (pip install -r Tests/contract/requirements.txt)")
    check(not os.environ.get("CI"), "kubernetes-validate is required under CI")
if kubernetes_validate:
    K8S_VERSIONS = ["1.29.0", kubernetes_validate.utils.latest_version()]
    schema_root = os.path.join(os.path.dirname(kubernetes_validate.__file__), "kubernetes-json-schema")
    latest_dir = os.path.join(schema_root, f"v{K8S_VERSIONS[-1]}-local-strict")
    schema_files = set(os.listdir(latest_dir))

    def api_rank(version):
        m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
        return (int(m.group(1)), {"alpha": 0, "beta": 1, None: 2}[m.group(2)], int(m.group(3) or 0)) if m else (0, 0, 0)

    for rel, ds in docs.items():
        if not rel.startswith("kubernetes" + os.sep) or rel.endswith("kustomization.yaml"):
            continue
        for d in ds:
            what = f"{rel}: {d.get('kind')}/{d.get('metadata', {}).get('name')} ({d.get('apiVersion')})"
            for version in K8S_VERSIONS:
                try:
                    kubernetes_validate.validate(d, version, strict=True)
                    check(True, what)
                except SchemaNotFoundError:
                    check(False, f"{what}: no such API version in Kubernetes {version}")
                except ValidationError as e:
                    check(False, f"{what}: invalid for Kubernetes {version}: {e.message}")
            group, _, version = d["apiVersion"].rpartition("/")
            group = re.sub(r"\..*", "", group) or "core"
            newer = [f for f in schema_files if re.fullmatch(rf"{d['kind'].lower()}-{group}-(v\w+)\.json", f)
                     and api_rank(f.rsplit("-", 1)[1][:-5]) > api_rank(version)]
            check(not newer, f"{what}: deprecated, a newer API version exists: {sorted(newer)}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)

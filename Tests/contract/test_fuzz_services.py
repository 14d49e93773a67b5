"""Schema-driven fuzzing of every service against its own OpenAPI document (schemathesis).

Every operation of schemas/openapi/<service>.yaml is called on the service itself
(http://127.0.0.1:8081 … 8085, not the gateway, so that the internal routes are reached too)
with generated requests, valid ones and invalid ones, and every answer is checked:

- its status is one the operation documents (the documents have no `default` response);
- its Content-Type is one documented for that status;
- its body validates against the documented schema (problem codes included: each status lists
  the codes it may carry);
- documented response headers are present and well-formed;
- it is not a 5xx, except a 503 that the operation documents (timeouts, a database or a peer
  that is unavailable): a 500 is a bug even though every route may answer it.

Credentials are supplied as a relying party would: the admin token (`SIGNET_ADMIN_TOKEN`), the
internal token (`SIGNET_INTERNAL_TOKEN`) and an RP API key. Reads go to the `demo` tenant with its
key (`SIGNET_DEMO_RP_API_KEY`); everything that writes goes to a tenant of this suite's own
(`fuzz-contract`, created here with a key of its own), so that the suites that run after this one
find `demo` as the stack seeded it: no user locked, no key revoked, no ruleset changed. Some
generated tenant ids are kept as generated, so unknown tenants (404) and malformed ids (400) are
exercised too.

Bounded for CI: `SIGNET_FUZZ_MAX_EXAMPLES` (default 60) generated cases per operation and
generation mode beside schemathesis's deterministic coverage cases, derandomised with a fixed
seed (`SIGNET_FUZZ_SEED`, default 20240807), no example database, a request timeout of 15 s.

Runs against the stack that `scripts/stack.sh test` starts (SIGNET_TEST_STACK=1); where no stack
answers it fails under CI and SIGNET_TEST_STACK=1, and is skipped, saying so, elsewhere.
"""

from __future__ import annotations

import os
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest
import requests
import schemathesis
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

ROOT = Path(__file__).resolve().parents[2]
OPENAPI_DIR = ROOT / "schemas" / "openapi"
SERVICES = {"registration": 8081, "authentication": 8082, "transaction": 8083, "oob": 8084, "pii": 8085}

ADMIN_TOKEN = os.environ.get("SIGNET_ADMIN_TOKEN", "dev-admin-token")
DEMO_TENANT = "demo"
DEMO_KEY = os.environ.get("SIGNET_DEMO_RP_API_KEY", "dev-demo-rp-key")
# One shared token when the stack was given SIGNET_INTERNAL_TOKEN; else the local stack's
# token of each service (scripts/stack.sh start_services): the one of the caller the case names.
INTERNAL_TOKEN = os.environ.get("SIGNET_INTERNAL_TOKEN")


def internal_token(caller):
    return INTERNAL_TOKEN or f"dev-internal-token-{caller or 'oob'}"
FUZZ_TENANT = "fuzz-contract"
FUZZ_KEY_ID = "k_f022c0de0000f022"
FUZZ_KEY = "fuzz-contract-rp-key-0123456789abcdef"

MAX_EXAMPLES = int(os.environ.get("SIGNET_FUZZ_MAX_EXAMPLES", "60"))
SEED = int(os.environ.get("SIGNET_FUZZ_SEED", "20240807"))
COVERAGE = os.environ.get("SIGNET_FUZZ_COVERAGE", "0") == "1"
REQUEST_TIMEOUT = 15
# What was sent and answered, written to $SIGNET_DATA_DIR/logs/contract-fuzz.log (or .data/logs).
TALLY: Counter = Counter()
LOG = Path(os.environ.get("SIGNET_DATA_DIR", ROOT / ".data")) / "logs" / "contract-fuzz.log"


def _base_url(service: str) -> str:
    return f"http://127.0.0.1:{SERVICES[service]}"


def _stack_required() -> bool:
    return os.environ.get("SIGNET_TEST_STACK") == "1" or bool(os.environ.get("CI"))


# MARK: - The stack and the fuzz tenant


def _wait(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if predicate():
                return
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {seconds:.0f} s")
        time.sleep(0.2)


def _write_tally() -> None:
    if not TALLY:
        return
    LOG.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{count:6d}  {label}  {status}" for (label, status), count in sorted(TALLY.items())]
    LOG.write_text(f"{sum(TALLY.values())} requests, {len({l for l, _ in TALLY})} operations\n" + "\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def fuzz_tenant():
    """Creates the suite's own tenant and RP API key and waits until every service knows both."""
    try:
        for service in SERVICES:
            requests.get(f"{_base_url(service)}/healthz", timeout=2).raise_for_status()
    except requests.RequestException as error:
        message = f"no Signet stack on 127.0.0.1:8081-8085 ({error.__class__.__name__}); start one with scripts/stack.sh up debug"
        if _stack_required():
            pytest.fail(message)
        pytest.skip(message)
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
    registration = _base_url("registration")
    r = requests.put(
        f"{registration}/v1/admin/tenants/{FUZZ_TENANT}",
        json={"displayName": "Contract fuzzing", "rpId": "fuzz.example", "origins": ["https://fuzz.example"]},
        headers=admin, timeout=REQUEST_TIMEOUT)
    assert r.status_code in (200, 201), r.text
    r = requests.put(
        f"{registration}/v1/admin/tenants/{FUZZ_TENANT}/api-keys/{FUZZ_KEY_ID}",
        json={"apiKey": FUZZ_KEY}, headers=admin, timeout=REQUEST_TIMEOUT)
    assert r.status_code in (200, 201), r.text
    for service in SERVICES:
        _wait(lambda: requests.get(f"{_base_url(service)}/v1/tenants/{FUZZ_TENANT}", timeout=2).status_code == 200,
              30, f"{service} did not learn of tenant {FUZZ_TENANT}")
    # The key travels in its own event; the transaction service checks keys itself.
    _wait(lambda: requests.get(
        f"{_base_url('transaction')}/v1/tenants/{FUZZ_TENANT}/transactions/00000000-0000-4000-8000-000000000000",
        headers={"Authorization": f"Bearer {FUZZ_KEY}"}, timeout=2).status_code == 404,
        30, f"the transaction service did not learn of {FUZZ_TENANT}'s API key")
    yield FUZZ_TENANT
    _write_tally()


# MARK: - Requests as a relying party sends them


def _keep_generated_tenant(tenant: str) -> bool:
    """About one valid generated tenant id in six is kept (unknown tenants: 404, no key: 401)."""
    return zlib.crc32(tenant.encode("utf-8", "surrogatepass")) % 6 == 0


def _is_tenant_id(value: object) -> bool:
    return (isinstance(value, str) and 0 < len(value) <= 63 and value[0] != "-"
            and all(c in "abcdefghijklmnopqrstuvwxyz0123456789-" for c in value))


def _prepare(case) -> None:
    """Points the case at the demo tenant (reads) or the fuzz tenant (writes) and adds credentials."""
    path_parameters = case.path_parameters if case.path_parameters is not None else {}
    reads = case.method.upper() == "GET"
    tenant = path_parameters.get("tenant")
    if tenant is not None and _is_tenant_id(tenant):
        if tenant == DEMO_TENANT and not reads:
            path_parameters["tenant"] = FUZZ_TENANT
        elif not _keep_generated_tenant(tenant):
            path_parameters["tenant"] = DEMO_TENANT if reads else FUZZ_TENANT
    tenant = path_parameters.get("tenant")
    schemes = [name for requirement in case.operation.definition.raw.get("security", []) for name in requirement]
    headers = dict(case.headers or {})
    if "internalToken" in schemes:
        headers["Authorization"] = f"Bearer {internal_token(headers.get('X-Signet-Service'))}"
    elif "adminToken" in schemes and "rpApiKey" not in schemes:
        headers["Authorization"] = f"Bearer {ADMIN_TOKEN}"
    elif "rpApiKey" in schemes:
        headers["Authorization"] = f"Bearer {DEMO_KEY if tenant == DEMO_TENANT else FUZZ_KEY}"
    case.headers = headers


# MARK: - Checks


def not_an_undocumented_server_error(ctx, response, case) -> bool | None:
    """A 5xx conforms only where the operation documents it (503s); never a 500."""
    if response.status_code >= 500 and (
        response.status_code == 500 or str(response.status_code) not in case.operation.definition.raw.get("responses", {})
    ):
        raise AssertionError(
            f"{case.operation.label}: server error {response.status_code}: {response.text[:500]}")
    return None


CHECKS = [
    not_an_undocumented_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


# MARK: - One test per service, one case per operation


def _schema(service: str):
    config = schemathesis.Config.from_dict({
        "seed": SEED,
        "request-timeout": REQUEST_TIMEOUT,
        "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none", "mode": "all"},
        "phases": {"coverage": {"enabled": COVERAGE}, "stateful": {"enabled": False}},
    })
    schema = schemathesis.openapi.from_path(OPENAPI_DIR / f"{service}.yaml", config=config)
    schema.config.update(base_url=_base_url(service))
    return schema


def _fuzz_test(service: str):
    schema = _schema(service)

    @schema.parametrize()
    def test(case, fuzz_tenant) -> None:
        _prepare(case)
        response = case.call(timeout=REQUEST_TIMEOUT)
        TALLY[(f"{service} {case.operation.label}", response.status_code)] += 1
        case.validate_response(response, checks=CHECKS)

    test.__name__ = f"test_fuzz_{service}"
    return test


for _service in SERVICES:
    globals()[f"test_fuzz_{_service}"] = _fuzz_test(_service)

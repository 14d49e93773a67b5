"""Package.swift declares exactly what each Swift target imports, and no module imports above
its layer.

- Every `import X` of a target's sources, where X is a target of this package, is one of the
  target's declared dependencies (SwiftPM lets a target import what only reaches it
  transitively; this test does not).
- Every declared dependency of a library target is imported by it (nothing declared for
  nothing).
- Layers, lowest first: a module may import only modules of a lower layer (C modules and their
  shims are the lowest). Services and tools sit above every shared library; nothing shared
  imports a service.

Run: python3 -m pytest Tests/contract/test_package_layers.py
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Shared libraries by layer; a module may import modules of lower layers only.
LAYERS: list[set[str]] = [
    {"JSON"},
    {"Platform", "TestRandom", "IdentityDocuments"},
    {"Crypto", "QRCode", "Delivery"},
    {"Schema", "Tokens", "OTP", "Postgres", "Kafka", "HTTPServer"},
    {"FIDO", "Rules"},
    {"ServiceKit", "FIDOProblems"},
]
LAYER_OF = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def parse_package() -> dict[str, dict]:
    text = (ROOT / "Package.swift").read_text()
    targets: dict[str, dict] = {}
    for m in re.finditer(r"\.(target|executableTarget|testTarget|systemLibrary)\((.*?)\)\s*,?\s*\n(?=\s*(?://|\.\w+\(|\]))", text, re.S):
        kind, body = m.group(1), m.group(2)
        name = re.search(r'name:\s*"([^"]+)"', body).group(1)
        deps_match = re.search(r"dependencies:\s*\[(.*?)\]", body, re.S)
        deps = set(re.findall(r'"([^"]+)"', deps_match.group(1))) if deps_match else set()
        path_match = re.search(r'path:\s*"([^"]+)"', body)
        excludes = set(re.findall(r'"([^"]+)"', re.search(r"exclude:\s*\[(.*?)\]", body, re.S).group(1))) if "exclude:" in body else set()
        targets[name] = {"name": name, "kind": kind, "deps": deps, "path": path_match.group(1) if path_match else None, "exclude": excludes}
    return targets


TARGETS = parse_package()
SWIFT_TARGETS = {n: t for n, t in TARGETS.items() if t["kind"] != "systemLibrary" and t["path"]}


def imports_of(target: dict) -> set[str]:
    base = ROOT / target["path"]
    found: set[str] = set()
    for source in base.rglob("*.swift"):
        relative = source.relative_to(base)
        if relative.parts and relative.parts[0] in target["exclude"]:
            continue
        for line in source.read_text().splitlines():
            m = re.match(r"\s*(?:@testable\s+|@_exported\s+)?import\s+(\w+)", line)
            if m and m.group(1) in TARGETS:
                found.add(m.group(1))
    return found


def test_the_package_was_read():
    assert {"Platform", "ServiceKit", "RegistrationService", "Registration", "StackTests"} <= set(TARGETS)


@pytest.mark.parametrize("name", sorted(SWIFT_TARGETS))
def test_every_import_is_declared(name):
    target = SWIFT_TARGETS[name]
    undeclared = imports_of(target) - target["deps"] - {name}
    assert not undeclared, f"{name} imports {sorted(undeclared)} without declaring them in Package.swift"


@pytest.mark.parametrize("name", sorted(n for n, t in SWIFT_TARGETS.items() if t["kind"] == "target" and n in LAYER_OF))
def test_shared_libraries_declare_only_what_they_import(name):
    target = SWIFT_TARGETS[name]
    swift_deps = {d for d in target["deps"] if d in SWIFT_TARGETS and not d.startswith("C")}
    unused = swift_deps - imports_of(target)
    assert not unused, f"{name} declares {sorted(unused)} but imports none of it"


@pytest.mark.parametrize("name", sorted(LAYER_OF))
def test_no_module_imports_above_its_layer(name):
    layer = LAYER_OF[name]
    above = {d for d in SWIFT_TARGETS[name]["deps"] | imports_of(SWIFT_TARGETS[name]) if d in LAYER_OF and LAYER_OF[d] >= layer and d != name}
    assert not above, f"{name} (layer {layer}) depends on {sorted(above)} at its layer or above"


def test_nothing_shared_imports_a_service():
    services = {n for n in TARGETS if n.endswith("Service") and n != "ServiceKit"}
    for name in LAYER_OF:
        assert not (imports_of(SWIFT_TARGETS[name]) & services), name


# The five services' executables and every Swift target they link (issue 14). Foundation (and
# FoundationNetworking, which needs it) maps libFoundation, FoundationInternationalization and
# lib_FoundationICU into a process: about 11 MB of resident pages per service at idle.
SERVICE_EXECUTABLES = ["Registration", "Authentication", "Transaction", "OOB", "PII"]
FOUNDATION_ONLY = {"Foundation", "FoundationNetworking", "FoundationInternationalization", "FoundationXML"}
# FoundationInternationalization (ICU's time-zone data, no Foundation) where named time zones are
# needed: the authentication service's tenant time zone.
ALLOWED = {("AuthenticationService", "FoundationInternationalization")}


def linked_swift_targets(name: str) -> set[str]:
    seen: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        if current in seen or current not in SWIFT_TARGETS:
            continue
        seen.add(current)
        stack.extend(SWIFT_TARGETS[current]["deps"])
    return seen


def foundation_imports(target: dict) -> list[str]:
    base = ROOT / target["path"]
    found = []
    for source in sorted(base.rglob("*.swift")):
        relative = source.relative_to(base)
        if relative.parts and relative.parts[0] in target["exclude"]:
            continue
        for number, line in enumerate(source.read_text().splitlines(), 1):
            m = re.match(r"\s*(?:@testable\s+|@_exported\s+|@preconcurrency\s+)?import\s+(?:(?:struct|class|enum|func|var|let)\s+)?(\w+)", line)
            if m and m.group(1) in FOUNDATION_ONLY and (target["name"], m.group(1)) not in ALLOWED:
                found.append(f"{source.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_the_services_link_the_targets_expected():
    assert {"Platform", "ServiceKit", "RegistrationService", "Delivery"} <= linked_swift_targets("Registration")


@pytest.mark.parametrize("name", SERVICE_EXECUTABLES)
def test_services_import_foundation_essentials_never_foundation(name):
    offending = [hit for target in sorted(linked_swift_targets(name)) for hit in foundation_imports(SWIFT_TARGETS[target])]
    assert not offending, f"{name} links targets that import Foundation (import FoundationEssentials):\n" + "\n".join(offending)

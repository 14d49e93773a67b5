"""Validates the language-neutral documents under schemas/ with reference implementations.

- schemas/openapi/*.yaml: OpenAPI 3.1 (openapi-spec-validator); string keys only; every
  `pattern` compiles.
- schemas/events/*.json: JSON Schema draft 2020-12 meta-schema (jsonschema check_schema); each
  document's own `examples` validate against it (with format checks); unknown fields are
  rejected.

The Swift suite Tests/SchemaTests holds the documents and the Swift types together; this one
checks that the documents are what they claim to be for tools other than ours.

Run: pip install -r Tests/contract/requirements.txt && python3 -m pytest Tests/contract
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV31SpecValidator

ROOT = Path(__file__).resolve().parents[2]
OPENAPI_DIR = ROOT / "schemas" / "openapi"
EVENTS_DIR = ROOT / "schemas" / "events"
SERVICES = ["registration", "authentication", "transaction", "oob", "pii"]

OPENAPI_FILES = sorted(OPENAPI_DIR.glob("*.yaml"))
EVENT_FILES = sorted(EVENTS_DIR.glob("*.json"))


def _load_yaml(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        document = yaml.safe_load(f)
    assert isinstance(document, dict), f"{path.name}: top level is not a mapping"
    return document


def _load_json(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        document = json.load(f)
    assert isinstance(document, dict), f"{path.name}: top level is not an object"
    return document


def test_every_service_has_a_document() -> None:
    assert sorted(p.stem for p in OPENAPI_FILES) == sorted(SERVICES)


def test_event_documents_exist() -> None:
    assert (EVENTS_DIR / "cloudevent-kafka-binary.json").is_file()
    assert len(EVENT_FILES) >= 2


@pytest.mark.parametrize("path", OPENAPI_FILES, ids=lambda p: p.name)
def test_openapi_document_is_valid_openapi_3_1(path: Path) -> None:
    document = _load_yaml(path)
    assert document.get("openapi") == "3.1.0"
    # Raises OpenAPIValidationError with the offending path on the first problem.
    validate(document, cls=OpenAPIV31SpecValidator)


@pytest.mark.parametrize("path", OPENAPI_FILES, ids=lambda p: p.name)
def test_openapi_keys_are_strings(path: Path) -> None:
    # YAML turns unquoted 200: into an integer key; JSON and our Swift reader only know strings.
    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                assert isinstance(key, str), f"{path.name}: non-string key {key!r} at {where}"
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    walk(_load_yaml(path), "#")


@pytest.mark.parametrize("path", OPENAPI_FILES, ids=lambda p: p.name)
def test_openapi_patterns_compile(path: Path) -> None:
    # The meta-schema does not check that a `pattern` is a regular expression.
    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            pattern = node.get("pattern")
            if isinstance(pattern, str):
                try:
                    re.compile(pattern)
                except re.error as error:
                    pytest.fail(f"{path.name}: bad pattern at {where}: {error}")
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    walk(_load_yaml(path), "#")


@pytest.mark.parametrize("path", EVENT_FILES, ids=lambda p: p.name)
def test_event_document_is_valid_json_schema_2020_12(path: Path) -> None:
    document = _load_json(path)
    assert document.get("$schema") == "https://json-schema.org/draft/2020-12/schema"
    assert document.get("$id") == f"https://signet.dev/schemas/events/{path.name}"
    # Raises SchemaError with the offending keyword on the first problem.
    Draft202012Validator.check_schema(document)


@pytest.mark.parametrize("path", EVENT_FILES, ids=lambda p: p.name)
def test_event_document_examples_validate(path: Path) -> None:
    document = _load_json(path)
    examples = document.get("examples")
    assert examples, f"{path.name}: no examples"
    validator = Draft202012Validator(document, format_checker=Draft202012Validator.FORMAT_CHECKER)
    for example in examples:
        errors = sorted(validator.iter_errors(example), key=lambda e: list(e.path))
        assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


@pytest.mark.parametrize("path", EVENT_FILES, ids=lambda p: p.name)
def test_event_document_rejects_unknown_fields(path: Path) -> None:
    document = _load_json(path)
    example = dict(document["examples"][0])
    example["unexpected"] = 1  # a number: the header document allows extra *string* headers
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(example, document, cls=Draft202012Validator)

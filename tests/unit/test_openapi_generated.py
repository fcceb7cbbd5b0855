"""The committed OpenAPI document is the generated one (``make openapi`` regenerates it):
``api/openapi.json`` is never edited by hand, so it cannot drift from the structs and the
paths table it is made of."""

from __future__ import annotations

from pathlib import Path

from cronwheel.api import openapi

COMMITTED = Path(openapi.__file__).with_name("openapi.json")


def test_the_committed_document_is_the_generated_one() -> None:
    assert COMMITTED.read_text() == openapi.render(), "api/openapi.json is stale: run `make openapi`"


def test_every_reference_names_a_component() -> None:
    doc = openapi.document()
    schemas = doc["components"]["schemas"]
    refs: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                refs.append(ref.rsplit("/", 1)[1])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc)
    assert refs and sorted({r for r in refs if r not in schemas}) == []

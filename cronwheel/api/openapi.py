"""The OpenAPI document, generated: the paths (``api/openapi_paths.py``), the component
schemas of the bodies declared as msgspec structs (``msgspec.json.schema_components``, the
same structs the API decodes and answers with: ``core/jobfields.py``, ``core/notify.py``'s
rules, ``core/backfill.py``'s answers, ``api/schema.py``, ``api/answers.py``) and the
components no struct declares yet (``api/openapi_components.py``). The committed
``api/openapi.json`` is what this prints, and what ``GET /v1/openapi.json`` serves; a unit
test keeps the two equal.

    python -m cronwheel.api.openapi > cronwheel/api/openapi.json      (make openapi)
"""

from __future__ import annotations

import json
import sys
from typing import Any

import msgspec

from cronwheel.api import answers, schema
from cronwheel.api.openapi_components import RESPONSES, SCHEMAS, SECURITY_SCHEMES
from cronwheel.api.openapi_paths import INFO, OPENAPI_VERSION, PATHS, SECURITY, SERVERS
from cronwheel.core import backfill, jobfields, notify

REF_TEMPLATE = "#/components/schemas/{name}"
#: the structs whose schemas are components of the document (under their class names)
STRUCTS: tuple[Any, ...] = (*jobfields.STRUCTS, *backfill.STRUCTS, notify.NotifyRule, notify.NotifyRuleAnswer, *schema.STRUCTS, *answers.STRUCTS)


def struct_schemas(types: tuple[Any, ...] = STRUCTS) -> dict[str, Any]:
    """The component schemas of ``types`` (and of the structs they hold), in the document's
    shape: ``T | None`` of a plain type is ``{"type": [t, "null"]}`` (and of an enum, the enum
    with ``null``), of a reference ``{"anyOf": [{"$ref"}, {"type": "null"}]}``; msgspec's own
    ``title``, empty ``required`` and implied ``"default": null`` are left out. A schema
    that carries a ``title`` of its own (``Meta(title=...)``) is a named component too, and
    referenced where it appears. A struct's ``json_schema_extra`` (a class variable) adds the
    rules between its members that a type cannot say (exactly one of…); a member's
    ``extra_json_schema={"x-schema": …}`` is its whole schema, for members that refer to a
    component no struct declares; a struct whose ``json_schema_extra`` says ``x-inline`` is
    written where it is used rather than as a component."""
    if not types:
        return {}
    _, components = msgspec.json.schema_components(types, ref_template=REF_TEMPLATE)
    extras = {t.__name__: getattr(t, "json_schema_extra", {}) for t in types}
    out: dict[str, Any] = {}
    for name, component in components.items():
        component.pop("title", None)
        properties = component.get("properties", {})
        for key, prop in properties.items():
            properties[key] = _property(prop)
        component.update(extras.get(name, {}))
        out[name] = _tidy(component, out)
    inline = {name: out.pop(name) for name in list(out) if out[name].pop("x-inline", False)}
    return _inlined(out, inline) if inline else out


def _inlined(node: Any, inline: dict[str, Any]) -> Any:
    """References to the ``x-inline`` structs replaced by their schemas."""
    if isinstance(node, list):
        return [_inlined(x, inline) for x in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in inline and len(node) == 1:
        return _inlined(inline[ref.rsplit("/", 1)[-1]], inline)
    return {k: _inlined(v, inline) for k, v in node.items()}


def _property(node: dict[str, Any]) -> dict[str, Any]:
    if "x-schema" in node:
        whole: dict[str, Any] = node["x-schema"]
        return whole
    if node.get("default", 0) is None:  # msgspec's: absent means null, said by the type
        del node["default"]
    return node


def _tidy(node: Any, named: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_tidy(x, named) for x in node]
    if not isinstance(node, dict):
        return node
    node = {k: _members(v, named) if k in ("properties", "dependentSchemas") else _tidy(v, named) for k, v in node.items()}
    if node.get("required") == []:
        del node["required"]
    if "x-enum" in node:  # a Literal's choices in their declared order (core.jobfields.ordered)
        node["enum"] = node.pop("x-enum")
    title = node.pop("title", None)
    if title is not None:  # a named component other than a struct: hoisted and referenced
        named[title] = node
        return {"$ref": REF_TEMPLATE.format(name=title)}
    options = node.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and options[1] == {"type": "null"}:
        first = options[0]
        if "$ref" in first or ("type" not in first and "enum" not in first):
            if first == {}:  # any JSON value, null included
                rest = {k: v for k, v in node.items() if k != "anyOf"}
                return rest
            return node
        merged = dict(first)
        if "enum" in merged:
            merged["enum"] = [*merged["enum"], None]
        if isinstance(merged.get("type"), str):
            merged["type"] = [merged["type"], "null"]
        merged.update({k: v for k, v in node.items() if k != "anyOf"})
        return merged
    return node


def _members(node: Any, named: dict[str, Any]) -> Any:
    """A map of names to schemas (``properties``): its keys are names, not keywords."""
    if not isinstance(node, dict):
        return node
    return {k: _tidy(v, named) for k, v in node.items()}


def document() -> dict[str, Any]:
    schemas = {**struct_schemas(), **SCHEMAS}
    return {
        "openapi": OPENAPI_VERSION,
        "info": INFO,
        "servers": SERVERS,
        "security": SECURITY,
        "paths": PATHS,
        "components": {"schemas": schemas, "responses": RESPONSES, "securitySchemes": SECURITY_SCHEMES},
    }


def render() -> str:
    """The document as ``api/openapi.json`` holds it."""
    return json.dumps(document(), indent=2) + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()

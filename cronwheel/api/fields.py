"""What every refusal of a request is made of: a ``ValidationError`` that names the field, the
words for a JSON value's type, unknown members, numbers and valid text (``api/decode.py``
words msgspec's verdicts with them), and the request hash. Pure: no HTTP, no I/O, no clock.

Every refusal names the offending field, carries the HTTP status the API answers with (400
malformed/unparseable, 413 too large, 422 well-formed but not acceptable) and a sentence a
person can act on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from typing import Any

from cronwheel.core.words import did_you_mean


class ValidationError(ValueError):
    """A request the API refuses before it reaches the service.

    ``field`` is the JSON path of the offending member (``retryPolicy.maxAttempts``), the
    header name, the query parameter, or None for the body as a whole; ``str(err)`` is the
    full sentence."""

    def __init__(self, field: str | None, detail: str, *, status: int = 422, code: str = "invalid_field") -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail
        self.status = status
        self.code = code


def bad(field: str | None, detail: str, status: int = 422, code: str = "invalid_field") -> ValidationError:
    return ValidationError(field, detail, status=status, code=code)


# ---------------------------------------------------------------- small type checks


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def fmt_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


#: unknown members a refusal names (the rest are counted)
UNKNOWN_NAMED = 10


def reject_unknown(
    where: str | None, data: Mapping[str, Any], allowed: frozenset[str] | tuple[str, ...],
    answer_only: Collection[str] = (),
) -> None:
    """Refuse the members of ``data`` not in ``allowed``, naming the first ``UNKNOWN_NAMED`` of
    them (in name order) and counting the others. ``answer_only``:
    members of the object's answer that the daemon sets, said as such, so that a body read
    back from a GET and sent again learns what to leave out."""
    unknown = sorted(k for k in data if k not in allowed)
    if unknown:
        prefix = f"{where}." if where else ""
        # a typo gets the member it is close to; one of the answer's is said below instead.
        # Only the first few are named: each hint is a comparison with every allowed member,
        # and a 1 MiB body of 78,000 members held the event loop 9 s to list them all
        shown = unknown[:UNKNOWN_NAMED]
        names = ", ".join(prefix + k + ("" if k in answer_only else did_you_mean(k, allowed)) for k in shown)
        if len(unknown) > len(shown):
            names += f", and {len(unknown) - len(shown):,} more"
        noun = "field" if len(unknown) == 1 else "fields"
        theirs = [k for k in unknown if k in answer_only]
        why = ""
        if theirs:
            it = "it" if len(theirs) == 1 else "them"
            why = f"the daemon sets {it} (a job's answer shows {it}): leave {it} out of a body"
            if "status" in theirs:
                why += "; pause, resume and cancel change status"
            why = f": {why}" if len(theirs) == len(unknown) else f" ({', '.join(theirs)}: {why})"
        raise bad(prefix + unknown[0], f"unknown {noun}: {names}{why} (allowed: {', '.join(sorted(allowed))})", code="unknown_field")


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def request_hash(body: Any) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of a request body: the same
    logical request always hashes the same, whatever its key order or whitespace."""
    return hashlib.sha256(canonical_json(body)).hexdigest()


def as_text(field: str, text: str) -> str:
    """A string that is valid Unicode text (no lone surrogates: it must become UTF-8 bytes)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        raise bad(field, f"{field} must be valid Unicode text (it holds a lone surrogate)") from None
    return text


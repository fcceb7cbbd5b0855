"""A request body decoded into its struct (msgspec), every refusal a ``ValidationError`` worded
as the rest of the API words them and naming the member's JSON path. Pure: no HTTP, no I/O.

msgspec checks the shape and the constraints the struct declares (types, required members,
lengths, ranges, patterns, choices); this module words its verdict from the same declaration:
what type was expected, which range, which choices. Two things are done before msgspec sees
the body, as the API always did them: every unknown member is named at once (sorted), and an
integral float (``3.0``) counts as the integer it is, except in a struct that declares
``strict_integers`` (a remote worker's calls: a lease epoch is an identity, not a quantity).
"""

from __future__ import annotations

import functools
import math
import re
import types
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import msgspec

from cronwheel.api.fields import ValidationError, bad, fmt_num, reject_unknown, type_name
from cronwheel.core.jobfields import PATTERN_WORDS

T = TypeVar("T", bound=msgspec.Struct)

#: how a refusal words the type msgspec expected
_EXPECTED = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "an array", dict: "an object"}
_AT = re.compile(r" - at `(?:(key)` in `)?\$(.*?)`$")
_PART = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")


class Member:
    """A member's declared type, unwrapped: its base (``str``, ``int``, a struct, ``list``…),
    whether ``null`` is allowed, and the constraints of its ``Meta``."""

    def __init__(self, annotation: Any) -> None:
        self.annotation = annotation
        self.required = False  #: a struct's member without a default
        self.nullable = False
        self.metas: list[msgspec.Meta] = []
        tp = annotation
        while True:
            if get_origin(tp) is Annotated:
                tp, *metas = get_args(tp)
                self.metas.extend(m for m in metas if isinstance(m, msgspec.Meta))
            elif get_origin(tp) in (Union, types.UnionType):
                args = get_args(tp)
                options = [a for a in args if a is not type(None) and a is not msgspec.UnsetType]
                self.nullable = self.nullable or type(None) in args
                tp = options[0] if len(options) == 1 else Any
            else:
                break
        self.type = tp
        self.base: Any = get_origin(tp) or tp
        if self.base is Literal:  # its choices' type: a refusal says "must be a string"
            self.base = type(get_args(tp)[0])

    def meta(self, name: str) -> Any:
        for m in self.metas:
            value = getattr(m, name, None)
            if value is not None:
                return value
        return None

    def choices(self) -> list[Any] | None:
        for m in self.metas:
            for key in ("x-enum", "enum"):
                if m.extra_json_schema and key in m.extra_json_schema:
                    return list(m.extra_json_schema[key])
        return None

    def child(self, key: Any) -> Member | None:
        """The member at ``key`` of a struct (its JSON name), a list (an index) or a dict."""
        if isinstance(self.type, type) and issubclass(self.type, msgspec.Struct):
            return struct_members(self.type).get(key)
        args = get_args(self.type)
        if self.base is list and args:
            return Member(args[0])
        if self.base is dict and len(args) == 2:
            return Member(args[1])
        return None

    def is_struct(self) -> bool:
        return isinstance(self.type, type) and issubclass(self.type, msgspec.Struct)


@functools.cache
def struct_members(struct: type[msgspec.Struct]) -> dict[str, Member]:
    """A struct's members by JSON name, worked out once per struct: ``msgspec.structs.fields``
    evaluates the struct's annotations on every call (milliseconds for a job body), and a
    batch of a thousand jobs asks for them at every member of every job. The members are
    never changed once made, so one set serves every body."""
    members: dict[str, Member] = {}
    for f in msgspec.structs.fields(struct):
        member = Member(f.type)
        member.required = f.required
        members[f.encode_name] = member
    return members


def field_name(where: str | None, parts: list[Any]) -> str | None:
    name = where or ""
    for part in parts:
        if isinstance(part, int):
            name += f"[{part}]"
        else:
            name = f"{name}.{part}" if name else str(part)
    return name or None


def prepare(member: Member, value: Any, where: str | None, strict_integers: bool = False) -> Any:
    """Unknown members refused (all of them named), integral floats made integers (unless
    ``strict_integers``, or the struct says so), -0.0 made 0.0."""
    if value is None:
        return None
    if member.is_struct() and isinstance(value, dict):
        reject_unknown(where, value, tuple(struct_members(member.type)), getattr(member.type, "answer_only", ()))
        strict = strict_integers or getattr(member.type, "strict_integers", False)
        out = {}
        for key, item in value.items():
            child = member.child(key)
            out[key] = item if child is None else prepare(child, item, field_name(where, [key]), strict)
        return out
    if member.base is int and isinstance(value, float) and math.isfinite(value) and value.is_integer() and not strict_integers:
        return int(value)
    if member.base is float and isinstance(value, float) and value == 0.0:
        return 0.0  # -0.0 is zero: stored and shown as 0.0
    if member.base is list and isinstance(value, list):
        child = member.child(0)
        return value if child is None else [prepare(child, v, field_name(where, [i]), strict_integers) for i, v in enumerate(value)]
    if member.base is dict and isinstance(value, dict):
        child = member.child("")
        return value if child is None else {k: prepare(child, v, field_name(where, [k]), strict_integers) for k, v in value.items()}
    return value


def decode(struct: type[T], body: Any, *, where: str | None = None, statuses: dict[str, tuple[int, str]] | None = None) -> T:
    """``body`` (decoded JSON) as a ``struct``, or the ``ValidationError`` that names the first
    offending member. ``where``: the JSON path of ``body`` itself (``jobs[3]``), None for a
    request body, which must then be an object (400 otherwise). ``statuses``: the status and
    code of a refusal by member (by default 422 ``invalid_field``)."""
    if where is None and not isinstance(body, dict):
        raise bad(None, f"the request body must be a JSON object, not {type_name(body)}", status=400, code="invalid_body")
    root = Member(struct)
    value = prepare(root, body, where)
    try:
        return msgspec.convert(value, struct, strict=True)
    except msgspec.ValidationError as exc:
        raise refusal(root, value, str(exc), where, statuses or {}) from None


def _walk(member: Member, value: Any, parts: list[Any]) -> tuple[Member, Any, list[Any]]:
    """The member and value at ``parts``; a ``...`` part (msgspec's "some key of this dict")
    is resolved to the first key whose value the member refuses."""
    done: list[Any] = []
    for part in parts:
        if part == "...":
            child = member.child("")
            if child is None or not isinstance(value, dict):
                break
            for key, item in value.items():
                try:
                    msgspec.convert(item, child.annotation, strict=True)
                except msgspec.ValidationError:
                    part = key
                    break
        nxt = member.child(part)
        if nxt is None:
            break
        member = nxt
        if isinstance(value, dict):
            value = value.get(part)
        else:
            value = value[part] if isinstance(value, list) and isinstance(part, int) and part < len(value) else None
        done.append(part)
    return member, value, done


def _bad_key(member: Member, value: dict[str, Any]) -> str | None:
    key_type = get_args(member.type)[0] if len(get_args(member.type)) == 2 else str
    for key in value:
        try:
            msgspec.convert(key, key_type, strict=True)
        except msgspec.ValidationError:
            return key
    return None


def refusal(root: Member, value: Any, message: str, where: str | None, statuses: dict[str, tuple[int, str]]) -> ValidationError:
    at = _AT.search(message)
    is_key = bool(at and at.group(1))
    parts: list[Any] = []
    if at:
        for name, index in _PART.findall(at.group(2)):
            parts.append(name if name else (index if index == "..." else int(index)))
    missing = re.match(r"Object missing required field `(.+?)`", message)
    if missing:
        parts.append(missing.group(1))
    member, got, parts = _walk(root, value, parts)
    if is_key and isinstance(got, dict):
        key = _bad_key(member, got)
        field = field_name(where, [*parts, key if key is not None else ""]) or ""
        status, code = statuses.get(field_name(None, parts) or "", (422, "invalid_field"))
        key_member = Member(get_args(member.type)[0]) if len(get_args(member.type)) == 2 else member
        words = PATTERN_WORDS.get(key_member.meta("pattern"), "a valid name")
        return ValidationError(field, f"{field_name(where, parts)}: {str(key)[:100]!r} is not {words}", status=status, code=code)
    field = field_name(where, parts) or ""
    # a member of the wrong type is always 422; what breaks a rule of its own may be otherwise
    wrong_type = missing or ", got `" in message
    status, code = (422, "invalid_field") if wrong_type else statuses.get(field_name(None, parts) or "", (422, "invalid_field"))
    return ValidationError(field, _words(member, got, field, message, bool(missing)), status=status, code=code)


def _words(member: Member, got: Any, field: str, message: str, missing: bool) -> str:
    choices = member.choices()
    if missing or (got is None and not member.nullable and member.required):  # null counts as absent
        return f"{field} is required" + (f": one of {', '.join(map(str, choices))}" if choices else "")
    if got is None and not member.nullable:
        return f"{field} cannot be null"
    if member.base is int and isinstance(got, float) and ", got `" in message:
        return f"{field} must be an integer (no decimal point, no exponent), not {got!r}"
    if ", got `" in message or member.base is Any:
        return f"{field} must be {_EXPECTED.get(member.base, 'an object')}, not {type_name(got)}"
    if choices is not None and "enum" in message:
        return f"{field} must be one of {', '.join(map(str, choices))}, not {got!r}"
    if member.base in (int, float):
        unit = " seconds" if field.endswith("Sec") else ""
        ge, gt, le = member.meta("ge"), member.meta("gt"), member.meta("le")
        shown = repr(got) if len(repr(got)) <= 24 else f"{repr(got)[:6]}… ({len(repr(got))} digits)"  # 1e308 arrives as an int of 309 digits
        if ge is not None and le is not None:
            return f"{field} must be between {fmt_num(ge)} and {fmt_num(le)}{unit}, not {shown}"
        bounds = [f"at least {fmt_num(ge)}" if ge is not None else "", f"above {fmt_num(gt)}" if gt is not None else "",
                  f"at most {fmt_num(le)}" if le is not None else ""]  # fmt: skip
        return f"{field} must be {' and '.join(b for b in bounds if b)}{unit}, not {shown}"
    lo, hi = member.meta("min_length"), member.meta("max_length")
    size = len(got) if isinstance(got, str | list | dict) else 0
    if member.base is str:
        span = f"{lo} to {hi}" if lo is not None and hi is not None else f"at most {hi}" if hi is not None else f"at least {lo}"
        if isinstance(got, str) and not got.strip():
            return f"{field} must be {span} characters and not blank" if hi is not None else f"{field} must be text that is not blank"
        if (lo is not None and size < lo) or (hi is not None and size > hi):
            return f"{field} must be {span} characters"
        pattern = member.meta("pattern")
        return f"{field} must be {PATTERN_WORDS.get(pattern, f'text matching {pattern}')}, not {str(got)[:100]!r}"
    noun = "entries" if member.base is list else "members"
    span = f"{lo} to {hi}" if lo is not None and hi is not None else f"at most {hi}" if hi is not None else f"at least {lo}"
    return f"{field} holds {span} {noun}, not {size}"

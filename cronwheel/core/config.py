"""The daemon's configuration file: TOML, one top-level key per ``serve`` option.

Pure: text in, values (with the line each came from) out; no file is opened here. Which keys
exist and how their values are checked is the caller's business (the CLI derives both from
``serve``'s options, so a new option is a new key with nothing else to keep in step).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from cronwheel.core.words import did_you_mean, without_byte_order_mark

ENV_PREFIX = "CRONWHEEL_"


def inherited_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The daemon's environment as its workers, its jobs and its notification commands get it:
    without the daemon's own ``CRONWHEEL_`` variables. Those are its settings, and some are
    secrets no job may read: ``CRONWHEEL_STORE`` may hold the database's password,
    ``CRONWHEEL_TOKEN`` an operator's token, and a ``runAs`` job runs as an account that could
    not read the daemon's files. What a child needs of cronwheel's (``CRONWHEEL_CLI``,
    ``CRONWHEEL_URL``, a run's ``CRONWHEEL_EXECUTION_ID``…) is set for it; the names are
    reserved, so no job's own ``env`` sets one either."""
    return {name: value for name, value in environ.items() if not name.startswith(ENV_PREFIX)}


class ConfigError(Exception):
    """A problem in a configuration source, said as ``FILE:LINE: key 'name': what``."""

    def __init__(self, source: str, problem: str, line: int | None = None, key: str | None = None) -> None:
        self.source = source
        self.line = line
        self.key = key
        self.problem = problem
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: key {key!r}: {problem}" if key else f"{where}: {problem}")


@dataclass(frozen=True)
class RawValue:
    """A value as the file wrote it, and the line it is on (0 when it cannot be found)."""

    value: Any
    line: int


def env_var(key: str) -> str:
    """``http_allow`` -> ``CRONWHEEL_HTTP_ALLOW``."""
    return ENV_PREFIX + key.upper()


def key_lines(text: str) -> dict[str, int]:
    """The line of each top-level ``key = …`` (1-based); keys inside tables are not top-level.
    A dotted key (``log.level = …``) is its first part's line: TOML makes that part a table,
    which is refused with the line it is on."""
    lines: dict[str, int] = {}
    in_table = False
    pattern = re.compile(r"""^\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_-]+))\s*[=.]""")
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_table = True
            continue
        match = pattern.match(line)
        if match and not in_table:
            lines.setdefault(next(g for g in match.groups() if g is not None), number)
    return lines


def table_lines(text: str) -> dict[str, int]:
    """The line of each ``[table]`` header."""
    out: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = re.match(r"^\s*\[+\s*([^\]]+?)\s*\]", line)
        if match:
            out.setdefault(match.group(1).strip().strip("\"'"), number)
    return out


def load_toml(text: str, source: str) -> dict[str, Any]:
    """``text`` read as TOML, or a ConfigError naming ``source`` and, when the reader says,
    the line."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        raise ConfigError(source, f"not valid TOML: {exc}", int(at.group(1)) if at else None) from None
    except RecursionError:
        raise ConfigError(source, "not valid TOML: arrays or tables nested too deeply") from None
    except ValueError as exc:  # Python's bound on an integer's digits
        raise ConfigError(source, f"not valid TOML: {exc.args[0].split(';')[0] if exc.args else exc}") from None


def parse(text: str, source: str, known: Iterable[str], problems: list[ConfigError] | None = None) -> dict[str, RawValue]:
    """The top-level keys of ``text``; any key not in ``known`` (or any table) is refused with
    its line and, when one is close, the key that was probably meant (appended to ``problems``
    and left out instead, when a list is given)."""
    text = without_byte_order_mark(text)
    data = load_toml(text, source)
    known = list(known)
    lines = key_lines(text)
    tables = table_lines(text)
    out: dict[str, RawValue] = {}
    for key, value in data.items():
        line = lines.get(key) or tables.get(key) or 0
        if key not in known:
            hint = did_you_mean(key, known)
            kind = "table" if isinstance(value, dict) else "key"
            problem = ConfigError(source, f"unknown {kind}{hint}; the keys are: {', '.join(sorted(known))}", line, key)
            if problems is None:
                raise problem
            problems.append(problem)
            continue
        out[key] = RawValue(value, line)
    return out


_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
               "t": 1 << 40, "tib": 1 << 40}


def size_bytes(text: str) -> int:
    """``256M``, ``1G``, ``512MiB`` or plain bytes; ValueError otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _SIZE_UNITS:
        raise ValueError(f"must be a size like 256M, 1G or 1048576, not {text!r}")
    return int(float(m.group(1)) * _SIZE_UNITS[unit])


#: executions per local worker when ``slots`` is not set
DEFAULT_SLOTS = 16


def is_shared_store(url: str | None) -> bool:
    """A store several nodes may point at (``store.open_store``'s PostgreSQL URLs)."""
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


def combination_problems(values: Mapping[str, Any], origin: Callable[[str], str], cpus: int) -> list[tuple[str, str]]:
    """What ``serve`` refuses among keys that are each valid alone, as ``(key, problem)``:
    ``values`` as resolved (None: not set), ``origin(key)`` where a value came from (each
    problem names the other keys it is about), ``cpus`` the default of ``workers``."""
    problems: list[tuple[str, str]] = []
    if values.get("cluster") is False and is_shared_store(values.get("store")):
        # without bucket leases a node schedules every bucket, unfenced, beside the other nodes
        # of the store, and starts with no check that no live node has its id
        problems.append(("cluster", f"false cannot go with a PostgreSQL store (store from {origin('store')}): "
                         "nodes that share a store must schedule through bucket leases (cluster mode), so it is "
                         "always on with postgresql://; leave cluster unset"))  # fmt: skip
    workers = cpus if values.get("workers") is None else int(values["workers"])
    slots = int(values.get("slots") or DEFAULT_SLOTS)
    reserved = int(values.get("reserved_high_slots") or 0)
    if workers and reserved >= workers * slots:
        # the dispatcher gives default and batch work only the slots beyond the reserve
        problems.append(("reserved_high_slots", f"{reserved} slots reserved for the high priority tier leave none "
                         f"for default and batch work: the node has {workers * slots} (workers = {workers} from "
                         f"{origin('workers')}, slots = {slots} from {origin('slots')}); reserve fewer than "
                         f"{workers * slots}"))  # fmt: skip
    if values.get("smtp_url") and values.get("sendmail"):
        problems.append(("sendmail", f"set as well as smtp_url (from {origin('smtp_url')}): email goes out one "
                         "way, not both; remove one of them"))  # fmt: skip
    return problems


#: a conninfo's parameters that hold a secret: the password, and the passphrase of the client's key
_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})
MASK = "********"


def mask_secrets(text: str) -> str:
    """``smtp://u:s3cret@relay`` -> ``smtp://u:********@relay`` (and a conninfo's
    ``?password=`` and ``?sslpassword=``, their names as libpq reads them: in any case,
    percent-escapes decoded): what `cronwheel config` prints is pasted into tickets and chats."""
    scheme, sep, rest = text.partition("://")
    if sep:
        # libpq ends the user information at '@' or '/' only (a password may hold '?' or '#'),
        # URL parsers at the last '@' before '/', '?' or '#': up to '/' and its last '@' masks
        # what either reads as the password
        authority = rest.split("/", 1)[0]
        userinfo, at, _ = authority.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if at and colon and password:
            text = f"{scheme}://{user}:{MASK}@{rest[len(userinfo) + 1:]}"
    head, mark, query = text.partition("?")
    if not mark:
        return text
    query, hash_, fragment = query.partition("#")
    items = [f"{name}={MASK}" if eq and unquote(name).lower() in _SECRET_PARAMETERS else name + eq + value
             for name, eq, value in (item.partition("=") for item in query.split("&"))]
    return f"{head}?{'&'.join(items)}{hash_}{fragment}"

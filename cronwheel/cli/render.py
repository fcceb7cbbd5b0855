"""How the CLI writes: rich tables on a terminal, plain aligned text otherwise, JSON on
request, notes and errors on stderr. Times arrive from the API as RFC 3339 UTC strings and are
shown in the local zone (or a given one) next to UTC. (What the API's objects look like in
these tables and lines is ``views``'.)

Names, commands, payloads, outputs and errors are written by tenants: shown as text they
never reach the terminal as control sequences (``safe``: ESC, C0 but newline and tab, DEL, C1
and the bidirectional overrides are written as visible escapes such as ``\x1b`` and
``\u202e``), and a stored value that does not parse
(a time past the year 9999) is shown as it is rather than crashing the listing. ``--json``
stays exact: JSON escapes control characters itself.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, TypeVar

import click

from cronwheel.core.instants import format_instant


def is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


#: what a terminal would act on: C0 controls but tab and newline, DEL, and C1 controls; and
#: the bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), with
#: which a value would show the rest of its line (the columns after it) reordered on a
#: terminal that lays out right-to-left text ("Trojan Source")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_NEWLINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def safe(value: Any, *, newlines: bool = True) -> str:
    """``value`` as text fit for a terminal: control characters written as visible escapes
    (``\x1b``, ``\x07``); with ``newlines=False`` (a table cell, a key: value line) newline
    and tab too."""
    text = value if isinstance(value, str) else str(value)
    return (_CONTROL if newlines else _CONTROL_OR_NEWLINE).sub(_escape, text)


def emit_output(text: str) -> None:
    """An execution's output (or error): on a terminal made safe, into a pipe or a file as
    it is (byte for byte what the job wrote, as far as the store kept it)."""
    shown = safe(text) if is_tty() else text
    # color=True: click would strip what looks like ANSI styling from a pipe, and the pipe
    # is where the output must arrive exact
    click.echo(shown, nl=not shown.endswith("\n"), color=True)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def emit_error(message: str) -> None:
    prefix = click.style("error:", fg="red", bold=True) if sys.stderr.isatty() else "error:"
    click.echo(f"{prefix} {safe(message)}", err=True)


_Answer = TypeVar("_Answer", bound=dict[str, Any])


def emit_note(message: str) -> None:
    click.echo(safe(message), err=True)


def warned(answer: _Answer) -> _Answer:
    """``answer``, after printing its ``warnings`` on standard error whatever the command
    prints: what was accepted but will not work as it stands (an email rule on a daemon
    without mail). The same warning for many jobs of a batch is printed once, with a count, and
    the same words for several fields of a job once, naming them all."""
    warnings = answer.get("warnings")
    seen: dict[str, int] = {}
    for w in warnings if isinstance(warnings, list) else []:
        text = str(w)
        if text.startswith("jobs[") and "." in text:  # jobs[3].notify[0].to: the same words for each job
            text = text.split(".", 1)[1]
        seen[text] = seen.get(text, 0) + 1
    fields: dict[tuple[str, int], list[str]] = {}  # (words, jobs) -> the fields they are about
    for text, n in seen.items():
        field, sep, words = text.partition(": ")
        if not sep:
            field, words = "", text
        fields.setdefault((words, n), []).append(field)
    for (words, n), named in fields.items():
        where = ", ".join(f for f in named if f)
        emit_note(f"warning: {where + ': ' if where else ''}{words}" + (f" ({n} jobs)" if n > 1 else ""))
    return answer


def emit_table(columns: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str = "nothing to show") -> None:
    """A table: rich on a terminal, else a header line and columns separated by two spaces
    (the last column unpadded), so ``cut``/``awk`` work on it."""
    if not rows:
        emit_note(empty)
        return
    if is_tty():
        from rich import box
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for col in columns:
            table.add_column(col, overflow="fold")
        for row in rows:  # Text: a cell is never read as rich markup ("[red]" stays text)
            table.add_row(*(Text(safe(c, newlines=False)) for c in row))
        Console(highlight=False).print(table)
        return
    cells = [list(columns), *([safe(c, newlines=False) for c in row] for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    for r in cells:
        line = "  ".join(c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r))
        click.echo(line.rstrip())


def emit_kv(pairs: Sequence[tuple[str, Any]]) -> None:
    width = max((len(k) for k, _ in pairs), default=0)
    for key, value in pairs:  # an empty key continues the value above (one env variable a line)
        shown = "-" if value is None or value == "" else safe(value, newlines=False)
        click.echo(f"{(key + ':' if key else '').ljust(width + 1)}  {shown}")


# ---------------------------------------------------------------- time


def parse_iso(text: str | None) -> datetime | None:
    """An RFC 3339 time from the API; None when absent or beyond what datetime holds."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except (ValueError, TypeError):
        return None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def ms_to_dt(ms: int) -> datetime:
    """``ms`` since the epoch as an aware UTC datetime, exactly: integer arithmetic, for
    ``ms / 1000`` as a float loses the last millisecond of far-off instants (9899-12-31
    23:59:59.999 read as .998)."""
    return _EPOCH + ms * _MS


def fmt_local(value: str | datetime | None, tz: tzinfo | None = None) -> str:
    """``2026-11-30 00:00:00 CET`` in ``tz``; without one, UTC (``… UTC``): every command
    shows instants the same way, whatever this machine's zone (the API's are UTC too).
    A wall-clock reading for people, not an RFC 3339 instant: ``fmt_utc`` is that."""
    dt = parse_iso(value) if isinstance(value, str) or value is None else value
    if dt is None:
        return safe(value, newlines=False) if value else "-"  # shown as stored, never a crash
    try:
        local = dt.astimezone(tz if tz is not None else UTC)
    except (OverflowError, ValueError):  # the edge of datetime's range
        return fmt_utc(dt)
    text = f"{local.year:04d}-" + local.strftime("%m-%d %H:%M:%S")  # (%Y drops the zeros of years below 1000)
    if local.microsecond // 1000:
        text += f".{local.microsecond // 1000:03d}"
    return f"{text} {local.tzname() or local.strftime('%z')}"


def fmt_utc(value: str | datetime | None) -> str:
    """The RFC 3339 form of an instant, exactly as the API writes it (core/instants.py)."""
    dt = parse_iso(value) if isinstance(value, str) or value is None else value
    if dt is None:
        return safe(value, newlines=False) if value else "-"
    if dt.tzinfo is None:
        dt = dt.astimezone(UTC)  # a naive time is this machine's
    return format_instant((dt - _EPOCH) // _MS)


def fmt_both(value: str | datetime | None, tz: tzinfo | None = None) -> str:
    """An instant as ``cronwheel next`` prints one: the wall clock in the job's zone (UTC
    without one), its zone named, then the RFC 3339 instant
    (``2026-12-01 09:00:00 CET  2026-12-01T08:00:00.000Z``)."""
    if not value:
        return "-"
    return f"{fmt_local(value, tz)}  {fmt_utc(value)}"


def fmt_lag(ms: int | None) -> str:
    if ms is None:
        return "-"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    if ms < 60_000:
        return f"{sign}{ms / 1000:.1f}s"
    minutes, secs = divmod(ms // 1000, 60)
    if minutes < 60:
        return f"{sign}{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{sign}{hours}h{minutes:02d}m"


def fmt_seconds(sec: float | None) -> str:
    if sec is None:
        return "-"
    if sec < 60 or sec % 60:
        return f"{sec:g}s"
    if sec % 3600:
        return f"{sec / 60:g}m"
    return f"{sec / 3600:g}h"

"""Words for what people read: counted nouns ("1 job", "2 jobs", never "1 jobs" or "job(s)"),
and text from argv or the environment shown as it was given. Pure."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun in the right number: ``counted(1, "job")`` is "1 job"."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


#: what other schedulers (Kubernetes CronJob, Dkron, APScheduler, Celery beat, Nomad) call a
#: job's members, spelt as ``did_you_mean`` compares them, and cronwheel's name for each: too far
#: from ours for a typo's closeness (``retries`` is 0.56 from ``retryPolicy``), but what a
#: newcomer types first. Offered only where cronwheel's name is one of the choices.
OTHER_SCHEDULERS_WORDS = {
    "retries": "retryPolicy", "retry": "retryPolicy", "maxretries": "retryPolicy",
    "cron": "schedule", "crontab": "schedule", "cronexpression": "schedule", "expression": "schedule",
    "trigger": "schedule", "spec": "schedule",
    "tz": "timezone",
    "cmd": "command", "exec": "command", "shellcommand": "command",
    "timeout": "timeoutSec", "activedeadlineseconds": "timeoutSec",
    "concurrencypolicy": "overlap", "concurrency": "overlap", "maxinstances": "overlap",
    "startingdeadlineseconds": "misfireGraceSec", "misfiregracetime": "misfireGraceSec",
    "environment": "env",
}


def did_you_mean(word: str, choices: Iterable[str], n: int = 1, cutoff: float = 0.6) -> str:
    """`` (did you mean 'schedule'?)`` when up to ``n`` of ``choices`` are close to ``word`` (a
    typo), or ``word`` is another scheduler's name for one of them (``OTHER_SCHEDULERS_WORDS``),
    else ''. Case, ``_`` and ``-`` do not count: ``max_attemps`` is close to ``maxAttempts``,
    ``retry-policy`` is ``retryPolicy``."""
    def key(text: str) -> str:
        return text.lower().replace("_", "").replace("-", "")

    by_key: dict[str, list[str]] = {}
    for choice in dict.fromkeys(choices):
        by_key.setdefault(key(choice), []).append(choice)
    ours = OTHER_SCHEDULERS_WORDS.get(key(word))
    if ours is not None and key(ours) in by_key:
        return f" (did you mean {by_key[key(ours)][0]!r}?)"
    close = difflib.get_close_matches(key(word), list(by_key), n=n, cutoff=cutoff)
    shown = [choice for k in close for choice in by_key[k]][:n]
    return f" (did you mean {' or '.join(repr(c) for c in shown)}?)" if shown else ""


def without_byte_order_mark(text: str) -> str:
    """A file's text without the byte-order mark (U+FEFF) that editors on Windows put at the
    start of UTF-8. It says nothing about the document, and the readers of TOML, crontab lines
    and JSON would take it for the first character of line 1 (an "invalid statement", a minute
    field of '\\ufeff0'); lines are counted as before, since the mark ends no line."""
    return text.removeprefix("\ufeff")


class NotUtf8(ValueError):
    """A file that is not UTF-8: the line of its first such byte, and how to convert it."""

    def __init__(self, line: int, byte: int) -> None:
        super().__init__(f"not UTF-8 (byte 0x{byte:02x}): convert the file first, e.g. iconv -f latin1 -t utf-8")
        self.line = line


def file_text(data: bytes) -> str:
    """A file's bytes as text: UTF-8, without a byte-order mark. ``NotUtf8`` names the line of
    the first byte that is not UTF-8 (a raw codec error names an offset nobody can find)."""
    try:
        return without_byte_order_mark(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise NotUtf8(data.count(b"\n", 0, exc.start) + 1, data[exc.start]) from None


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: argv's, a path's or the environment's bytes
    that were not UTF-8 arrive in Python as lone surrogates, which cannot."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def is_sendable(text: str) -> bool:
    """Printable and UTF-8: what a URL or a header field given in argv must be to be sent as
    it was typed (no control character, no byte of no encoding)."""
    return text.isprintable() and is_utf8(text)


def as_given(text: str, limit: int = 80) -> str:
    """``text`` from argv, the environment or a path, shown safely in a one-line refusal:
    bytes that were not UTF-8 (lone surrogates in Python) as ``\\xff``, control characters as
    their escapes (``\\n``), at most ``limit`` characters."""
    shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")[:limit]
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in shown)

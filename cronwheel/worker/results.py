"""What a run ends with: its outcome and the bounded texts it carries (the tail of its
output, its error, a callable's return value), safe for msgpack and the stores."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import json
import os
import traceback
from dataclasses import dataclass

from cronwheel.core.limits import scrub_text

OUTPUT_TAIL = 64 * 1024  #: bytes of stdout/stderr (or HTTP body) kept: the last ones
MAX_RETURN_TEXT = 64 * 1024  #: characters of a python callable's return value kept
MAX_ERROR = 8 * 1024  #: characters of an error text
ERROR_LINES = 20  #: traceback lines kept (the last ones)


@dataclass(eq=False)
class Result:
    outcome: str  #: an ``Outcome`` value: succeeded, failed, timed_out
    exit_code: int | None = None
    error: str | None = None
    output: str | None = None


class Tail:
    """The last ``limit`` bytes of a stream, in at most 2 × limit bytes of memory."""

    def __init__(self, limit: int = OUTPUT_TAIL) -> None:
        self.limit = limit
        self._buf = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if len(data) >= self.limit:
            self._buf[:] = data[-self.limit :]
            return
        self._buf += data
        if len(self._buf) > 2 * self.limit:
            del self._buf[: -self.limit]

    def text(self) -> str:
        """The tail as text: bytes that are not UTF-8, and NULs (which no store keeps as text
        and the result frame refuses), as U+FFFD."""
        return scrub_text(bytes(self._buf[-self.limit :]).decode("utf-8", "replace"))


def timed_out(timeout_sec: float, exit_code: int | None = None, output: str | None = None) -> Result:
    """The result of a run its job's ``timeoutSec`` ended (every kind of target)."""
    return Result("timed_out", exit_code, f"timed out after {timeout_sec:g}s", output)


def bounded_tail(text: str, limit: int = MAX_ERROR) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def error_text(exc: BaseException) -> str:
    """The last ERROR_LINES lines of the traceback, at most MAX_ERROR characters."""
    return _traceback_text(traceback.TracebackException.from_exception(exc))


def _traceback_text(tb: traceback.TracebackException) -> str:
    lines = "".join(tb.format()).rstrip().splitlines()
    # a callable's text may hold lone surrogates (os.fsdecode): msgpack and the stores refuse them
    return scrub_text(bounded_tail("\n".join(lines[-ERROR_LINES:])))


def cause_text(exc: BaseException) -> str:
    """``exc`` on one line, as the last line of its traceback names it
    (``ModuleNotFoundError: No module named 'x'``), at most MAX_ERROR characters."""
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else f"{kind.__module__}.{kind.__qualname__}"
    message = " ".join(str(exc).split())
    text = f"{name}: {message}" if message else name
    return scrub_text(text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 1] + "…")


def _dir_of(path: str) -> str:
    return os.path.dirname(os.path.abspath(path)) + os.sep


_IMPORTLIB = (_dir_of(importlib.__file__), "<frozen importlib")  #: frames that say nothing about the module imported
_PACKAGE_DIR = _dir_of(os.path.dirname(__file__))
#: where the frames that run a user's code come from, rather than the user's code itself
_RUNNER = (_PACKAGE_DIR, _dir_of(asyncio.__file__), _dir_of(concurrent.futures.__file__), *_IMPORTLIB)


def user_traceback(exc: BaseException) -> str | None:
    """The traceback of ``exc`` through the user's own frames only (its last ERROR_LINES
    lines), or None when it went through none: that one line would only repeat the error.

    The worker catches what the user's code raises, so the stack begins with the worker's
    frames (cronwheel's, asyncio's, the thread pool's, down to load_callable or the target's
    call): those go, up to the first frame of the user's code, after which every frame stays,
    cronwheel's too (the user's code may call it), but importlib's, which say nothing about
    the module being imported. A stack that begins elsewhere was caught by another caller,
    whose frames all stay."""
    tb = traceback.TracebackException.from_exception(exc)
    frames = list(tb.stack)
    start = 0
    if frames and frames[0].filename.startswith(_PACKAGE_DIR):
        while start < len(frames) and frames[start].filename.startswith(_RUNNER):
            start += 1
    tb.stack = traceback.StackSummary.from_list([f for f in frames[start:] if not f.filename.startswith(_IMPORTLIB)])
    text = _traceback_text(tb)
    return text if "\n" in text else None


def raised(exc: BaseException, lead: str = "") -> Result:
    """The failed run of a python target whose code raised ``exc`` (``lead`` before it says
    when, for a target that did not load). Its error is the exception, as the last line of its
    traceback names it (``ValueError: bad input``): ``dlq ls``, ``history`` and notifications
    show an error's first characters, and a traceback would begin with the worker's frames,
    which say nothing a user can act on. The user's own frames are the run's output."""
    return Result("failed", error=lead + cause_text(exc), output=user_traceback(exc))


def not_loaded(spec: str, exc: BaseException) -> Result:
    """The failed run of a python target ``spec`` that could not be loaded (imported, found,
    callable): ``cannot load m:f: ModuleNotFoundError: No module named 'm'``, what the module's
    code adds (the line of a SyntaxError, the import inside it that failed) as its output."""
    return raised(exc, f"cannot load {spec}: ")


def return_text(value: object) -> str | None:
    """A callable's return value as a result's output: JSON when it can be, else its repr."""
    if value is None:
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except Exception as exc:  # a value nested past the stack (its repr recurses too), a repr that raises
            text = f"<a {type(value).__name__} that cannot be shown: {cause_text(exc)}>"
    text = scrub_text(text)
    return text if len(text) <= MAX_RETURN_TEXT else text[: MAX_RETURN_TEXT - 1] + "…"

"""What a run ends with: its outcome and the bounded texts it carries (the tail of its
output, its error, a callable's return value), safe for msgpack and the stores."""

from __future__ import annotations

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


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_IMPORTLIB = os.path.join(os.path.dirname(os.path.abspath(traceback.__file__)), "importlib") + os.sep


def not_loaded(spec: str, exc: BaseException) -> Result:
    """The failed run of a python target ``spec`` that could not be loaded (imported, found,
    callable). Its error leads with the cause (``cannot load m:f: ModuleNotFoundError: No
    module named 'm'``): ``dlq ls`` shows an error's first characters, and a traceback would
    begin with the worker's own frames, which say nothing a user can act on. What the module's
    code adds (the line of a SyntaxError, the import inside it that failed) is the run's output."""
    tb = traceback.TracebackException.from_exception(exc)
    # the stack runs from the worker's task (cronwheel, asyncio, the thread pool) to
    # load_callable, then through importlib into the module: only the module's frames are kept
    frames = list(tb.stack)
    ours = [i for i, f in enumerate(frames) if f.filename.startswith(_PACKAGE_DIR)]
    tb.stack = traceback.StackSummary.from_list([
        f for f in frames[ours[-1] + 1 if ours else 0 :]
        if not f.filename.startswith(("<frozen importlib", _IMPORTLIB))
    ])
    text = _traceback_text(tb)
    # no frame of the module's: the one line left would only repeat the error
    return Result("failed", error=f"cannot load {spec}: {cause_text(exc)}", output=text if "\n" in text else None)


def return_text(value: object) -> str | None:
    """A callable's return value as a result's output: JSON when it can be, else its repr."""
    if value is None:
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    text = scrub_text(text)
    return text if len(text) <= MAX_RETURN_TEXT else text[: MAX_RETURN_TEXT - 1] + "…"

"""Progress for long CLI work (a large crontab import): a rich bar on a terminal, nothing at
all when stderr is piped or redirected, so scripts and logs get only the results."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from rich.progress import Progress

T = TypeVar("T")
#: below this many items the work is over before a bar would help
MIN_ITEMS = 200


def steps(items: Iterable[T], *, total: int, per_step: int, what: str) -> Iterator[T]:
    """Yield ``items`` (each stands for ``per_step`` of ``total`` units, the last for the rest),
    advancing a bar on stderr after each one when stderr is a terminal."""
    if total < MIN_ITEMS or not sys.stderr.isatty():
        yield from items
        return
    with _bar(what) as bar:
        task = bar.add_task(what, total=total)
        done = 0
        for item in items:
            yield item
            done = min(total, done + per_step)
            bar.update(task, completed=done)


def countdown(left: Callable[[], int | None], *, total: int, what: str, every_s: float = 0.5) -> None:
    """Wait until ``left()`` (what is still to do of ``total``; None: nothing any more) is 0
    or None, asking every ``every_s`` seconds, with a bar on stderr when it is a terminal."""
    with _bar(what) if sys.stderr.isatty() else contextlib.nullcontext() as bar:
        task = None if bar is None else bar.add_task(what, total=total)
        while (now := left()):
            if bar is not None and task is not None:
                bar.update(task, completed=max(0, total - now))
            time.sleep(every_s)  # the daemon does the work: this only asks how far it is


def _bar(what: str) -> Progress:
    """A bar on stderr, gone once done (rich is imported only when a bar is shown)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True)  # fmt: skip

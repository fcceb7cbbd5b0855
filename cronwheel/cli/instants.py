"""Instants as the CLI's options take them: RFC 3339, ``+DURATION`` ahead, ``-DURATION``
ago, or ``now``; a bad one is a usage error naming its option."""

from __future__ import annotations

import contextlib

import click

from cronwheel.cli.context import local_now_ms
from cronwheel.core import schedule as sched
from cronwheel.core.instants import format_instant


def instant_text(text: str, param: str) -> str:
    """An RFC 3339 instant or ``+DURATION`` from now, as the RFC 3339 text the API takes."""
    try:
        at = sched.parse_instant(text.strip(), local_now_ms())
    except sched.ScheduleError as exc:
        raise click.BadParameter(str(exc), param_hint=param) from None
    return format_instant(at)


def instant_around(text: str, param: str, now: int, past_only: bool = False) -> int:
    """An instant given around ``now``: RFC 3339, ``+DURATION``, ``now``, or ``-DURATION``
    (that long ago: ``backfill --from -7d --to now``, ``next --from -1d``), in ms.
    ``past_only``: the caller refuses the future (a backfill), so a word it does not take is
    not told of ``+DURATION``."""
    body = text.strip()
    if body.lower() == "now":
        return now
    if body.startswith("-"):
        try:
            ago = round(sched.parse_duration(body[1:]) * 1000)
        except sched.ScheduleError as exc:
            raise click.BadParameter(str(exc), param_hint=param) from None
        if ago > now:
            raise click.BadParameter(f"{body!r} is before 1970, the earliest instant cronwheel keeps", param_hint=param)
        return now - ago
    if body[:1].isdigit() and not sched.looks_like_instant(body):
        with contextlib.suppress(sched.ScheduleError):  # "7d": a duration, given without its sign
            sched.parse_duration(body)
            raise click.BadParameter(f"{body!r} is a duration: write -{body} for that long ago, or +{body} for that long ahead",
                                     param_hint=param)
    if not body[:1].isdigit() and not sched.looks_like_instant(body):  # a word: list what this option takes
        forms = "now or -DURATION (that long ago, e.g. -7d)"
        if not past_only:
            forms = "now, -DURATION (that long ago, e.g. -7d) or +DURATION (that long ahead)"
        raise click.BadParameter(f"invalid time {body!r}: expected an RFC 3339 instant like '2026-12-01T10:00:00Z', {forms}",
                                 param_hint=param)
    return sched.parse_instant(instant_text(body, param))

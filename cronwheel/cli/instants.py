"""Instants as the CLI's options take them: RFC 3339, ``+DURATION`` ahead, ``-DURATION``
ago, or ``now``, and a calendar's days and windows; a bad one is a usage error naming its
option, the value and the form it needs."""

from __future__ import annotations

import contextlib

import click

from cronwheel.cli.context import local_now_ms
from cronwheel.core import schedule as sched
from cronwheel.core.calendar import CalendarError, parse_date, parse_window
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


def calendar_spans(dates: tuple[str, ...], windows: tuple[str, ...]) -> list[dict[str, str]]:
    """``calendar set``'s ``--date`` days and ``--window START/END`` spans checked as the API
    checks them, before anything is sent; the windows as the API's ``{start, end}``."""
    for day in dates:
        try:
            parse_date(day, "--date")
        except CalendarError as exc:
            why = str(exc).removeprefix("--date: ")
            form = "; write YYYY-MM-DD" if why.startswith(f"{day!r}: ") else ""  # a month 13, a 30 February
            raise click.BadParameter(why + form, param_hint="'--date'") from None
    spans = []
    for i, window in enumerate(windows):
        start, _, end = window.partition("/")
        if not start or not end:
            raise click.BadParameter(f"{window!r} is not START/END", param_hint="'--window'")
        try:
            parse_window(i, start, end)
        except CalendarError as exc:
            why = str(exc).split(": ", 1)[1]  # without the API's windows[i].end
            raise click.BadParameter(f"{window!r}: {why}", param_hint="'--window'") from None
        spans.append({"start": start, "end": end})
    return spans

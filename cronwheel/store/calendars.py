"""Calendars as the stores keep them: the rows of one claim batch, and the stored form."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cronwheel.core.calendar import Calendar, Exclusions, calendar_from_json
from cronwheel.store.common import dumps


class CalendarBook:
    """The calendars one claim batch needs, read once: ``load(needs, fetch, decode)`` with
    ``needs`` the ``(tenant, calendars column)`` of the due jobs that observe calendars and
    ``fetch(pairs)`` the rows ``(tenant, name, spec, created_at, updated_at)`` of those names."""

    __slots__ = ("_by_key", "_decode")

    def __init__(self, by_key: dict[tuple[str, str], Calendar], decode: Callable[[Any], Any]) -> None:
        self._by_key = by_key
        self._decode = decode

    @classmethod
    def load(
        cls,
        needs: Sequence[tuple[str, Any]],
        fetch: Callable[[list[list[str]]], Sequence[Any]],
        decode: Callable[[Any], Any],
    ) -> CalendarBook:
        if not needs:
            return cls({}, decode)
        pairs = sorted({(tenant, name) for tenant, names in needs for name in decode(names)})
        by_key = {(r[0], r[1]): calendar_row(r, decode) for r in fetch([list(p) for p in pairs])}
        return cls(by_key, decode)

    def exclusions(self, tenant: str, timezone: str, names: Any) -> Exclusions | None:
        """What excludes a job's ticks (None: nothing). A calendar deleted since is ignored."""
        if names is None:
            return None
        found = [self._by_key[(tenant, n)] for n in self._decode(names) if (tenant, n) in self._by_key]
        return Exclusions(timezone, tuple(found)) if found else None


def calendar_row(r: Any, decode: Callable[[Any], Any]) -> Calendar:
    """A ``(tenant, name, spec, created_at, updated_at)`` row as a Calendar."""
    spec = dict(decode(r[2]))
    spec["name"] = r[1]
    return calendar_from_json(spec, r[0], r[3], r[4])


def calendar_spec_json(cal: Calendar) -> str:
    """What the ``spec`` column holds (the name and tenant are columns of their own)."""
    data = cal.to_json()
    del data["name"], data["tenant"]
    return dumps(data)

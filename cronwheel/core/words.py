"""Counted nouns for what people read: "1 job", "2 jobs", never "1 jobs" or "job(s)". Pure."""

from __future__ import annotations


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun in the right number: ``counted(1, "job")`` is "1 job"."""
    return f"{n} {one if n == 1 else (many or one + 's')}"

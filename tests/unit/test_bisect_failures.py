"""engine.runner.bisect_failures: a failing batch is split down to the items that fail alone."""

from __future__ import annotations

import asyncio

import pytest

from cronwheel.engine.runner import bisect_failures
from cronwheel.store.base import StoreUnavailable


def run(items: list[int], poisoned: set[int]) -> tuple[list[int], list[int], int]:
    """(what was written, what failed alone, how many writes were tried)"""
    tries = 0

    async def attempt(batch: list[int]) -> list[int]:
        nonlocal tries
        tries += 1
        if poisoned & set(batch):
            raise ValueError("a bad row")
        return batch

    failed: list[int] = []

    def alone(item: int, exc: Exception) -> list[int]:
        assert isinstance(exc, ValueError)
        failed.append(item)
        return []

    written = asyncio.run(bisect_failures(items, attempt, lambda a, b: a + b, alone))
    return written, failed, tries


def test_a_clean_batch_is_one_write() -> None:
    assert run(list(range(8)), set()) == (list(range(8)), [], 1)


def test_only_the_poisoned_items_fail_and_the_rest_are_written_in_order() -> None:
    written, failed, tries = run(list(range(16)), {3, 11})
    assert written == [i for i in range(16) if i not in (3, 11)] and failed == [3, 11]
    assert tries <= 1 + 2 * 2 * 4  # a few halvings per poisoned item, not one write per item


def test_an_unreachable_store_is_raised_not_isolated() -> None:
    async def attempt(batch: list[int]) -> list[int]:
        raise StoreUnavailable("down")

    with pytest.raises(StoreUnavailable):
        asyncio.run(bisect_failures([1, 2, 3], attempt, lambda a, b: a + b, lambda i, e: []))

"""Batch observations for prometheus_client histograms."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from prometheus_client import Histogram


def observe_many(histogram: Histogram, amounts: Sequence[float]) -> None:
    """``histogram.observe(a)`` for each of ``amounts``, with one increment per bucket touched
    and one of the sum instead of two locked increments and a bucket scan per value (a herd
    observes every execution's lag and duration). prometheus_client has no batch observe;
    this uses the bucket values its ``observe`` increments, and falls back to ``observe``
    one by one should a release rename them (tests/unit/test_histograms.py compares the
    two)."""
    bounds: Sequence[float] | None = getattr(histogram, "_upper_bounds", None)
    buckets: Sequence[Any] | None = getattr(histogram, "_buckets", None)
    total: Any = getattr(histogram, "_sum", None)
    if bounds is None or buckets is None or total is None or len(bounds) != len(buckets):
        for amount in amounts:
            histogram.observe(amount)
        return
    counts = [0] * len(bounds)
    for amount in amounts:
        counts[bisect_left(bounds, amount)] += 1  # the first bound >= amount, as observe picks
    for bucket, n in zip(buckets, counts, strict=True):
        if n:
            bucket.inc(n)
    total.inc(sum(amounts))

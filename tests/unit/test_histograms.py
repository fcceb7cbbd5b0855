"""obs/histograms.py::observe_many: a batch of observations leaves a prometheus_client histogram
exactly where ``observe`` one by one leaves it (it writes the histogram's own bucket values,
so this is also the test that catches a prometheus_client release that renames them)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram

from cronwheel.obs.histograms import observe_many
from cronwheel.obs.metrics import LAG_BUCKETS

BOUNDS = LAG_BUCKETS


def histogram() -> tuple[CollectorRegistry, Histogram]:
    registry = CollectorRegistry()
    return registry, Histogram("h", "test", ["outcome"], buckets=BOUNDS, registry=registry)


def samples(registry: CollectorRegistry) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for m in registry.collect() for s in m.samples if not s.name.endswith("_created")]


amounts = st.lists(
    st.one_of(st.sampled_from(BOUNDS), st.floats(min_value=-1, max_value=1e4, allow_nan=False), st.just(math.inf)),
    max_size=60,
)


@given(amounts)
def test_a_batch_equals_one_observe_per_amount(values: list[float]) -> None:
    one, h1 = histogram()
    child = h1.labels("succeeded")
    for v in values:
        child.observe(v)
    many, h2 = histogram()
    observe_many(h2.labels("succeeded"), values)
    assert samples(one) == samples(many)


def test_amounts_on_a_bound_count_in_that_bucket() -> None:
    registry, h = histogram()
    observe_many(h.labels("x"), [0.005, 0.005, 0.0051, 600, 601])
    value = lambda le: registry.get_sample_value("h_bucket", {"outcome": "x", "le": le})  # noqa: E731
    assert (value("0.005"), value("0.01"), value("600.0"), value("+Inf")) == (2, 3, 4, 5)
    assert registry.get_sample_value("h_sum", {"outcome": "x"}) == 0.005 + 0.005 + 0.0051 + 600 + 601


def test_without_the_bucket_values_it_observes_one_by_one() -> None:
    class Plain:  # what a histogram whose internals were renamed looks like to observe_many
        def __init__(self) -> None:
            self.seen: list[float] = []

        def observe(self, amount: float) -> None:
            self.seen.append(amount)

    plain = Plain()
    observe_many(plain, [0.5, 2.0])  # type: ignore[arg-type]
    assert plain.seen == [0.5, 2.0]

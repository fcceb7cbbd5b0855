"""The boundary's pure parts: the limits table (and docs/security.md, which prints it), the
text/number/JSON checks, the once-per-interval log limiter and the connection budgets."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cronwheel.core.connections import Budget
from cronwheel.core.limits import (
    LIMITS,
    MAX_INSTANT_MS,
    MAX_JSON_DEPTH,
    json_problem,
    number_problem,
    text_problem,
)
from cronwheel.core.ratelimit import OncePer
from cronwheel.core.schedule import format_instant, parse_schedule

SECURITY = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def test_docs_print_the_limits_table() -> None:
    text = SECURITY.read_text()
    for limit in LIMITS:
        row = f"| {limit.name} | {limit.value} | {limit.applies_to} |"
        assert row in text, f"docs/security.md is missing or has another version of: {row}"
    rows = [line for line in text.split("### Limits", 1)[1].split("\n## ", 1)[0].splitlines() if line.startswith("| ")]
    assert len(rows) == len(LIMITS) + 1, "the table has exactly the limits (and its header)"


def test_text_problems() -> None:
    assert text_problem("plain") is None and text_problem("café ☃ 😀") is None
    assert text_problem("a\x00b") == "a NUL character"
    assert text_problem("x\udc00") == "a lone surrogate (U+DC00) at character 1"
    assert text_problem("\ud83d\ude00") is not None  # a pair as two code points is not UTF-8 either
    assert text_problem("\x1b[2J") is None  # control characters are text (rendered safely)


def test_number_problems() -> None:
    assert number_problem(2**63 - 1) is None and number_problem(-(2**63)) is None and number_problem(True) is None
    assert number_problem(2**63) and number_problem(-(2**63) - 1)
    assert number_problem(float("nan")) and number_problem(float("inf")) and number_problem(1e308) is None


def test_json_problems_name_the_path() -> None:
    bad = json_problem({"a": [1, {"b": "x\udc00"}]})
    assert bad is not None and bad.path == "a[1].b" and bad.malformed
    bad = json_problem({"k\udc00": 1})
    assert bad is not None and bad.path == "k\\udc00" and bad.malformed
    bad = json_problem({"n": [2**64]})
    assert bad is not None and bad.path == "n[0]" and not bad.malformed
    deep: list = []
    for _ in range(MAX_JSON_DEPTH + 1):
        deep = [deep]
    bad = json_problem({"p": deep})
    assert bad is not None and "nested deeper" in bad.why
    assert json_problem({"ok": [1, 2.5, "x", None, True, {"y": []}]}) is None


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00")),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5).filter(lambda k: "\x00" not in k), inner, max_size=3),
                    max_leaves=20))
def test_whatever_passes_fits_every_store_encoding(value: object) -> None:
    if json_problem(value) is None:
        json.dumps(value, allow_nan=False).encode("utf-8")
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")


def test_a_schedule_past_the_last_instant_never_fires() -> None:
    every = parse_schedule("@every 100000000d", "j1")
    assert every.next_after(0) is None
    assert parse_schedule("@every 1d", "j1").next_after(MAX_INSTANT_MS - 1) is None
    assert format_instant(MAX_INSTANT_MS).startswith("9900-01-01")


def test_once_per_interval_counts_what_it_held_back() -> None:
    limiter = OncePer(10.0, max_keys=2)
    assert limiter.allow("a", 0.0) and limiter.suppressed == 0
    assert not limiter.allow("a", 1.0) and not limiter.allow("a", 2.0)
    assert limiter.allow("b", 3.0)
    assert limiter.allow("a", 10.5) and limiter.suppressed == 2
    limiter.allow("c", 11.0)  # a third key: the oldest is forgotten
    assert limiter.allow("b", 12.0)


def test_a_budget_in_all_and_per_client() -> None:
    budget = Budget(total=3, per_client=2)
    assert budget.admit("10.0.0.1") is None and budget.admit("10.0.0.1") is None
    assert budget.admit("10.0.0.1") == "per_client"
    assert budget.admit("10.0.0.2") is None
    assert budget.admit("10.0.0.3") == "total"
    budget.release("10.0.0.1")
    assert budget.admit("10.0.0.3") is None and budget.open == 3 and budget.clients() == 3
    assert dict(budget.refused) == {"per_client": 1, "total": 1}


def test_scrubbed_text_may_enter() -> None:
    from cronwheel.core.limits import scrub_text

    assert scrub_text("fine ☃") == "fine ☃"
    assert scrub_text("a\x00b\udc80c") == "a\ufffdb\ufffdc"
    assert text_problem(scrub_text("\udfff\x00\ud800")) is None

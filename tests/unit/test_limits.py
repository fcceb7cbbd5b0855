"""The boundary's pure parts: the limits table (and docs/security.md, which prints it), the
text/number/JSON checks, the once-per-interval log limiter and the connection budgets."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cronwheel.core.connections import Budget
from cronwheel.core.instants import format_instant
from cronwheel.core.limits import (
    LIMITS,
    MAX_INSTANT_MS,
    MAX_JSON_DEPTH,
    JsonTextError,
    json_problem,
    loads_checked,
    number_problem,
    text_problem,
)
from cronwheel.core.ratelimit import OncePer
from cronwheel.core.schedule import parse_schedule

ROOT = Path(__file__).resolve().parents[2]
SECURITY = ROOT / "docs" / "security.md"
#: bounds that live beside their code, not in the table, and why: none of them bounds what a
#: request body, a header or a worker frame may carry
NOT_INPUT_BOUNDS = {
    "MAX_UPCOMING", "MAX_TAIL",  # how many rows a query string asks for (a read, not a write)
    "MISFIRE_RUN_ALL_CAP", "MIN_EXTRA_MS", "MAX_BACKFILL_SCAN",  # how the scheduler plans, not input
    "MAX_STEP",  # the cron syntax itself
    "MAX_EVENT_DAYS",  # an .ics file the CLI reads, before any request
    "MAX_WINDOW_S",  # the herd preview's own check (the API bounds its query string)
    "MAX_CHUNK", "MIN_INTERVAL", "MIN_SEND",  # live output's flow control
}


def test_docs_print_the_limits_table() -> None:
    text = SECURITY.read_text()
    for limit in LIMITS:
        row = f"| {limit.name} | {limit.value} | {limit.applies_to} |"
        assert row in text, f"docs/security.md is missing or has another version of: {row}"
    rows = [line for line in text.split("### Limits", 1)[1].split("\n## ", 1)[0].splitlines() if line.startswith("| ")]
    assert len(rows) == len(LIMITS) + 1, "the table has exactly the limits (and its header)"


def test_every_input_bound_is_in_the_one_table() -> None:
    """No bound of what may enter is defined beside its code (a second MAX_URL_CHARS, a
    retryPolicy range written inline): api/ and core/ take them from core/limits.py, whose
    LIMITS docs/security.md prints."""
    bound = re.compile(r"^(MAX|MIN)_|_RANGE(_MS)?$")
    stray = []
    for path in sorted([*(ROOT / "cronwheel" / "api").rglob("*.py"), *(ROOT / "cronwheel" / "core").rglob("*.py")]):
        if path.name == "limits.py":
            continue
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for t in targets:
                if isinstance(t, ast.Name) and bound.search(t.id) and t.id not in NOT_INPUT_BOUNDS:
                    stray.append(f"{path.relative_to(ROOT)}: {t.id}")
    assert stray == [], "bounds outside core/limits.py (move them there and into LIMITS): " + ", ".join(stray)


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


def test_a_connection_vouched_for_counts_against_its_caller_not_its_address() -> None:
    """Tenants behind one address: a connection leaves its address's budget once a request
    on it is authenticated, and spends its caller's instead (another caller's request on a
    proxy's pooled connection moves it)."""
    budget = Budget(total=10, per_client=2, per_caller=2)
    assert budget.admit("nat") is None and budget.admit("nat") is None
    assert budget.admit("nat") == "per_client"
    assert budget.vouch("nat", None, "noisy") is None and budget.vouch("nat", None, "noisy") is None
    assert budget.clients() == 0 and budget.held_by("noisy") == 2
    assert budget.admit("nat") is None and budget.admit("nat") is None  # the address's budget is free again
    assert budget.vouch("nat", None, "noisy") == "per_caller"  # still counted against the address
    assert budget.vouch("nat", "noisy", "noisy") is None  # its own connection, again
    assert budget.vouch("nat", None, "quiet") is None and budget.held_by("quiet") == 1
    assert budget.vouch("proxy", "quiet", "other") is None and budget.held_by("quiet") == 0
    budget.release("nat", "noisy")
    budget.release("nat", None)
    assert budget.held_by("noisy") == 1 and budget.open == 2 and budget.clients() == 0
    assert dict(budget.refused) == {"per_client": 1, "per_caller": 1}


def test_scrubbed_text_may_enter() -> None:
    from cronwheel.core.limits import scrub_text

    assert scrub_text("fine ☃") == "fine ☃"
    assert scrub_text("a\x00b\udc80c") == "a\ufffdb\ufffdc"
    assert text_problem(scrub_text("\udfff\x00\ud800")) is None


def test_a_name_given_twice_in_one_object_is_refused() -> None:
    """Python keeps the last of two equal names, other readers the first: a proxy and the
    daemon would read different requests."""
    for text, name in (('{"name": "a", "name": "b"}', "name"), ('[{"x": 1}, {"y": {"z": 1, "z": 1}}]', "z"),
                       ('{"\\udc00": 1, "\\udc00": 2}', "\\udc00")):
        with pytest.raises(JsonTextError, match=re.escape(f"the name {name!r} is given twice")):
            loads_checked(text)
    assert loads_checked('[{"a": 1}, {"a": 2}, {"b": {"a": 3}}]') == [{"a": 1}, {"a": 2}, {"b": {"a": 3}}]


def test_a_leading_byte_order_mark_is_named_in_the_api_s_words() -> None:
    """Python's own message would tell the sender to "decode using utf-8-sig", which is the
    reader's codec, not something a client can act on."""
    with pytest.raises(JsonTextError, match=r"starts with a byte-order mark \(U\+FEFF\): send it without one") as caught:
        loads_checked('\ufeff{"name": "a"}')
    assert "utf-8-sig" not in str(caught.value)

"""core.words: counted nouns, and argv's text checked and shown as it was given."""

from __future__ import annotations

from cronwheel.core.words import (
    as_given,
    counted,
    did_you_mean,
    is_sendable,
    is_utf8,
    without_byte_order_mark,
)

NOT_UTF8 = b"job-\xff".decode("utf-8", "surrogateescape")  # as argv's bytes arrive in Python


def test_counted_nouns() -> None:
    assert [counted(n, "job") for n in (0, 1, 2)] == ["0 jobs", "1 job", "2 jobs"]
    assert counted(2, "child", "children") == "2 children"


def test_text_that_cannot_be_sent_as_typed() -> None:
    assert is_utf8("café ☕") and not is_utf8(NOT_UTF8)
    assert is_sendable("http://127.0.0.1:7878/café")
    assert not is_sendable(NOT_UTF8) and not is_sendable("http://host\n:1") and not is_sendable("a\x1bb")


def test_refusals_show_the_bytes_and_controls_as_escapes() -> None:
    assert as_given(NOT_UTF8) == "job-\\xff"
    assert as_given("a\nb\x1b") == "a\\nb\\x1b"
    assert as_given("x" * 200, 80) == "x" * 80


def test_only_a_leading_byte_order_mark_is_taken_away() -> None:
    assert without_byte_order_mark("\ufeffa = 1\n") == "a = 1\n"
    assert without_byte_order_mark("a\ufeff\n\ufeffb") == "a\ufeff\n\ufeffb"
    assert without_byte_order_mark("\ufeff\ufeffa") == "\ufeffa"  # one mark, not a run of them
    assert without_byte_order_mark("") == ""


def test_did_you_mean_names_the_close_choice_whatever_its_case_or_separators() -> None:
    fields = ["schedule", "command", "maxAttempts", "retryPolicy"]
    assert did_you_mean("schedul", fields) == " (did you mean 'schedule'?)"
    assert did_you_mean("max_attemps", fields) == " (did you mean 'maxAttempts'?)"
    assert did_you_mean("retry-policy", fields) == " (did you mean 'retryPolicy'?)"
    assert did_you_mean("zzz", fields) == ""
    # another scheduler's word for a member, too far for a typo's closeness: offered only where
    # that member is one of the choices
    assert did_you_mean("retries", fields) == " (did you mean 'retryPolicy'?)"
    assert did_you_mean("max_retries", fields) == " (did you mean 'retryPolicy'?)"
    assert did_you_mean("cron", fields) == " (did you mean 'schedule'?)"
    assert did_you_mean("retries", ["maxAttempts", "multiplier"]) == ""
    # names that differ by case or separator only are both offered, up to n
    assert did_you_mean("backup", ["back-up", "back_up"], n=3) == " (did you mean 'back-up' or 'back_up'?)"

"""How a run's failure is worded: a python target that does not load, or raises, names its
cause first, and its output is the traceback through the user's own frames."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cronwheel.core.model import Grant, Priority
from cronwheel.worker.results import Result, cause_text, raised, user_traceback
from cronwheel.worker.targets import TargetRunner, load_callable

T0 = 1_767_225_600_000


class QuotaError(Exception):
    pass


def _run_python(spec: str, payload: str | None = None) -> Result:
    """The result of a run of the python target ``spec``, as a worker runs it."""
    g = Grant(f"j:{T0}", "j", "t", Priority.DEFAULT, T0, 1, 1, T0 + 60_000, 60, 5, {"python": spec}, payload)

    async def main() -> Result:
        runner = TargetRunner("w", 1)
        try:
            return await runner.run_python(g, spec)
        finally:
            await runner.close()

    return asyncio.run(main())


def test_the_cause_is_one_line_named_as_a_traceback_ends() -> None:
    assert cause_text(ValueError("two\n   lines")) == "ValueError: two lines"
    assert cause_text(RuntimeError()) == "RuntimeError"
    assert cause_text(QuotaError("over")) == f"{__name__}.QuotaError: over"
    assert len(cause_text(ValueError("x" * 100_000))) == 8 * 1024


def test_a_module_that_raises_on_import_keeps_its_frames_and_loses_the_loaders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "raises_on_import_cw.py").write_text(
        "def read_config():\n    raise RuntimeError('no config file')\n\n\nread_config()\n\n\ndef f():\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    r = _run_python("raises_on_import_cw:f")
    assert (r.outcome, r.error) == ("failed", "cannot load raises_on_import_cw:f: RuntimeError: no config file")
    assert r.output is not None
    lines = r.output.splitlines()
    assert lines[0] == "Traceback (most recent call last):" and lines[-1] == "RuntimeError: no config file"
    assert [line.split(", in ")[-1] for line in lines if line.startswith("  File ")] == ["<module>", "read_config"]
    assert "cronwheel" not in r.output and "importlib" not in r.output


def test_a_name_that_is_not_there_needs_no_output() -> None:
    r = _run_python("os:nonexistent_fn")
    assert r.error == "cannot load os:nonexistent_fn: AttributeError: module 'os' has no attribute 'nonexistent_fn'"
    assert r.output is None


def _user_code(payload: str) -> None:
    if payload != "good":
        raise ValueError("bad input")


def _asks_the_store() -> None:
    # the user's code calling into cronwheel (a client, a helper), which raises there
    load_callable("no colon")


def test_a_callable_that_raises_fails_with_the_exception_and_its_own_frames() -> None:
    """Called as a worker calls it (through cronwheel's call threads and asyncio): those
    frames go, the callable's stay."""
    r = _run_python(f"{__name__}:_user_code", payload="bad")
    assert (r.outcome, r.error) == ("failed", "ValueError: bad input")
    assert r.output is not None
    lines = r.output.splitlines()
    assert lines[0] == "Traceback (most recent call last):" and lines[-1] == "ValueError: bad input"
    assert [line.split(", in ")[-1] for line in lines if line.startswith("  File ")] == ["_user_code"]


def test_cronwheel_frames_the_users_code_calls_are_the_users() -> None:
    r = _run_python(f"{__name__}:_asks_the_store")
    assert r.error == "ValueError: python target must be 'module:function', not 'no colon'"
    assert r.output is not None
    assert [line.split(", in ")[-1] for line in r.output.splitlines() if line.startswith("  File ")] == [
        "_asks_the_store", "load_callable",
    ]


def test_no_frame_of_the_users_is_no_output_and_another_callers_frames_all_stay() -> None:
    r = raised(KeyError("k"))
    assert (r.error, r.output) == ("KeyError: 'k'", None)
    with pytest.raises(ValueError) as caught:  # caught by another caller: its frames are its own
        _user_code("bad")
    assert user_traceback(caught.value) is not None

"""How a run's failure is worded: a python target that does not load names its cause first."""

from __future__ import annotations

from pathlib import Path

import pytest

from cronwheel.worker.results import cause_text, not_loaded
from cronwheel.worker.targets import load_callable


class QuotaError(Exception):
    pass


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
    with pytest.raises(RuntimeError) as caught:
        load_callable("raises_on_import_cw:f")
    r = not_loaded("raises_on_import_cw:f", caught.value)
    assert (r.outcome, r.error) == ("failed", "cannot load raises_on_import_cw:f: RuntimeError: no config file")
    assert r.output is not None
    lines = r.output.splitlines()
    assert lines[0] == "Traceback (most recent call last):" and lines[-1] == "RuntimeError: no config file"
    assert [line.split(", in ")[-1] for line in lines if line.startswith("  File ")] == ["<module>", "read_config"]
    assert "cronwheel" not in r.output and "importlib" not in r.output


def test_a_name_that_is_not_there_needs_no_output() -> None:
    with pytest.raises(AttributeError) as caught:
        load_callable("os:nonexistent_fn")
    r = not_loaded("os:nonexistent_fn", caught.value)
    assert r.error == "cannot load os:nonexistent_fn: AttributeError: module 'os' has no attribute 'nonexistent_fn'"
    assert r.output is None

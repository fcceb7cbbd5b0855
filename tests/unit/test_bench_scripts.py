"""The benchmarks are not tests; this only checks that `make bench`'s entry point and the
peer scripts' shared helpers load and answer --help (no peer packages needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_run_quick_help() -> None:
    out = subprocess.run([sys.executable, str(BENCH / "run_quick.py"), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "bench_spike.py" in out.stdout


def test_run_quick_refuses_an_unknown_step() -> None:
    out = subprocess.run([sys.executable, str(BENCH / "run_quick.py"), "--only", "nope"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "unknown step(s) nope" in out.stderr


def test_common_table_and_ratio() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import _common
    finally:
        sys.path.remove(str(BENCH))
    assert _common.ratio(1.0, 4.0) == "0.25×"
    assert _common.ratio(1.0, None) == "–"
    assert _common.pct([1, 2, 3, 4], 0.5) == 3.0
    text = _common.table("", ["what", "n"], [["a", "1"], ["bb", "22"]])
    assert text.splitlines() == ["| what |  n |", "|------|---:|", "| a    |  1 |", "| bb   | 22 |"]

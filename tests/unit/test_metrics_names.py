"""Metric names: bounded labels, and docs/operations.md (its alert rules) uses exactly the
names the code exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cronwheel.obs.metrics import METRIC_NAMES, skip_reason, skipped_ticks

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


@pytest.mark.parametrize(
    ("reason", "label", "ticks"),
    [
        ("overlap: j1:100 still running", "overlap", 1),
        ("overlap: replaced by j1:200", "overlap", 1),
        ("misfire: 1 tick skipped at 2026-01-01T00:00:00Z", "misfire", 1),
        ("misfire: at least 1000 ticks skipped from a to b", "misfire", 1000),
        ("misfire: 7 ticks skipped from a to b", "misfire", 7),
        ("calendar: holidays", "calendar", 1),
        ("something new", "other", 1),
        (None, "other", 1),
    ],
)
def test_skip_reasons_are_a_bounded_label(reason: str | None, label: str, ticks: int) -> None:
    assert skip_reason(reason) == label
    assert skipped_ticks(reason) == ticks


def test_the_operations_doc_uses_exactly_the_exported_names() -> None:
    text = DOC.read_text()
    used = {re.sub(r"_(bucket|count|sum)$", "", m) for m in re.findall(r"\bcronwheel_[a-z_]+", text)}
    assert used - set(METRIC_NAMES) == set(), "docs/operations.md names metrics the code does not export"
    assert set(METRIC_NAMES) - used == set(), "exported metrics missing from docs/operations.md"
    rules = text.split("### Alert rules", 1)[1].split("## Running under systemd", 1)[0]
    for name in ("cronwheel_dispatch_lag_seconds_bucket", "cronwheel_dead_lettered_total", "cronwheel_dlq_size",
                 "cronwheel_lease_expirations_total", "cronwheel_queue_depth"):
        assert name in rules, f"the SLO alert on {name} is missing"


def test_the_alert_rules_load_in_prometheus(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    rules = next(b for b in blocks if b.startswith("groups:"))
    (tmp_path / "rules.yml").write_text(rules)
    res = subprocess.run([promtool, "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr

"""Metric names: bounded labels, and docs/operations.md (its alert rules) uses exactly the
names the code exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from itertools import product
from pathlib import Path
from types import SimpleNamespace

import pytest

from cronwheel.core.connections import Budget
from cronwheel.obs.metrics import METRIC_NAMES, skip_reason, skipped_ticks
from tests.support.promtool import promtool_or_skip
from tests.unit.test_node_metrics import setup

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
#: `promtool test rules` cases for the alert rules (beside them as rules.yml)
RULE_TESTS = Path(__file__).resolve().parents[1] / "data" / "alert_rules_test.yml"


@pytest.mark.parametrize(
    ("reason", "label", "ticks"),
    [
        ("overlap: j1:100 still running", "overlap", 1),
        ("overlap: replaced by j1:200", "overlap", 1),
        ("misfire: 1 tick skipped at 2026-01-01T00:00:00Z", "misfire", 1),
        ("misfire: at least 1000 ticks skipped from a to b", "misfire", 1000),
        ("misfire: 7 ticks skipped from a to b", "misfire", 7),
        ("calendar: holidays", "calendar", 1),
        ("backlog: 100 runs of this job are overdue and waiting to start", "backlog", 1),
        ("backlog: 100 runs of this job are overdue and waiting to start; 60 ticks skipped from a to b", "backlog", 60),
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
                 "cronwheel_lease_expirations_total", "cronwheel_queue_depth",
                 # the notifications' and the dead-man's switch's: what tells you about failures
                 "cronwheel_notifications_delivered_total", "cronwheel_overdue_jobs", "cronwheel_windows_missed_total"):
        assert name in _expressions(rules), f"no alert rule's expression uses {name}"


def _expressions(rules: str) -> str:
    """The ``expr:`` of every rule (a ``|`` block: its more-indented lines), not the comments
    and annotations around them: a sentence naming a metric is no alert on it."""
    out, block_indent = [], None
    for line in rules.splitlines():
        indent = len(line) - len(line.lstrip())
        if block_indent is not None and line.strip() and indent > block_indent:
            out.append(line.strip())
            continue
        block_indent = None
        m = re.match(r"\s*expr:\s*(.*)$", line)
        if m:
            if m.group(1).strip() == "|":
                block_indent = indent
            else:
                out.append(m.group(1))
    return "\n".join(out)


def _rules() -> str:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    return next(b for b in blocks if b.startswith("groups:"))


def test_the_alert_rules_load_in_prometheus(tmp_path: Path) -> None:
    promtool = promtool_or_skip()
    (tmp_path / "rules.yml").write_text(_rules())
    res = subprocess.run([promtool, "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_alert_rules_fire_when_they_should(tmp_path: Path) -> None:
    """Among the cases: a backlog-skip series Prometheus first sees above 0 still fires, though
    increase() takes a series' first sample as its base (it did not: the label was exported
    only once the first skips came, all at once)."""
    promtool = promtool_or_skip()
    (tmp_path / "rules.yml").write_text(_rules())
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    res = subprocess.run([promtool, "test", "rules", RULE_TESTS.name], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def _documented_counter_labels() -> list[tuple[str, dict[str, list[str]]]]:
    """Each counter of the metrics table, with the values it lists per label (``a = x, y; b = z``,
    the names in backticks; a label listed without values is left out, and a counter none of
    whose labels lists values too)."""
    table = DOC.read_text().split("| Metric | Type | Labels | Meaning |", 1)[1].split("\n\n", 1)[0]
    out = []
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) < 3 or cells[1] != "counter":
            continue
        labels = {}
        for part in cells[2].split(";"):
            m = re.search(r"`(\w+)`\s*=\s*(.+)$", part)
            if m:
                labels[m.group(1)] = [v.strip() for v in m.group(2).split(",")]
        if labels or not cells[2]:  # an open set (event names) has nothing to export at first
            out.append((cells[0].strip("`"), labels))
    return out


def test_every_documented_label_value_of_a_counter_is_exported_at_0_from_the_start() -> None:
    """An alert on increase(...{reason="backlog"}) missed a node's first backlog skips: the
    series was exported only once they came, and its first sample is no increase."""
    _, m = setup()
    budget = Budget(total=1, per_client=1, per_caller=1)
    m.http_guard = SimpleNamespace(tcp=budget, local=budget, header_timeouts=0, forwarded_invalid=0)
    counters = _documented_counter_labels()
    assert "cronwheel_skipped_ticks_total" in dict(counters)
    for name, labels in counters:
        for values in product(*labels.values()):
            wanted = dict(zip(labels, values, strict=True))
            found = [s for f in m.registry.collect() for s in f.samples
                     if s.name == name and wanted.items() <= s.labels.items()]  # fmt: skip
            assert found and all(s.value == 0 for s in found), f"{name} {wanted}: {found}"

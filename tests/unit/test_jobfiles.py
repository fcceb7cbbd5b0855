"""Job files (pure): parsing with file/line errors, the plan against a tenant's jobs (matched
by name, compared by meaning, prune limited to apply's own), and TOML written back that parses
to the same bodies."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from cronwheel.api.validation import JOB_FIELDS, parse_job_body
from cronwheel.core import jobfiles
from cronwheel.core.config import ConfigError
from cronwheel.core.crontab_export import job_request

NOW = 1_796_000_000_000


def normalise(body: dict[str, Any]) -> Any:
    return parse_job_body(body, now_ms=NOW)


def api_job(job_id: str, name: str, managed: bool = True, status: str = "ACTIVE", **body: Any) -> dict[str, Any]:
    """An API job object as GET /v1/jobs returns it (defaults filled in)."""
    spec = normalise(body)
    target = spec.target
    return {
        "jobId": job_id, "name": name, "status": status, "tenant": "default", "schedule": spec.schedule,
        "runAt": None, "timezone": spec.timezone, "target": target, "payload": spec.payload,
        "retryPolicy": spec.retry.to_json(), "timeoutSec": spec.timeout_sec, "leaseSec": spec.lease_sec,
        "priority": spec.priority.label, "overlap": spec.overlap.value, "misfire": spec.misfire.value,
        "jitterSec": spec.jitter_sec, "managedBy": "apply" if managed else None,
    }


def parse(text: str) -> list[jobfiles.JobDef]:
    return jobfiles.parse_job_file(text, "jobs.toml", JOB_FIELDS)


def test_a_file_is_one_table_per_named_job() -> None:
    jobs = parse('# c\n[backup]\nschedule = "0 3 * * *"\ncommand = "b"\n\n["nightly report"]\nschedule = "@daily"\npython = "m:f"\n')
    assert [(j.name, j.line) for j in jobs] == [("backup", 2), ("nightly report", 6)]
    assert jobs[0].body == {"schedule": "0 3 * * *", "command": "b"}


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ('[a]\nschedule = "@daily"\ncomand = "x"\n', 3, "unknown field (did you mean 'command'?); the fields are"),
        ('[a]\nschedul = "@daily"\ncommand = "x"\n', 2, "unknown field (did you mean 'schedule'?)"),
        ('[a]\nschedule = "@daily"\ncommand = "x"\nzzz = 1\n', 4, "unknown field; the fields are"),
        # a job written as a sub-table of a group, as some tools write their resources
        ('[job.nightly]\nschedule = "@daily"\n', 1, "unknown field; [job.nightly] holds the fields of a job: write it as "
         "[nightly], a table of its own (the table's name is the job's name)"),
        ('[a]\nname = "b"\n', 2, "the table's name is the job's name"),
        ('[a]\nmanagedBy = "me"\n', 2, "apply sets it"),
        ('a = 1\n', 1, "is not a job"),
        ('[a]\nrunAt = "+10m"\ncommand = "x"\n', 2, "relative runAt"),
        ('[a]\nschedule = "@daily\n', 2, "not valid TOML"),
    ],
)
def test_problems_name_the_file_and_line(text: str, line: int, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse(text)
    assert err.value.line == line and says in str(err.value) and str(err.value).startswith(f"jobs.toml:{line}:")


def test_a_leading_byte_order_mark_is_read_past_and_lines_still_count_from_it() -> None:
    """Editors on Windows save UTF-8 with a byte-order mark; the TOML reader alone would call
    line 1 an invalid statement."""
    assert [(j.name, j.line) for j in parse('\ufeff[backup]\nschedule = "@daily"\ncommand = "b"\n')] == [("backup", 1)]
    with pytest.raises(ConfigError) as err:
        parse('\ufeff[a]\nschedule = "@daily"\ncomand = "x"\n')
    assert err.value.line == 3


def test_a_name_defined_twice_is_refused() -> None:
    a = jobfiles.JobDef("x", {}, "a.toml", 3)
    b = jobfiles.JobDef("x", {}, "b.toml", 7)
    with pytest.raises(ConfigError, match=r"b.toml:7: key 'x': job 'x' is defined twice \(first at a.toml:3\)"):
        jobfiles.check_unique([a, b])


def _plan(desired_text: str, existing: list[dict[str, Any]], prune: bool = False, adopt: bool = False) -> list[jobfiles.Change]:
    return jobfiles.plan(parse(desired_text), existing, job_request, normalise, prune, adopt)


def test_defaults_written_or_left_out_are_no_change() -> None:
    existing = [api_job("j1", "a", schedule="@daily", command="x")]
    plan = _plan('[a]\nschedule = "@daily"\ncommand = "x"\ntimeoutSec = 3600\npriority = "default"\n', existing)
    assert [(c.action, c.job_id) for c in plan] == [("unchanged", "j1")]


def test_an_update_is_a_merge_patch_naming_what_changed() -> None:
    existing = [api_job("j1", "a", schedule="@daily", command="x", timeoutSec=60)]
    (change,) = _plan('[a]\nschedule = "@hourly"\nhttp = { url = "https://e.example/" }\n', existing)
    assert (change.action, change.job_id) == ("update", "j1")
    assert change.body is not None
    assert change.body["schedule"] == "@hourly" and change.body["http"] == {"url": "https://e.example/"}
    assert change.body["command"] is None and change.body["timeoutSec"] is None  # null removes
    assert set(change.fields) == {"schedule", "http", "command", "timeoutSec"}


def test_create_carries_the_name_and_the_owner() -> None:
    (change,) = _plan('[new]\nschedule = "@daily"\ncommand = "x"\n', [])
    assert change.action == "create" and change.body == {"schedule": "@daily", "command": "x", "name": "new", "managedBy": "apply"}


def test_prune_deletes_only_live_jobs_that_apply_manages() -> None:
    existing = [
        api_job("j1", "kept", schedule="@daily", command="x"),
        api_job("j2", "gone", schedule="@daily", command="x"),
        api_job("j3", "byhand", managed=False, schedule="@daily", command="x"),
        api_job("j4", "old", status="CANCELLED", schedule="@daily", command="x"),
        api_job("j5", "paused", status="PAUSED", schedule="@daily", command="x"),
    ]
    plan = _plan('[kept]\nschedule = "@daily"\ncommand = "x"\n', existing, prune=True)
    assert sorted((c.action, c.name) for c in plan) == [("delete", "gone"), ("delete", "paused"), ("unchanged", "kept")]
    assert [c.action for c in _plan('[kept]\nschedule = "@daily"\ncommand = "x"\n', existing)] == ["unchanged"]


def test_a_job_made_by_hand_is_taken_over_only_with_adopt() -> None:
    existing = [api_job("j3", "byhand", managed=False, schedule="@daily", command="x")]
    with pytest.raises(ValueError, match="--adopt"):
        _plan('[byhand]\nschedule = "@daily"\ncommand = "x"\n', existing)
    (change,) = _plan('[byhand]\nschedule = "@daily"\ncommand = "x"\n', existing, adopt=True)
    assert (change.action, change.body) == ("adopt", {"managedBy": "apply"})


def test_written_toml_parses_back_to_the_same_body() -> None:
    body = {"schedule": "0 3 * * *", "timezone": "Europe/Paris", "command": 'echo "hi"\n\tthere\x7f \\ ü',
            "payload": {"a": [1, 2.5, True, "x"], "nested key": {"b": "c"}}, "retryPolicy": {"maxAttempts": 5}}
    text = jobfiles.job_table("my job", body)
    assert tomllib.loads(text) == {"my job": body}
    with pytest.raises(jobfiles.NotToml):
        jobfiles.job_table("x", {"schedule": "@daily", "command": "x", "payload": {"a": None}})


def test_compact_drops_only_defaults() -> None:
    full = job_request(api_job("j1", "a", schedule="@daily", command="x", jitterSec=5))
    full.pop("name")
    assert jobfiles.compact(full, normalise) == {"schedule": "@daily", "command": "x", "jitterSec": 5}


def test_compact_keeps_a_field_the_body_cannot_do_without() -> None:
    # a watched job (a ping target) has no schedule: without its window it is refused
    watched = {"expectSuccessWithin": "26h", "timeoutSec": 3600}
    assert jobfiles.compact(watched, normalise) == {"expectSuccessWithin": "26h"}


def test_webhook_rules_compare_by_rule_id_not_by_the_hidden_secret() -> None:
    from cronwheel.core import notify as nt

    hook = {"on": "failure", "via": "webhook", "url": "https://u:pw@hooks.example/cw", "secret": "0123456789abcdef"}
    file_body = {"schedule": "@daily", "command": "x", "notify": [hook]}
    live = api_job("j1", "hooked", **file_body)
    live["notify"] = [nt.rule_from_json(hook).to_json(redact=True)]  # as an answer shows it
    assert live["notify"][0]["secret"] == "********"
    same = jobfiles.by_rule_identity(lambda r: nt.rule_from_json(r).rule_id, normalise)
    as_live = lambda j: job_request(j, webhooks=True)  # noqa: E731
    (change,) = jobfiles.plan([jobfiles.JobDef("hooked", file_body, "f", 1)], [live], as_live, same, prune=False)
    assert change.action == "unchanged"
    other = {**file_body, "notify": [{**hook, "maxPerHour": 3}]}
    (change,) = jobfiles.plan([jobfiles.JobDef("hooked", other, "f", 1)], [live], as_live, same, prune=False)
    assert change.action == "update" and change.fields == ["notify"] and change.body["notify"] == other["notify"]


@pytest.mark.parametrize("settled", ["SUCCEEDED", "FAILED"])
def test_a_one_off_that_ran_is_not_created_again(settled: str) -> None:
    done = api_job("j1", "once", status=settled, runAt="2026-12-01T10:00:00Z", command="x")

    done["runAt"], done["schedule"] = "2026-12-01T10:00:00.000Z", None
    text = '[once]\nrunAt = "2026-12-01T10:00:00Z"\ncommand = "x"\n'
    assert [(c.action, c.job_id) for c in _plan(text, [done])] == [("unchanged", "j1")]
    changed = '[once]\nrunAt = "2026-12-02T10:00:00Z"\ncommand = "x"\n'
    assert [c.action for c in _plan(changed, [done])] == ["create"]
    assert [c.action for c in _plan(text, [{**done, "managedBy": None}])] == ["create"]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[b]\nschedule = "@daily"\ncommand = "x"\n[b.retryPolicy]\ninitialBackoffSec = 1\nmax_attemps = 5\n', 6),
        ('[b]\nschedule = "@daily"\ncommand = "x"\nretryPolicy.max_attemps = 5\n', 4),
        ('[b]\nschedule = "@daily"\ncommand = "x"\ntimeoutSec = 1\nretryPolicy = { maxAttempts = 0 }\n', 5),
        ('[b]\nschedule = "@daily"\ncommand = "x"\n[b.retryPolicy]\nmaxAttempts = 0\n', 5),
        ('[a]\nschedule = "@daily"\ncommand = "y"\n[b]\nschedule = "@daily"\ncommand = "x"\nnotify = [{ on = "dead", via = "pager" }]\n', 7),
    ],
)
def test_a_nested_field_s_problem_names_its_own_line(tmp_path: Path, text: str, line: int) -> None:
    """A mistake inside a job's sub-table ([b.retryPolicy]), dotted key or inline table was
    reported at the job's [b] line."""
    from cronwheel.cli.jobs_as_code import read_job_files

    path = tmp_path / "jobs.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        read_job_files([path])
    assert err.value.line == line, str(err.value)

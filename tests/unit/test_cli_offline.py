"""The CLI without a daemon: pure schedule evaluation, precise usage errors, and the
'no daemon' exit (69) with a message that says how to start one."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from cronwheel.cli.context import default_data_dir
from cronwheel.cli.exits import EX_UNAVAILABLE
from cronwheel.cli.main import cli
from cronwheel.core.schedule import parse_instant

FROM = "2026-01-01T00:00:00Z"


@pytest.fixture
def nowhere(tmp_path: Path) -> str:
    return f"unix:{tmp_path / 'no-daemon.sock'}"


def invoke(*args: str, url: str | None = None, env: dict[str, str] | None = None) -> Result:
    base = {"CRONWHEEL_URL": url or "", "CRONWHEEL_DATA_DIR": "", "STATE_DIRECTORY": "",
            "CRONWHEEL_EXECUTION_ID": "", "CRONWHEEL_LEASE_EPOCH": "", "CRONWHEEL_WORKER_ID": ""}
    runner = CliRunner()
    return runner.invoke(cli, list(args), env={k: (v or None) for k, v in {**base, **(env or {})}.items()})


# ---------------------------------------------------------------- next: no daemon needed


def test_next_cron_in_utc(nowhere: str) -> None:
    r = invoke("next", "0 3 * * 1-5", "-n", "3", "--from", FROM, "--json", url=nowhere)
    assert r.exit_code == 0, r.output
    # 2026-01-01 is a Thursday
    assert json.loads(r.stdout) == ["2026-01-01T03:00:00.000Z", "2026-01-02T03:00:00.000Z", "2026-01-05T03:00:00.000Z"]


def test_next_with_a_time_zone_and_plain_output(nowhere: str) -> None:
    r = invoke("next", "0 9 * * *", "--tz", "Europe/Paris", "-n", "2", "--from", FROM, url=nowhere)
    assert r.exit_code == 0, r.output
    lines = r.stdout.strip().splitlines()
    assert lines == ["2026-01-01 09:00:00 CET  2026-01-01T08:00:00.000Z", "2026-01-02 09:00:00 CET  2026-01-02T08:00:00.000Z"]


def test_next_macro_every_and_instants(nowhere: str) -> None:
    r = invoke("next", "@daily", "-n", "1", "--from", FROM, "--json", url=nowhere)
    assert json.loads(r.stdout) == ["2026-01-02T00:00:00.000Z"]
    r = invoke("next", "@every 90s", "-n", "3", "--from", FROM, "--json", url=nowhere)
    assert r.exit_code == 0, r.output
    fires = json.loads(r.stdout)
    assert len(fires) == 3 and "hash the job id" in r.stderr
    r = invoke("next", "2026-06-01T12:00:00+02:00", "--from", FROM, "--json", url=nowhere)
    assert json.loads(r.stdout) == ["2026-06-01T10:00:00.000Z"]
    r = invoke("next", "+90s", "--from", "+0s", "--json", url=nowhere)
    assert r.exit_code == 0 and len(json.loads(r.stdout)) == 1
    r = invoke("next", "2020-01-01T00:00:00Z", "--from", FROM, url=nowhere)
    assert r.exit_code == 0 and "never fires" in r.stderr


def test_next_hashed_cron_warns_about_the_example_id(nowhere: str) -> None:
    r = invoke("next", "H H * * *", "--from", FROM, url=nowhere)
    assert r.exit_code == 0 and "example id" in r.stderr
    r = invoke("next", "0 * * * THU", "--from", FROM, url=nowhere)
    assert "example id" not in r.stderr


def test_a_url_or_token_that_cannot_be_sent_is_refused_in_words(nowhere: str) -> None:
    for url, shown in (("http://\udcff:7878", "'http://\\xff:7878'"), ("http://a\nb:7878", "'http://a\\nb:7878'")):
        r = invoke("ls", url=url)
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        assert f"the daemon URL must be http://HOST:PORT or unix:/PATH, not {shown}" in r.stderr, r.stderr
    for token in ("\udcff", "tok\nen", "café"):
        r = invoke("--token", token, "ls", url=nowhere)
        assert r.exit_code == 2 and "'--token' / CRONWHEEL_TOKEN: a token is printable ASCII" in r.stderr, (token, r.output)
    r = invoke("--token", "tok\n", "ls", url=nowhere)  # a file's newline: kept out, and on to the daemon
    assert r.exit_code == 69 and "printable ASCII" not in r.stderr, r.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["next", "61 * * * *"], "61"),
        (["next", "* * *"], "expected 5 or 6 fields"),
        (["next", "@sometimes"], "unknown macro"),
        (["next", "*/5"], "quote a cron expression"),
        (["next", "0 * * * *", "--tz", "Mars/Base"], "Mars/Base"),
        (["next", "0 * * * *", "--from", "yesterday"], "--from"),
        (["next", "0 * * * *", "-n", "0"], "-n"),
        (["next", "2026-13-01T00:00:00Z"], "month"),
    ],
)
def test_next_bad_input_is_a_usage_error(nowhere: str, args: list[str], words: str) -> None:
    r = invoke(*args, url=nowhere)
    assert r.exit_code == 2, r.output
    assert words in r.stderr
    assert "Traceback" not in r.output


def test_next_of_a_job_name_needs_the_daemon(nowhere: str) -> None:
    r = invoke("next", "nightly-backup", url=nowhere)
    assert r.exit_code == EX_UNAVAILABLE
    assert "is not a schedule" in r.stderr and "cronwheel serve" in r.stderr


# ---------------------------------------------------------------- add: checked before any call


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["add", "* * *", "--", "echo"], "expected 5 or 6 fields"),
        (["add", "*/5", "echo"], "quote a cron expression"),
        (["add", "@daily"], "exactly one target"),
        (["add", "@daily", "echo", "--python", "m:f"], "got CMD, --python"),
        (["add", "@daily", "echo", "--tz", "Nowhere/City"], "Nowhere/City"),
        (["add", "@daily", "echo", "--timeout", "soon"], "--timeout"),
        (["add", "@daily", "echo", "--payload", "{bad"], "malformed JSON at line 1 column 2"),
        (["add", "@daily", "echo", "--priority", "urgent"], "urgent"),
        (["add", "@daily", "echo", "--max-attempts", "0"], "--max-attempts"),
        (["add", "+soon", "echo"], "invalid duration"),
        (["add", "2026-01-01T00:00:00", "echo"], "UTC offset"),
        (["add", "@daily", "--http-url", "https://x", "--header", "novalue"], "NAME: VALUE"),
        (["add", "@daily", "echo", "--http-method", "POST"], "--http-url"),
    ],
)
def test_add_refuses_bad_input_without_a_daemon(nowhere: str, args: list[str], words: str) -> None:
    r = invoke(*args, url=nowhere)
    assert r.exit_code == 2, r.output
    assert words in r.stderr
    assert "Traceback" not in r.output


def test_add_with_no_daemon_exits_69_with_a_hint(nowhere: str) -> None:
    r = invoke("add", "*/5 * * * *", "--name", "tidy", "--", "find", "/tmp", "-delete", url=nowhere)
    assert r.exit_code == EX_UNAVAILABLE, r.output
    assert "cannot reach the cronwheel daemon" in r.stderr
    assert "cronwheel serve" in r.stderr and "make serve" in r.stderr


# ---------------------------------------------------------------- daemon unreachable


@pytest.mark.parametrize(
    "args",
    [["ls"], ["ls", "--json"], ["show", "x"], ["status"], ["cancel", "x"], ["pause", "x"], ["resume", "x"],
     ["run", "x"], ["history", "x"], ["logs", "j:1"], ["dlq", "ls"], ["dlq", "replay", "j:1"], ["dlq", "purge", "j:1"]],
)
def test_unreachable_daemon_exits_69(nowhere: str, args: list[str]) -> None:
    r = invoke(*args, url=nowhere)
    assert r.exit_code == EX_UNAVAILABLE, r.output
    assert "no-daemon.sock" in r.stderr and "cronwheel serve" in r.stderr
    assert "Traceback" not in r.output


def test_refused_tcp_port_exits_69() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = invoke("status", url=f"http://127.0.0.1:{port}")
    assert r.exit_code == EX_UNAVAILABLE
    assert "connection refused" in r.stderr


def test_default_url_is_the_socket_in_the_data_dir(tmp_path: Path) -> None:
    r = invoke("ls", env={"CRONWHEEL_DATA_DIR": str(tmp_path / "dd")})
    assert r.exit_code == EX_UNAVAILABLE
    assert f"unix:{tmp_path / 'dd' / 'api.sock'}" in r.stderr
    r = invoke("--data-dir", str(tmp_path / "flag"), "ls", env={"STATE_DIRECTORY": str(tmp_path / "state")})
    assert f"unix:{tmp_path / 'flag' / 'api.sock'}" in r.stderr
    r = invoke("ls", env={"STATE_DIRECTORY": f"{tmp_path / 'state'}:{tmp_path / 'other'}"})
    assert f"unix:{tmp_path / 'state' / 'api.sock'}" in r.stderr


def test_no_daemon_names_every_way_to_find_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # run from a directory that has no ./.cronwheel: the hint names the data directory it
    # looked in and both ways to point elsewhere
    monkeypatch.chdir(tmp_path)
    r = invoke("ls")
    assert r.exit_code == EX_UNAVAILABLE
    assert f"No daemon runs with the data directory {tmp_path / '.cronwheel'}" in r.stderr
    for way in ("--data-dir", "CRONWHEEL_DATA_DIR", "--url", "CRONWHEEL_URL", "cronwheel serve"):
        assert way in r.stderr, way
    # an explicit URL: no data-directory sentence, still every way
    r = invoke("ls", url=f"unix:{tmp_path / 'elsewhere.sock'}")
    assert "No daemon runs with the data directory" not in r.stderr and "--data-dir" in r.stderr


def test_default_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRONWHEEL_DATA_DIR", raising=False)
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    assert default_data_dir() == Path(".cronwheel")


def test_bad_url_is_a_usage_error() -> None:
    r = invoke("ls", url="ftp://example.com")
    assert r.exit_code == 2 and "http://HOST:PORT or unix:/PATH" in r.stderr


# ---------------------------------------------------------------- effect


def test_effect_needs_the_job_environment(nowhere: str) -> None:
    r = invoke("effect", "charge-1", url=nowhere)
    assert r.exit_code == 2 and "CRONWHEEL_EXECUTION_ID" in r.stderr
    r = invoke("effect", "charge-1", url=nowhere, env={"CRONWHEEL_EXECUTION_ID": "j:1"})
    assert r.exit_code == 2 and "CRONWHEEL_LEASE_EPOCH" in r.stderr
    r = invoke("effect", "charge-1", url=nowhere, env={"CRONWHEEL_EXECUTION_ID": "j:1", "CRONWHEEL_LEASE_EPOCH": "2"})
    assert r.exit_code == EX_UNAVAILABLE


def test_help_documents_exit_codes() -> None:
    r = invoke("effect", "--help")
    assert r.exit_code == 0
    for words in ("0  recorded", "3  duplicate", "4  fenced", "69"):
        assert words in r.stdout
    r = invoke("--help")
    assert "69" in r.stdout and "next" in r.stdout and "serve" in r.stdout


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


def test_every_help_reads_as_prose() -> None:
    """A docstring line at the wrong indentation stops click from dedenting the rest, and the
    help then shows runs of spaces inside its sentences (`import --help` did, as an alias)."""
    for path in _commands(cli):
        if path == ("worker",):
            continue  # argparse's help, columns and all (below)
        r = invoke(*path, "--help")
        assert r.exit_code == 0, (path, r.output)
        text = r.stdout.split("\nOptions:", 1)[0]
        prose = [line for line in text.splitlines() if re.match(r"^  \S", line)]  # \b blocks indent more
        bad = [line for line in prose if re.search(r"\S {3,}\S", line)]
        assert not bad, (path, bad)


def test_next_from_takes_now_and_a_time_ago(nowhere: str) -> None:
    ago = invoke("next", "@daily", "--from", "-1d", "-n", "1", "--json", url=nowhere)
    now = invoke("next", "@daily", "--from", "now", "-n", "1", "--json", url=nowhere)
    assert ago.exit_code == 0 and now.exit_code == 0, ago.output + now.output
    # a day back, the next midnight is the one before now's next midnight (unless a midnight
    # passed between the two runs, a few milliseconds apart)
    gap = parse_instant(json.loads(now.output)[0]) - parse_instant(json.loads(ago.output)[0])
    assert gap in (86_400_000, 2 * 86_400_000), gap
    res = invoke("next", "@daily", "--from", "7d", url=nowhere)
    assert res.exit_code == 2 and "write -7d for that long ago, or +7d for that long ahead" in res.output, res.output


@pytest.mark.parametrize(("typed", "ours"), [("remove", "cancel"), ("kill", "cancel"), ("Delete", "cancel"),
                                            ("list", "ls"), ("stop", "pause"), ("trigger", "run"), ("log", "logs")])
def test_another_tools_word_for_a_command_names_ours(nowhere: str, typed: str, ours: str) -> None:
    """Click guesses by spelling: it offered `resume` for "remove" and `backfill` for "kill"."""
    r = invoke(typed, "somejob", url=nowhere)
    assert r.exit_code == 2 and f"No such command {typed!r}. Did you mean {ours!r}? ({ours}: " in r.stderr, r.stderr


def test_every_synonym_names_a_command_that_exists_and_is_no_command_itself() -> None:
    from cronwheel.cli.context import COMMAND_SYNONYMS

    for typed, ours in COMMAND_SYNONYMS.items():
        assert ours in cli.commands and typed not in cli.commands and typed == typed.lower(), typed
    r = invoke("bogus", url="http://127.0.0.1:9")  # not a synonym: click's own answer
    assert r.exit_code == 2 and "No such command 'bogus'." in r.stderr, r.stderr


def test_worker_help_names_both_kinds_of_worker() -> None:
    res = subprocess.run([sys.executable, "-m", "cronwheel", "worker", "--help"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "--socket" in res.stdout and "local worker" in res.stdout
    assert "remote worker" in res.stdout and "--url URL --queue NAME --handler module:function\n" in res.stdout
    # a bare `cronwheel worker` names both kinds rather than asking for the local one's options
    res = subprocess.run([sys.executable, "-m", "cronwheel", "worker"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "give --url URL for a remote worker" in res.stderr, res.stderr
    assert "required: --socket" not in res.stderr
    res = subprocess.run([sys.executable, "-m", "cronwheel", "worker", "--url", "http://x:7878", "--help"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "(default: 4)" in res.stdout and "(default: 30)" in res.stdout and ":7878" in res.stdout, res.stdout


# ---------------------------------------------------------------- hostile words, refused here in words


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--rate", "inf", "'inf' must be 0.001 to 1,000,000 (or 'none' for unlimited)"),
    ("--rate", "nan", "'nan' must be 0.001 to 1,000,000"),
    ("--burst", "99999999999999999999", "must be 1 to 1,000,000,000"),
    ("--max-jobs", "-5", "'-5' must be 0 to 1,000,000,000"),
])  # fmt: skip
def test_a_tenant_quota_out_of_the_apis_range_is_refused_here(nowhere: str, option: str, value: str, says: str) -> None:
    """inf was sent as JSON's Infinity and refused as "malformed JSON", which the user never wrote."""
    r = invoke("tenant", "add", "t1", option, value, url=nowhere)
    assert r.exit_code == 2 and says in r.stderr and "JSON" not in r.stderr, r.output


REMOTE = ["--url", "http://127.0.0.1:9", "--queue", "q", "--handler", "os:getcwd"]


@pytest.mark.parametrize(("change", "says"), [
    (("--url", "http://\udcff"), "--url must be the daemon's http(s)://HOST:PORT, not 'http://\\xff'"),
    (("--url", "ftp://x"), "--url must be the daemon's http(s)://HOST:PORT, not 'ftp://x'"),
    (("--queue", "a b"), "--queue 'a b' is not a queue name (1 to 100 characters"),
    (("--handler", "nosuch_module_x:fn"), "cannot load the handler 'nosuch_module_x:fn': ModuleNotFoundError"),
    (("--handler", "os:nosuch"), "cannot load the handler 'os:nosuch': AttributeError"),
    (("--concurrency", "99999999"), "--concurrency must be between 1 and 10,000"),
    (("--grace", "nan"), "--grace must be between 0 and 86400 seconds"),
    (("--wait", "nan"), "--wait must be between 0 and 30"),
    (("--token", "t\nx"), "--token (or $CRONWHEEL_TOKEN) must be printable ASCII"),
    (("--worker-id", "a\nb"), "--worker-id must be 1 to 200 printable characters"),
])  # fmt: skip
def test_a_remote_worker_refuses_what_could_never_work_before_it_starts(change: tuple[str, str], says: str) -> None:
    """Each of these ran the claim loop, retrying once a second forever, or crashed with a
    traceback (a handler that does not import)."""
    args = [*REMOTE]
    if change[0] in args:
        args[args.index(change[0]) + 1] = change[1]
    else:
        args += list(change)
    res = subprocess.run([sys.executable, "-m", "cronwheel", "worker", *args], capture_output=True, text=True,
                         timeout=60, errors="surrogateescape")  # fmt: skip
    assert res.returncode == 2 and f"cronwheel worker: error: {says}" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and "remote_worker.started" not in res.stderr + res.stdout


def test_a_remote_worker_takes_the_daemon_from_the_root_options_as_every_command_does() -> None:
    """`cronwheel --url URL worker …` and CRONWHEEL_URL were ignored: the worker answered "give
    --url URL", though every other command had found the daemon that way."""
    from cronwheel.cli.node import with_root_options

    remote = ["--queue", "q", "--handler", "m:f"]
    assert with_root_options(remote, "http://h:7878", "tok") == ["--url", "http://h:7878", "--token", "tok", *remote]
    assert with_root_options(remote, "http://h:7878", None) == ["--url", "http://h:7878", *remote]
    # the worker's own options win; a unix: URL and a local worker take nothing from the root
    own = ["--url=http://other:1", "--token", "mine", *remote]
    assert with_root_options(own, "http://h:7878", "tok") == own
    assert with_root_options(["--url", "http://o:1", *remote], "http://h:7878", "tok") == ["--url", "http://o:1", *remote]
    assert with_root_options(remote, "unix:/run/cronwheel/api.sock", "tok") == remote
    assert with_root_options(remote, None, "tok") == remote
    local = ["--socket", "/x/worker.sock", "--worker-id", "n-1-w0-0"]
    assert with_root_options(local, "http://h:7878", "tok") == local
    # end to end: the root's --url reaches the remote worker's own checks
    res = subprocess.run([sys.executable, "-m", "cronwheel", "--url", "http://127.0.0.1:9", "worker", "--queue", "a b",
                          "--handler", "os:getcwd"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert res.returncode == 2 and "--queue 'a b' is not a queue name" in res.stderr, res.stderr
    env = {**os.environ, "CRONWHEEL_URL": "http://127.0.0.1:9"}
    res = subprocess.run([sys.executable, "-m", "cronwheel", "worker", "--queue", "q", "--handler", "nosuch_module_x:f"],
                         capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert res.returncode == 2 and "cannot load the handler 'nosuch_module_x:f'" in res.stderr, res.stderr


@pytest.mark.parametrize("args", [("show", "\udcff"), ("cancel", "a\udced\udca0\udc80"), ("history", "\udcff"),
                                  ("calendar", "set", "\udcff", "--date", "2026-12-25"),
                                  ("ls", "--tenant", "\udcff"), ("logs", "--event", "x\udcff")])  # query strings too
def test_a_reference_that_is_not_utf8_is_refused_in_words(nowhere: str, args: tuple[str, ...]) -> None:
    r = invoke(*args, url=nowhere)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.exception
    assert "is not valid UTF-8" in r.stderr and "Traceback" not in r.output, r.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--payload", "[" * 10_000 + "]" * 10_000), "the payload is nested too deeply"),
        (("--payload", "[" * 30 + "]" * 30), "nested deeper than 24 levels"),
        (("--payload", '{"a": "\\ud800"}'), "the payload: a contains a lone surrogate"),
        (("--payload", "1" * 5000), "more than 4300 digits"),
        (("--notify", '{"on": "dead", "x": ' + "1" * 30 + "}"), "beyond 64 bits"),
        (("--timeout", "9" * 400), "'--timeout': duration"),
    ],
)
def test_add_refuses_what_the_api_would_before_sending_it(nowhere: str, args: tuple[str, ...], words: str) -> None:
    r = invoke("add", *args, "0 0 1 1 *", "--", "true", url=nowhere)
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.exception
    assert words in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[{"schedule": "0 0 1 1 *", "command": "x", "name": "\\ud800"}]', "[0].name contains a lone surrogate"),
        ("[" * 10_000 + "]" * 10_000, "nested too deeply"),
    ],
)
def test_a_json_import_that_the_api_would_refuse_is_named(nowhere: str, tmp_path: Path, text: str, words: str) -> None:
    (tmp_path / "in.json").write_text(text)
    r = invoke("import-crontab", "--dry-run", str(tmp_path / "in.json"), url=nowhere)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.exception
    assert words in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("member", "words"),
    [
        ("payload = " + "[" * 5000 + "]" * 5000, ":: not valid TOML: arrays or tables nested too deeply"),
        ("timeoutSec = " + "9" * 5000, ":: not valid TOML: Exceeds the limit (4300 digits)"),
        ("timeoutSec = 99999999999999999999", ":4: key 'timeoutSec': job 'x': timeoutSec is an integer beyond 64 bits"),
        ('env = { A = "\\u0000" }', ":4: key 'env': job 'x': env.A contains a NUL character"),
    ],
)
def test_apply_refuses_a_file_the_api_would_refuse_naming_the_line(nowhere: str, tmp_path: Path, member: str, words: str) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text(f'[x]\nschedule = "0 0 1 1 *"\ncommand = "true"\n{member}\n')
    r = invoke("apply", str(path), url=nowhere)
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.exception
    assert f"{path}{words}".replace("::", ":") in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ('" nightly"', "job ' nightly': name must be text that neither starts nor ends with a space"),
        ('"jabcdefghijklmnop"', "has the shape of a job id"),
        ('"tab\\there"', "name must contain printable characters only"),
    ],
)
def test_apply_refuses_a_table_name_the_api_would_refuse(nowhere: str, tmp_path: Path, table: str, words: str) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text(f'[{table}]\nschedule = "0 0 1 1 *"\ncommand = "true"\n')
    r = invoke("apply", "--dry-run", str(path), url=nowhere)
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.exception
    assert str(path) in r.stderr and words in r.stderr, r.stderr


def test_an_import_dry_run_needs_no_daemon_and_says_it_compared_with_none(nowhere: str, tmp_path: Path) -> None:
    (tmp_path / "my.crontab").write_text("0 3 * * * backup\n@weekly tidy\n")
    r = invoke("import-crontab", "--dry-run", str(tmp_path / "my.crontab"), url=nowhere)
    assert r.exit_code == 0, r.output
    assert "2 jobs would be created (dry run: nothing was created" in r.stderr, r.stderr
    assert "not compared with the daemon's jobs: cannot reach" in r.stderr and "already there" not in r.stderr


@pytest.mark.parametrize(("text", "created"), [
    ("0 3 * * * backup\n@weekly tidy\n", "2 jobs would be created"),
    ('[{"schedule": "@daily", "command": "tidy"}]', "1 job would be created"),
])  # fmt: skip
def test_an_import_saved_with_a_byte_order_mark_reads_as_without_it(nowhere: str, tmp_path: Path, text: str, created: str) -> None:
    """A crontab lost its first line ("minute field: '\\ufeff0'"), and an export's JSON was
    read as a crontab of lines that were not one."""
    (tmp_path / "saved-on-windows").write_bytes(b"\xef\xbb\xbf" + text.encode())
    r = invoke("import-crontab", "--dry-run", str(tmp_path / "saved-on-windows"), url=nowhere)
    assert r.exit_code == 0 and f"{created} (dry run" in r.stderr and "skipped" not in r.stderr, r.stderr


def test_a_data_dir_the_user_cannot_read_is_no_reason_to_refuse_a_command() -> None:
    """The installed config names /var/lib/cronwheel, which local users cannot read: they use
    the CLI with CRONWHEEL_URL and a token, so --data-dir (and a file's data_dir, checked as
    serve's option) must not be refused as unreadable; the daemon says what it cannot use."""
    from cronwheel.cli.node import serve

    for command in (cli, serve):
        (option,) = [p for p in command.params if p.name == "data_dir"]
        assert isinstance(option.type, click.Path) and option.type.readable is False, command.name


def test_every_file_that_is_not_utf8_is_named_with_its_line_and_how_to_convert_it(tmp_path: Path, nowhere: str) -> None:
    """A crontab, a job file for apply, a configuration file and a calendar: each read as UTF-8,
    and one in Latin-1 is named with the line of its first such byte, not a codec's offset."""
    cases = {
        "crontab": (b"0 0 * * * true\n0 1 * * * echo \xe9t\xe9\n", ("import-crontab", "{}"), 2),
        "jobs.toml": (b'[a]\nschedule = "0 0 * * *"\ncommand = "echo \xe9"\n', ("apply", "--dry-run", "{}"), 3),
        "cw.toml": (b'log_level = "info"\nnode_id = "n\xe9"\n', ("--config", "{}", "config"), 2),
        "fr.ics": (b"BEGIN:VCALENDAR\r\nSUMMARY:f\xeate\r\nEND:VCALENDAR\r\n", ("calendar", "import", "fr", "{}"), 2),
    }
    for name, (data, args, line) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        res = invoke(*(a.format(path) for a in args), url=nowhere)
        out = res.output
        assert res.exit_code in (1, 2), (name, res.exit_code, out)
        assert f"{path}:{line}: not UTF-8 (byte 0x" in out and "iconv" in out, (name, out)
        assert "codec" not in out and "Traceback" not in out, (name, out)


@pytest.mark.parametrize(("given", "problem"), [
    ("0", "'0' is not a request timeout: more than 0 s and at most 1 d"),
    ("-5s", "invalid duration '-5s'"),
    ("2d", "'2d' is not a request timeout"),
    ("soon", "invalid duration 'soon'"),
])  # fmt: skip
def test_a_request_timeout_is_a_duration_of_at_most_a_day(nowhere: str, given: str, problem: str) -> None:
    """``--request-timeout`` and ``CRONWHEEL_REQUEST_TIMEOUT``: refused alike, naming the value,
    before any request is made (a 0 would make the socket non-blocking; a year overflows it)."""
    for r in (invoke("--request-timeout", given, "ls", url=nowhere),
              invoke("ls", url=nowhere, env={"CRONWHEEL_REQUEST_TIMEOUT": given})):  # fmt: skip
        assert r.exit_code == 2 and "--request-timeout" in r.output and problem in r.output, r.output
    assert invoke("--request-timeout", "1.5s", "ls", url=nowhere).exit_code == EX_UNAVAILABLE


def test_a_count_that_is_no_number_says_what_is_wanted() -> None:
    """click's words were "'many' is not a valid integer range", for every count of every command."""
    for args, says in ((["next", "@daily", "-n", "many"], "'many' is not a whole number (1<=x<=1000)"),
                       (["lint", "--top", "1.5"], "'1.5' is not a whole number (1<=x<=100)"),
                       (["serve", "--workers", "two"], "'two' is not a whole number (0<=x<=1024)"),
                       # Python's int() reads these; nothing else that takes the setting does
                       (["next", "@daily", "-n", "1_0"], "'1_0' is not a whole number (1<=x<=1000)"),
                       (["next", "@daily", "-n", "\u0663"], "'\u0663' is not a whole number (1<=x<=1000)"),
                       (["next", "@daily", "-n", "9" * 5000], "is not a whole number (1<=x<=1000)")):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2 and says in res.output, res.output
        assert "integer range" not in res.output


@pytest.mark.parametrize("args", [["next", "* * * * * *", "-n", "5"], ["--help"]])
def test_output_to_a_pipe_whose_reader_has_gone_exits_141_quietly(args: list[str]) -> None:
    """`cronwheel next … | head -1`: the reader closes the pipe early. It exited 1, the status
    of a refusal; now 141, a shell's for a program killed by SIGPIPE, and says nothing more."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the first line is written: every write meets EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "cronwheel", *args], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=60, env={**os.environ, "CRONWHEEL_CONFIG": ""})
    finally:
        os.close(write_end)
    assert proc.returncode == 141 and proc.stderr == "", (proc.returncode, proc.stderr)

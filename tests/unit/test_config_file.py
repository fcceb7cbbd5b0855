"""The configuration file: every ``serve`` option is a key, resolved flag > environment > file >
default (checked key by key through ``cronwheel config``, which resolves exactly as ``serve``
does), bad files refused naming file, line and key, and every key documented in man 5."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from cronwheel.cli import config as config_module
from cronwheel.cli.config import config_keys
from cronwheel.cli.main import cli, serve
from cronwheel.core.config import ConfigError, env_var, mask_secrets, parse
from cronwheel.daemon import serve as daemon_serve
from cronwheel.obs.levels import SYSLOG_PRIORITY

MAN = Path(__file__).resolve().parents[2] / "man" / "cronwheel.toml.5"
KEYS = config_keys(serve)


def _samples(key: str, option: click.Option) -> tuple[Any, Any, Any]:
    """Three values the option accepts, (file, environment, flag), each layer's differing from
    the layer below it."""
    t = option.type
    if option.is_flag:
        return False, True, True
    if isinstance(t, click.Choice):
        a, b = list(t.choices)[:2]
        return a, b, a
    if isinstance(t, click.IntRange):
        low = t.min if t.min is not None else 0
        return low + 1, low + 2, low + 3
    if isinstance(t, click.FloatRange):
        return 1.5, 2.5, 3.5
    if key == "retention":
        return "1d", "2d", "3d"
    if key == "http":
        return "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"
    if key == "http_allow":
        return "a.example", "b.example", "c.example"
    if key == "trusted_proxies":
        return "10.0.0.0/8", "192.0.2.1", "2001:db8::/32,10.0.0.0/8"
    if key == "disk_low":
        return "1M", "2M", "3M"
    if key == "smtp_url":
        return "smtp://file.example", "smtp://env.example", "smtps://flag.example"
    if key == "mail_from":
        return "file@example.com", "env@example.com", "Flag <flag@example.com>"
    if key == "sendmail":  # programs that are there: serve refuses one that is not
        return shutil.which("true"), shutil.which("false"), shutil.which("cat")
    return f"/file/{key}", f"/env/{key}", f"/flag/{key}"


@pytest.fixture(autouse=True)
def _no_daemon_of_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cronwheel config` shows a running daemon's configuration when one answers in the data
    directory (./.cronwheel by default): the README's `make serve` runs one in the checkout
    while `make test` runs, and the shell's CRONWHEEL_* variables would count as `env` here."""
    monkeypatch.chdir(tmp_path)
    for name in ("CRONWHEEL_URL", "CRONWHEEL_TOKEN", "STATE_DIRECTORY", *map(env_var, KEYS)):
        monkeypatch.delenv(name, raising=False)


def _toml(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else json.dumps(value)


def _config(tmp_path: Path, text: str, env: dict[str, str] | None = None, *serve_args: str) -> dict[str, Any]:
    path = tmp_path / "cronwheel.toml"
    path.write_text(text)
    args = ["--config", str(path), "config", "--json", *(["--", *serve_args] if serve_args else [])]
    res = CliRunner().invoke(cli, args, env=env or {}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return {k["key"]: k for k in json.loads(res.output)["keys"]}


def test_every_serve_option_is_a_key() -> None:
    flags = {p.name for p in serve.params if isinstance(p, click.Option) and p.name not in ("help", "config")}
    assert set(KEYS) == flags
    assert {"data_dir", "store", "http", "workers", "log_level", "http_allow", "retention"} <= flags


@pytest.mark.parametrize("key", sorted(KEYS))
def test_precedence_flag_over_env_over_file_over_default(tmp_path: Path, key: str) -> None:
    option = KEYS[key]
    in_file, in_env, on_flag = _samples(key, option)
    line = f"# a comment first\n{key} = {_toml(in_file)}\n"
    env_text = "true" if in_env is True else str(in_env)

    nothing = _config(tmp_path, "")[key]
    assert nothing["source"] == "default" and nothing["env"] == env_var(key)

    from_file = _config(tmp_path, line)[key]
    assert (from_file["value"], from_file["source"]) == (in_file, f"{tmp_path / 'cronwheel.toml'}:2")

    from_env = _config(tmp_path, line, {env_var(key): env_text})[key]
    assert (from_env["value"], from_env["source"]) == (in_env, f"env {env_var(key)}")

    flag = option.opts[0]
    args = (flag,) if option.is_flag else (flag, str(on_flag))
    from_flag = _config(tmp_path, line, {env_var(key): env_text}, *args)[key]
    assert (from_flag["value"], from_flag["source"]) == (on_flag, "flag")


@pytest.mark.parametrize("where", [["--", "--config"], ["--config"]], ids=["after --", "config's own"])
def test_serves_own_config_flag_is_the_file_config_names(tmp_path: Path, where: list[str]) -> None:
    """`cronwheel config -- --config FILE` (serve's flag, as `serve --config FILE` takes it) says
    which file it read and the line of each key, as the group's `--config FILE` does: it said
    "configuration file: none" and "None:0" for the values it had read from FILE."""
    path = tmp_path / "serve.toml"
    path.write_text("# serve's own\nslots = 7\nhttp_allow = \"a.example\"\n")
    res = CliRunner().invoke(cli, ["config", *where, str(path), "--workers", "3"], env={"CRONWHEEL_CONFIG": ""})
    assert res.exit_code == 0, res.output
    assert f"\n# configuration file: {path}\n" in res.output, res.output  # after the line saying why not the daemon's
    lines = {line.split(" = ")[0]: line.rsplit("# ", 1)[1] for line in res.output.splitlines() if " = " in line}
    assert (lines["slots"], lines["http_allow"], lines["workers"]) == (f"{path}:2", f"{path}:3", "flag"), res.output
    res = CliRunner().invoke(cli, ["config", "--json", *where, str(path)], env={"CRONWHEEL_CONFIG": ""})
    got = json.loads(res.output)
    assert got["file"] == str(path) and {k["key"]: k["source"] for k in got["keys"]}["slots"] == f"{path}:2", got
    # what serve would refuse in it is named with its line too
    path.write_text('store = "postgresql://cw@127.0.0.1:1/cw"\ncluster = false\n')
    res = CliRunner().invoke(cli, ["config", *where, str(path)], env={"CRONWHEEL_CONFIG": ""})
    assert res.exit_code == 2 and f"{path}:2: key 'cluster': false cannot go with a PostgreSQL store (store from {path}:1)" in res.output, res.output


def test_http_allow_takes_a_list(tmp_path: Path) -> None:
    got = _config(tmp_path, 'http_allow = ["a.example", "b.example"]\n')["http_allow"]
    assert got["value"] == "a.example,b.example"


def test_trusted_proxies_take_a_list_and_a_bad_one_refuses_the_start(tmp_path: Path) -> None:
    got = _config(tmp_path, 'trusted_proxies = ["10.0.0.0/8", "2001:db8::/32"]\n')["trusted_proxies"]
    assert got["value"] == "10.0.0.0/8,2001:db8::/32"
    res = CliRunner().invoke(cli, ["serve", "--trusted-proxies", "10.0.0.0/8,10.1.2.3/33"], env={"CRONWHEEL_CONFIG": ""})
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert "--trusted-proxies" in res.output and "trusted proxy '10.1.2.3/33' has a prefix length that is not" in res.output, res.output


@pytest.mark.parametrize(
    ("text", "line", "key", "says"),
    [
        ("workers = 2\nwrokers = 3\n", 2, "wrokers", "did you mean 'workers'"),
        ("\n\nworkers = -1\n", 3, "workers", "-1 is not in the range"),
        # no number at all: what is wanted, not click's "'two' is not a valid integer range"
        ('workers = "two"\n', 1, "workers", "'two' is not a whole number (0<=x<=1024)"),
        ("workers = 2.5\n", 1, "workers", "'2.5' is not a whole number (0<=x<=1024)"),
        ("keep_last = true\n", 1, "keep_last", "'true' is not a whole number (x>=1)"),
        ('log_level = "loud"\n', 1, "log_level", "'loud' is not one of"),
        ('cluster = "yes"\n', 1, "cluster", "expected true or false"),
        ("slots = [1, 2]\n", 1, "slots", "expected a single value"),
        ("[serve]\nworkers = 1\n", 1, "serve", "unknown table"),
        ('\nretention = "soon"\n', 2, "retention", "soon"),
        ('http = "localhost"\n', 1, "http", "is not HOST:PORT"),
        ('http_allow = ["ok.example", "not a host"]\n', 1, "http_allow", "not a host"),
        ('trusted_proxies = ["10.0.0.0/8", "10.0.0.1/8"]\n', 1, "trusted_proxies",
         "trusted proxy '10.0.0.1/8' has host bits set (the network is 10.0.0.0/8)"),
        ('\ntrusted_proxies = "proxy.example"\n', 2, "trusted_proxies", "trusted proxy 'proxy.example' is not an IPv4"),
    ],
)
def test_a_bad_file_is_refused_naming_file_line_and_key(
    tmp_path: Path, text: str, line: int, key: str, says: str
) -> None:
    path = tmp_path / "cronwheel.toml"
    path.write_text(text)
    res = CliRunner().invoke(cli, ["--config", str(path), "config", "--local"])
    assert res.exit_code == 2, res.output
    assert f"{path}:{line}: key {key!r}: " in res.output and says in res.output, res.output
    assert "Traceback" not in res.output


def test_not_toml_says_where(tmp_path: Path) -> None:
    path = tmp_path / "cronwheel.toml"
    path.write_text('workers = 2\nstore = "unterminated\n')
    res = CliRunner().invoke(cli, ["--config", str(path), "serve"])
    assert res.exit_code == 2 and f"{path}:2: not valid TOML" in res.output, res.output


def test_a_leading_byte_order_mark_is_read_past() -> None:
    parsed = parse('\ufeffworkers = 2\nstore = "sqlite"\n', "cronwheel.toml", ["workers", "store"])
    assert {key: (raw.value, raw.line) for key, raw in parsed.items()} == {"workers": (2, 1), "store": ("sqlite", 2)}


def test_a_missing_named_file_is_an_error_but_a_missing_default_is_not(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["--config", str(tmp_path / "nope.toml"), "config"])
    assert res.exit_code == 2 and "nope.toml: no such file" in res.output
    res = CliRunner().invoke(cli, ["--config", str(tmp_path), "config"])
    assert res.exit_code == 2 and f"{tmp_path}: a directory, not a file" in res.output, res.output
    res = CliRunner().invoke(cli, ["config"], env={"CRONWHEEL_CONFIG": None})
    assert res.exit_code == 0 and "# configuration file:" in res.output


def test_the_cli_finds_the_daemon_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cronwheel.toml"
    path.write_text(f'data_dir = "{tmp_path / "state"}"\n')
    res = CliRunner().invoke(cli, ["--config", str(path), "status"], env={"CRONWHEEL_DATA_DIR": None})
    assert res.exit_code == 69
    assert str(tmp_path / "state" / "api.sock") in res.output


def test_parse_is_strict_and_reports_lines() -> None:
    got = parse('a = 1\n\n  "b" = "x"\n', "f.toml", ["a", "b"])
    assert (got["a"].line, got["b"].line, got["b"].value) == (1, 3, "x")
    with pytest.raises(ConfigError) as err:
        parse("a = 1\nc = 2\n", "f.toml", ["a", "b"])
    assert (err.value.line, err.value.key) == (2, "c")


def test_man_5_documents_every_key_and_its_variable() -> None:
    text = MAN.read_text().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace("\\fI", "")
    missing = [k for k in KEYS if f"\n.B {k}\n" not in MAN.read_text().replace("\\-", "-") or env_var(k) not in text]
    assert not missing, f"man/cronwheel.toml.5 lacks: {missing}"


# ---------------------------------------------------------------- what reaches the daemon

ETC = Path(__file__).resolve().parents[2] / "etc" / "cronwheel.toml"
#: how `serve` finds the file: --config before or after `serve`, $CRONWHEEL_CONFIG, the default path
LAYOUTS = ("before", "after", "variable", "default")


def _serve(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, layout: str, text: str,
           env: dict[str, str] | None = None, flags: tuple[str, ...] = ()) -> tuple[Any, dict[str, Any]]:
    """Run `cronwheel … serve` with the daemon replaced by a recorder: what it was handed."""
    path = tmp_path / "cronwheel.toml"
    path.write_text(text)
    monkeypatch.setattr(config_module, "DEFAULT_CONFIG", path if layout == "default" else tmp_path / "absent.toml")
    handed: dict[str, Any] = {}

    def run_from_cli(**kwargs: Any) -> int:
        handed.update(kwargs)
        return 0

    monkeypatch.setattr(daemon_serve, "run_from_cli", run_from_cli)
    args = {"before": ["--config", str(path), "serve"], "after": ["serve", "--config", str(path)],
            "variable": ["serve"], "default": ["serve"]}[layout]
    clean: dict[str, str | None] = {env_var(k): None for k in KEYS}
    clean.update(STATE_DIRECTORY=None, CRONWHEEL_CONFIG=str(path) if layout == "variable" else None)
    res = CliRunner().invoke(cli, [*args, *flags], env={**clean, **(env or {})})
    return res, handed


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("key", sorted(KEYS))
def test_serve_hands_the_daemon_flag_over_env_over_file_over_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, key: str, layout: str
) -> None:
    option = KEYS[key]
    in_file, in_env, on_flag = _samples(key, option)
    line = f"# a comment first\n{key} = {_toml(in_file)}\n"
    env_text = "true" if in_env is True else str(in_env)
    flag = option.opts[0]
    flags = (flag,) if option.is_flag else (flag, str(on_flag))
    default = {"data_dir": ".cronwheel", "http": option.default}.get(key)

    def handed(text: str, env: dict[str, str] | None = None, with_flag: bool = False) -> Any:
        res, got = _serve(monkeypatch, tmp_path, layout, text, env, flags if with_flag else ())
        assert res.exit_code == 0 and got, res.output
        return got.get(key)

    assert handed("") == default
    assert handed(line) == (str(in_file) if key == "data_dir" else in_file)
    assert handed(line, {env_var(key): env_text}) == (str(in_env) if key == "data_dir" else in_env)
    assert handed(line, {env_var(key): env_text}, with_flag=True) == (str(on_flag) if key == "data_dir" else on_flag)


BAD_VALUES = [
    # (file line, key, what the error says, the same value as a flag or None)
    ("workers = 2.5", "workers", "'2.5' is not a whole number (0<=x<=1024)", ("--workers", "2.5")),
    ("workers = true", "workers", "'true' is not a whole number (0<=x<=1024)", ("--workers", "true")),
    ("slots = 1e3", "slots", "'1000.0' is not a whole number (1<=x<=100000)", ("--slots", "1000.0")),
    ("grace_sec = false", "grace_sec", "'false' is not a number of seconds", ("--grace-sec", "false")),
    ('disk_low = "lots"', "disk_low", "must be a size like 256M, 1G or 1048576, not 'lots'", ("--disk-low", "lots")),
    ('store = "mysql://x"', "store", "unknown store URL scheme 'mysql'", ("--store", "mysql://x")),
    ('store = "sqlite:/x.db"', "store", "is not a SQLite URL", ("--store", "sqlite:/x.db")),
    ('smtp_url = "http://relay"', "smtp_url", "is not smtp://", ("--smtp-url", "http://relay")),
    ('smtp_url = "smtp://u:s3cret@relay:99999"', "smtp_url", "out of range", ("--smtp-url", "smtp://u:s3cret@relay:99999")),
    ('mail_from = "not an address"', "mail_from", "is not an email address", ("--mail-from", "not an address")),
    ('mail_from = "a@b.example\\nBcc: x@y.example"', "mail_from", "is not an email address", None),
    ('node_id = ""', "node_id", "is not a node id", ("--node-id", " ")),
    ("http_allow = 5", "http_allow", "expected a string in double quotes, not 5", None),
    ("node_id = 7", "node_id", "expected a string in double quotes, not 7", None),
    ("log_level = true", "log_level", "expected a string in double quotes, not true", None),
    ("data_dir = 1", "data_dir", "expected a string in double quotes, not 1", None),
    # a typo's size, and numbers that are no duration: refused before 100,000 processes start
    ("workers = 100000", "workers", "100000 is not in the range 0<=x<=1024", ("--workers", "100000")),
    ("slots = 99999999999", "slots", "99999999999 is not in the range 1<=x<=100000", ("--slots", "99999999999")),
    ("grace_sec = nan", "grace_sec", "nan is not a number of seconds", ("--grace-sec", "nan")),
    ("grace_sec = inf", "grace_sec", "inf is not in the range 0<=x<=86400", ("--grace-sec", "inf")),
    # a duration where a number is meant says which number: retention takes durations, these do not
    ('grace_sec = "1m"', "grace_sec", "'1m' is not a number of seconds (such as 30", ("--grace-sec", "1m")),
    ('reaper_interval_ms = "1s"', "reaper_interval_ms", "'1s' is not a whole number of milliseconds",
     ("--reaper-interval-ms", "1s")),
    ("bucket_lease_ms = 2.5", "bucket_lease_ms", "'2.5' is not a whole number of milliseconds",
     ("--bucket-lease-ms", "2.5")),
    # read as a path, "" is the current directory: serve took it and chmodded it 0700
    ('data_dir = ""', "data_dir", "is empty", ("--data-dir", "")),
]


@pytest.mark.parametrize("flag", ["--http", "--store", "--node-id", "--http-allow", "--retention"])
def test_a_flag_whose_bytes_are_not_utf8_is_refused_before_the_daemon_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: str
) -> None:
    """argv's 0xff arrives as a lone surrogate: it crashed the daemon's bind (idna) or its
    store's open, after the start had begun."""
    res, handed = _serve(monkeypatch, tmp_path, "before", "", flags=(flag, "x\udcff:80"))
    assert res.exit_code == 2 and not handed and "'x\\xff:80' is not valid UTF-8" in res.output, res.output


@pytest.mark.parametrize(("text", "key", "says", "flag"), BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_a_bad_value_is_refused_as_its_flag_is_naming_file_line_and_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, key: str, says: str, flag: tuple[str, str] | None
) -> None:
    res, handed = _serve(monkeypatch, tmp_path, "before", f"# first\n{text}\n")
    assert res.exit_code == 2 and not handed, res.output
    assert f"{tmp_path / 'cronwheel.toml'}:2: key {key!r}: " in res.output and says in res.output, res.output
    assert "Traceback" not in res.output and "s3cret" not in res.output
    if flag is not None:  # the flag is refused alike (and the daemon never starts)
        res, handed = _serve(monkeypatch, tmp_path, "before", "", flags=flag)
        assert res.exit_code == 2 and not handed and says in res.output, res.output


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ('workers = "4"', "workers", 4),
        ("grace_sec = 7", "grace_sec", 7.0),
        ('disk_low = "512MiB"', "disk_low", "512MiB"),
        ('store = "postgresql://cw@db1,db2/cw?target_session_attrs=read-write"', "store",
         "postgresql://cw@db1,db2/cw?target_session_attrs=read-write"),
        ('store = "sqlite:///var/lib/cronwheel/x.db"', "store", "sqlite:///var/lib/cronwheel/x.db"),
        ('store = "/var/lib/cronwheel/x.db"', "store", "/var/lib/cronwheel/x.db"),
        ('smtp_url = "smtp://u:p@relay:587?starttls=require"', "smtp_url", "smtp://u:p@relay:587?starttls=require"),
        ('mail_from = "Cron Wheel <cron@host.example>"', "mail_from", "Cron Wheel <cron@host.example>"),
        ('node_id = "sched-1"', "node_id", "sched-1"),
    ],
)
def test_good_values_reach_the_daemon(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, key: str,
                                      value: Any) -> None:
    res, handed = _serve(monkeypatch, tmp_path, "before", text + "\n")
    assert res.exit_code == 0 and handed[key] == value, res.output


@pytest.mark.parametrize("text", ["256M", "1G", "512MiB", "1048576", "1.5g", "lots", "", "1X", "-1M"])
def test_the_cli_and_the_daemon_agree_on_sizes(text: str) -> None:
    from cronwheel.daemon.options import DaemonError, parse_size

    try:
        parse_size(text, "--disk-low")
    except DaemonError:
        daemon_ok = False
    else:
        daemon_ok = True
    try:
        config_module.SIZE.convert(text, None, None)
    except click.BadParameter:
        cli_ok = False
    else:
        cli_ok = True
    assert cli_ok == daemon_ok


@pytest.mark.parametrize("url", ["smtp://relay", "smtps://u:p@relay:465", "smtp://relay:0x1", "http://relay",
                                 "smtp://", "smtp:relay", "smtp://relay:70000", "relay:25"])
def test_the_cli_and_the_mail_channel_agree_on_smtp_urls(url: str) -> None:
    from cronwheel.engine.channels import ChannelConfigError, MailConfig

    try:
        MailConfig.parse(url, None, "a@b.example")
    except ChannelConfigError:
        channel_ok = False
    else:
        channel_ok = True
    try:
        config_module.SMTP_URL.convert(url, None, None)
    except click.BadParameter:
        cli_ok = False
    else:
        cli_ok = True
    assert cli_ok == channel_ok


@pytest.mark.parametrize(
    ("text", "line", "key", "says"),
    [
        ('workers = 2\n\nlog.level = "info"\n', 3, "log", "unknown table"),
        ('"log" . level = "info"\n', 1, "log", "unknown table"),
        ("\nworkers.max = 4\n", 2, "workers", "expected a single value"),
    ],
)
def test_a_dotted_key_is_refused_with_its_line(tmp_path: Path, text: str, line: int, key: str, says: str) -> None:
    path = tmp_path / "e1.toml"
    path.write_text(text)
    res = CliRunner().invoke(cli, ["--config", str(path), "config", "--local"])
    assert res.exit_code == 2 and f"{path}:{line}: key {key!r}: {says}" in res.output, res.output


def test_under_systemd_a_bad_file_is_a_start_failed_event(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(config_module, "journal_stream", lambda stream: True)
    res, handed = _serve(monkeypatch, tmp_path, "after", "\nworkers = 2.5\n", env={"CRONWHEEL_NODE_ID": "n7"})
    assert res.exit_code == 2 and not handed
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"<{SYSLOG_PRIORITY['critical']}>{{"), line
    record = json.loads(line[3:])
    assert {"ts", "seq"} <= set(record)
    assert (record["level"], record["event"], record["node"]) == ("critical", "node.start_failed", "n7")
    assert (record["file"], record["line"], record["key"]) == (str(tmp_path / "cronwheel.toml"), 2, "workers")
    assert record["error"].startswith(f"{tmp_path / 'cronwheel.toml'}:2: key 'workers': ")
    # the group's --config too; another command is no daemon start: a sentence
    res, _ = _serve(monkeypatch, tmp_path, "before", "\nworkers = 2.5\n")
    assert json.loads(res.stderr[3:])["event"] == "node.start_failed"
    path = tmp_path / "cronwheel.toml"
    res = CliRunner().invoke(cli, ["--config", str(path), "config", "--local"])
    assert res.exit_code == 2 and res.stderr.startswith(f"error: {path}:2: key 'workers': "), res.stderr


def test_elsewhere_a_bad_file_is_a_sentence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(config_module, "journal_stream", lambda stream: False)
    res, _ = _serve(monkeypatch, tmp_path, "after", "\nworkers = 2.5\n")
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {tmp_path / 'cronwheel.toml'}:2: key 'workers': "), res.stderr


def test_the_installed_file_has_every_key() -> None:
    written = re.findall(r"^#? ?([a-z_]+) = ", ETC.read_text(), re.MULTILINE)
    assert len(written) == len(set(written)), written
    assert set(written) == set(KEYS)
    # and what it leaves uncommented is a valid file
    config_module.load(serve, ETC)


def test_config_masks_passwords(tmp_path: Path) -> None:
    env = {"CRONWHEEL_SMTP_URL": "smtp://u:s3cret@relay:587"}
    text = 'store = "postgresql://cw:pg-pw@db1,db2/cw?password=qs-pw&sslmode=require&sslpassword=key-pw"\n'
    shown = _config(tmp_path, text, env)
    assert shown["smtp_url"]["value"] == "smtp://u:********@relay:587"
    assert shown["store"]["value"] == "postgresql://cw:********@db1,db2/cw?password=********&sslmode=require&sslpassword=********"
    path = tmp_path / "cronwheel.toml"
    res = CliRunner().invoke(cli, ["--config", str(path), "config"], env=env)
    assert res.exit_code == 0 and 'smtp_url = "smtp://u:********@relay:587"' in res.output, res.output
    for secret in ("s3cret", "pg-pw", "qs-pw", "key-pw"):
        assert secret not in res.output and secret not in json.dumps(shown)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("smtp://relay:25", "smtp://relay:25"),
        ("smtp://u@relay", "smtp://u@relay"),
        ("smtps://u:p@ss@relay/x", "smtps://u:********@relay/x"),
        ("/var/lib/cronwheel/x.db", "/var/lib/cronwheel/x.db"),
        ("postgresql://db/cw?sslmode=require&PASSWORD=x", "postgresql://db/cw?sslmode=require&PASSWORD=********"),
        # the passphrase of the client's key, and a name libpq reads once decoded
        ("postgresql://db/cw?sslpassword=k3y&sslkey=/k", "postgresql://db/cw?sslpassword=********&sslkey=/k"),
        ("postgresql://db/cw?pass%77ord=x#f", "postgresql://db/cw?pass%77ord=********#f"),
        ("postgresql://db/cw?mypassword=x&password", "postgresql://db/cw?mypassword=x&password"),
        # libpq ends the user information at '@' or '/' only: '#' and '?' may be in a password
        ("postgresql://cw:p#w@db/cw", "postgresql://cw:********@db/cw"),
        ("postgresql://cw:p?w=1@db1,db2/cw?sslmode=require", "postgresql://cw:********@db1,db2/cw?sslmode=require"),
        ("postgresql://cw:pw@db?sslmode=require&password=x", "postgresql://cw:********@db?sslmode=require&password=********"),
    ],
)
def test_mask_secrets(text: str, masked: str) -> None:
    assert mask_secrets(text) == masked

"""The configuration file: every ``serve`` option is a key, resolved flag > environment > file >
default (checked key by key through ``cronwheel config``, which resolves exactly as ``serve``
does), bad files refused naming file, line and key, and every key documented in man 5."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from cronwheel.cli.config import config_keys
from cronwheel.cli.main import cli, serve
from cronwheel.core.config import ConfigError, env_var, parse

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
    return f"/file/{key}", f"/env/{key}", f"/flag/{key}"


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


def test_http_allow_takes_a_list(tmp_path: Path) -> None:
    got = _config(tmp_path, 'http_allow = ["a.example", "b.example"]\n')["http_allow"]
    assert got["value"] == "a.example,b.example"


@pytest.mark.parametrize(
    ("text", "line", "key", "says"),
    [
        ("workers = 2\nwrokers = 3\n", 2, "wrokers", "did you mean 'workers'"),
        ("\n\nworkers = -1\n", 3, "workers", "-1 is not in the range"),
        ('log_level = "loud"\n', 1, "log_level", "'loud' is not one of"),
        ('cluster = "yes"\n', 1, "cluster", "expected true or false"),
        ("slots = [1, 2]\n", 1, "slots", "expected a single value"),
        ("[serve]\nworkers = 1\n", 1, "serve", "unknown table"),
        ('\nretention = "soon"\n', 2, "retention", "soon"),
        ('http = "localhost"\n', 1, "http", "is not HOST:PORT"),
        ('http_allow = ["ok.example", "not a host"]\n', 1, "http_allow", "not a host"),
    ],
)
def test_a_bad_file_is_refused_naming_file_line_and_key(
    tmp_path: Path, text: str, line: int, key: str, says: str
) -> None:
    path = tmp_path / "cronwheel.toml"
    path.write_text(text)
    res = CliRunner().invoke(cli, ["--config", str(path), "ls"])
    assert res.exit_code == 2, res.output
    assert f"{path}:{line}: key {key!r}: " in res.output and says in res.output, res.output
    assert "Traceback" not in res.output


def test_not_toml_says_where(tmp_path: Path) -> None:
    path = tmp_path / "cronwheel.toml"
    path.write_text('workers = 2\nstore = "unterminated\n')
    res = CliRunner().invoke(cli, ["--config", str(path), "serve"])
    assert res.exit_code == 2 and f"{path}:2: not valid TOML" in res.output, res.output


def test_a_missing_named_file_is_an_error_but_a_missing_default_is_not(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["--config", str(tmp_path / "nope.toml"), "config"])
    assert res.exit_code == 2 and "nope.toml: no such file" in res.output
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

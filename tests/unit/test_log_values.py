"""Hostile values in log lines: a job's name or command, an error text, a request's path may
hold spaces, '=', quotes, newlines, control characters, bytes of no encoding (lone
surrogates) or a NaN. The console format quotes them as logfmt does, so a line reads back;
the json format stays one line of strict JSON; and neither loses the line when stdout is
strict UTF-8, as it is under systemd."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cronwheel.obs.events import EventLog, console_line, logfmt_value

HOSTILE: dict[str, Any] = {
    "name": 'nightly backup = "full"',
    "command": "printf 'a\\n' ; echo \x1b[31mred\x07\tdone\r\n",
    "error": "exit 1: \\ not found \u2028 \u202e evil",
    "path": "/v1/jobs/\udcff\udc80x",  # undecodable bytes, as aiohttp hands them over
    "emoji": "caf\u00e9 \U0001f600",
    "literal": "\\udc80 is text here",
    "empty": "",
    "ratio": float("nan"),
    "ceiling": float("inf"),
    "nested": {"k": "v w", "bad\udcff": [float("-inf"), None, True]},
    "word": "plain",
    "count": 3,
    "flag": False,
}

_PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^ ]*)')


def read_back(line: str) -> dict[str, str]:
    """A logfmt reader: key=word or key="JSON string"."""
    fields = line.split(None, 3)[3]
    pairs = _PAIR.findall(fields)
    assert " ".join(f"{k}={v}" for k, v in pairs) == fields, "every byte of the line is a key=value pair"
    return {k: json.loads(v) if v.startswith('"') else v for k, v in pairs}


def written(tmp_path: Path, fmt: str) -> str:
    """What EventLog writes to a strict UTF-8 stream (a journal's, a file's)."""
    path = tmp_path / f"{fmt}.log"
    with open(path, "w", encoding="utf-8", errors="strict") as stream:
        log = EventLog("n1", stream, fmt=fmt, journal=False)
        log.emit("execution.failed", **HOSTILE)
        log.emit("execution.succeeded", executionId="j:1")
        log.flush()
    return path.read_text(encoding="utf-8")


def test_console_values_are_quoted_as_logfmt_and_read_back(tmp_path: Path) -> None:
    text = written(tmp_path, "console")
    first, second = text.splitlines()  # nothing lost, nothing split
    assert "execution.succeeded" in second and "executionId=j:1" in second
    assert first.isprintable(), first
    got = read_back(first)
    for key in ("name", "command", "error", "path", "emoji", "literal", "empty"):
        assert got[key] == HOSTILE[key], key
    assert (got["word"], got["count"], got["flag"], got["ratio"], got["ceiling"]) == ("plain", "3", "false", "nan", "inf")
    assert 'name="nightly backup = \\"full\\""' in first and "word=plain" in first
    assert json.loads(got["nested"]) == {"k": "v w", "bad\\udcff": ["-inf", None, True]}


def test_json_lines_stay_strict_json_for_hostile_values(tmp_path: Path) -> None:
    text = written(tmp_path, "json")
    first, second = text.splitlines()

    def no_constant(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON")

    record = json.loads(first, parse_constant=no_constant)
    assert json.loads(second)["executionId"] == "j:1"
    for key in ("name", "command", "error", "emoji", "literal", "empty", "word"):
        assert record[key] == HOSTILE[key], key
    # bytes of no encoding: the text of their escapes, which every JSON reader takes
    assert record["path"] == "/v1/jobs/\\udcff\\udc80x"
    assert (record["ratio"], record["ceiling"]) == ("nan", "inf")
    assert record["nested"] == {"k": "v w", "bad\\udcff": ["-inf", None, True]}
    assert (record["count"], record["flag"]) == (3, False)
    json.dumps(record, ensure_ascii=False).encode("utf-8")  # no lone surrogate left anywhere


def test_a_bare_word_stays_bare() -> None:
    assert [logfmt_value(v) for v in ("j:1", 42, 1.5, True, None, "/a/b", "x-y_z")] == [
        "j:1", "42", "1.5", "true", "null", "/a/b", "x-y_z"]
    assert [logfmt_value(v) for v in ("a b", "a=b", "", 'q"', "\\")] == ['"a b"', '"a=b"', '""', '"q\\""', '"\\\\"']
    line = console_line({"ts": "2026-12-01T10:00:00.123Z", "level": "info", "event": "x", "node": "n", "v": [1, "a"]})
    assert line.endswith('v="[1,\\"a\\"]"'), line


def test_the_event_streams_lines_are_strict_json_for_hostile_values() -> None:
    """``GET /v1/events`` writes the ring's records itself: a NaN gave a line strict readers
    refuse, and a lone surrogate one that could not be encoded at all."""
    from cronwheel.api.ops import _line

    record = {"event": "job.created", "seq": 1, **HOSTILE}
    line = _line(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    back = json.loads(line.decode("utf-8"), parse_constant=lambda word: pytest.fail(f"not JSON: {word}"))
    assert back["name"] == HOSTILE["name"] and back["emoji"] == HOSTILE["emoji"]
    assert back["ratio"] == "nan" and back["path"] == "/v1/jobs/\\udcff\\udc80x"

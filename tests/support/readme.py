"""Run the commands of the README files as a reader would: read from the file itself (so the
text cannot drift from the test), in a shell that did what the text says first
(``source .venv/bin/activate``), with no other environment added."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.daemon import REPO

#: the virtual environment the tests run in: the checkout's `.venv`, which the README activates
ACTIVATE = Path(sys.executable).parent / "activate"


def section(path: Path, heading: str) -> str:
    """The text under a ``## heading`` up to the next heading of that level or above."""
    lines = path.read_text().splitlines(keepends=True)
    level = len(heading.split(" ", 1)[0])
    start = next(i for i, line in enumerate(lines) if line.rstrip() == heading)
    out: list[str] = []
    fenced = False
    for line in lines[start + 1:]:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(rf"#{{1,{level}}} ", line):
            break  # a heading, not a shell comment inside a code block
        out.append(line)
    return "".join(out)


def shell_lines(text: str) -> list[str]:
    """The commands of the ```sh blocks in ``text``: comments and blank lines dropped,
    backslash continuations joined, a trailing ``# comment`` cut (outside quotes), and a
    heredoc (``cat > f <<'EOF'`` … ``EOF``) kept whole, its body as written."""
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        pending = ""
        heredoc: tuple[str, list[str]] | None = None  # (terminator, lines so far)
        for raw in block.splitlines():
            if heredoc is not None:
                heredoc[1].append(raw)
                if raw.strip() == heredoc[0]:
                    lines.append("\n".join(heredoc[1]))
                    heredoc = None
                continue
            line = pending + raw
            if line.rstrip().endswith("\\"):
                pending = line.rstrip()[:-1] + " "
                continue
            pending = ""
            command = _strip_comment(line).strip()
            opener = re.search(r"<<-?\s*['\"]?(\w+)['\"]?\s*$", command)
            if opener is not None:
                heredoc = (opener.group(1), [command])
                continue
            if command:
                lines.append(command)
    return lines


def _strip_comment(line: str) -> str:
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def reader_env() -> dict[str, str]:
    """The environment of a reader's terminal: this one, without anything cronwheel reads
    (no CRONWHEEL_* variable, no systemd directories) and without the test's PYTHONPATH."""
    drop = ("CRONWHEEL_", "STATE_DIRECTORY", "RUNTIME_DIRECTORY", "PYTHONPATH", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def run_as_reader(command: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``command`` in bash, after ``source .venv/bin/activate``, from ``cwd``."""
    script = f"source {ACTIVATE} && {command}"
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=reader_env(), capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def link_checkout(into: Path, *names: str) -> None:
    """Make ``into`` look like the checkout for relative paths (``examples/…``) without being
    it: the reader's ``./.cronwheel`` is then ``into/.cronwheel``, not the developer's."""
    for name in names:
        (into / name).symlink_to(REPO / name)

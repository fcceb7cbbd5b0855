"""The repository stands alone: no doc, comment or test points to a file outside it (the
design notes it was built from are not shipped)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUTSIDE = ("DESIGN" + ".md", "STYLE" + ".md", "/work" + "/", "system-" + "design.txt", "design " + "card")
WHERE = ("README.md", "Makefile", "pyproject.toml", "cronwheel", "docs", "man", "examples", "tests", "bench", "systemd")
TEXT = {".py", ".md", ".sql", ".json", ".js", ".css", ".html", ".sh", ".1", ".5", ".toml", ".service", ".txt", ""}


def test_nothing_points_outside_the_repository() -> None:
    found = []
    for top in WHERE:
        root = REPO / top
        for path in [root] if root.is_file() else root.rglob("*"):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix not in TEXT:
                continue
            text = path.read_text(errors="replace")
            found += [f"{path.relative_to(REPO)}: {word}" for word in OUTSIDE if word in text]
    assert found == []

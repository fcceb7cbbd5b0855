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


def test_the_tests_that_docs_cite_exist() -> None:
    """A doc or a data file's README that names a test (``tests/…/test_x.py``, with or without
    ``::test_name``) names one that is there."""
    import re

    missing = []
    for path in [REPO / "README.md", *(REPO / "docs").rglob("*.md"), *(REPO / "tests").rglob("*.md"), *(REPO / "examples").rglob("*.md")]:
        for cited, name in re.findall(r"\b(tests/[\w/]+\.py)(?:::(\w+))?", path.read_text()):
            target = REPO / cited
            if not target.is_file() or (name and not re.search(rf"^(async )?def {name}\(", target.read_text(), re.M)):
                missing.append(f"{path.relative_to(REPO)}: {cited}{'::' + name if name else ''}")
    assert missing == []


def test_no_two_test_files_share_a_name() -> None:
    """pytest imports a test file of a directory that is not a package by its base name alone:
    a second such file of the same name elsewhere fails the whole run's collection, as
    tests/contract and tests/integration's test_tenant_deletion.py once did in CI."""
    seen: dict[str, list[str]] = {}
    for path in (REPO / "tests").rglob("test_*.py"):
        if not (path.parent / "__init__.py").exists():  # a package's file is named by its package
            seen.setdefault(path.name, []).append(str(path.relative_to(REPO)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}

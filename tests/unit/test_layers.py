"""House rules that import-linter cannot state: no private names cross modules, and no module
grows past ~400 lines without saying at its top why it holds one idea."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "cronwheel"
#: a long module must say why in its docstring, with this phrase
LONG_MODULE_LINES = 400
WHY_LONG = "Why one module:"


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_private_name_is_imported_from_another_module() -> None:
    crossings = []
    for path in modules():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cronwheel"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        crossings.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {node.module}.{alias.name}")
    assert crossings == []


def test_long_modules_say_why_they_are_one_idea() -> None:
    unexplained = []
    for path in modules():
        lines = path.read_text().count("\n")
        if lines > LONG_MODULE_LINES:
            doc = ast.get_docstring(ast.parse(path.read_text())) or ""
            if WHY_LONG not in doc:
                unexplained.append(f"{path.relative_to(PACKAGE.parent)}: {lines} lines")
    assert unexplained == []

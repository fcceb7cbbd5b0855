"""The versioned migration files both stores ship: ``migrations/NNNN_name.sql``.

How each backend applies them differs (SQLite: one ``BEGIN IMMEDIATE`` per migration and
``PRAGMA user_version``; PostgreSQL: one transaction under an advisory lock), so that stays
in ``store/<backend>/migrate.py``; what a migration is and how the files are found and
checked is the same, and lives here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def discover(directory: Path) -> list[Migration]:
    """Every migration in ``directory``, in version order (versions are 1, 2, 3, … without
    gaps; a badly named file is an error rather than silently skipped)."""
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        m = _NAME.match(path.name)
        if m is None:
            raise RuntimeError(f"badly named migration {path.name!r} (want NNNN_name.sql)")
        found.append(Migration(int(m.group(1)), m.group(2), path.read_text(encoding="utf-8")))
    for expected, mig in enumerate(found, start=1):
        if mig.version != expected:
            raise RuntimeError(f"migration versions must be 1..n without gaps, found {mig.version}")
    return found

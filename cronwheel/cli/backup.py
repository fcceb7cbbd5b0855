"""``cronwheel backup``: an online, checked copy of the embedded SQLite store
(store/sqlite/backup.py). It reads the data directory's ``cronwheel.db`` itself, daemon
running or not: no daemon is asked, and no sqlite3 program is needed."""

from __future__ import annotations

import os
from pathlib import Path

import click

from cronwheel.cli import config as cfg
from cronwheel.cli import render
from cronwheel.cli.context import CONTEXT, Cli, WholeNumber, pass_cli
from cronwheel.store.sqlite.backup import BackupRefused, back_up


@click.command(context_settings=CONTEXT)
@click.argument("dest", type=click.Path(), metavar="DEST")
@click.option("--keep", type=WholeNumber(1, 100_000), metavar="N",
              help="DEST is a directory: then remove all but its N newest backups (named cronwheel-<UTC time>.db).")
@click.option("--json", "as_json", is_flag=True, help="Print what was made as JSON.")
@pass_cli
@click.pass_context
def backup(ctx: click.Context, app: Cli, /, dest: str, keep: int | None, as_json: bool) -> None:
    """Copy the daemon's SQLite store to DEST, a new file or a directory (where the copy is
    named cronwheel-<UTC time>.db), while the daemon runs. The copy is one consistent
    snapshot, compacted, private (0600), checked by SQLite's integrity_check and synced
    before it takes its name; an existing file is never overwritten. A PostgreSQL store is
    backed up with pg_dump instead.

    \b
    Examples:
      cronwheel backup /srv/backups/
      cronwheel backup /srv/backups/ --keep 14       # as a nightly job: the last two weeks
      cronwheel --data-dir /var/lib/cronwheel backup /srv/backups/before-upgrade.db
    """
    file: cfg.FileValues = ctx.meta.get("cronwheel.config", cfg.NO_FILE)
    store = os.environ.get("CRONWHEEL_STORE") or file.values.get("store")
    if isinstance(store, str) and store.startswith(("postgresql://", "postgres://")):
        raise click.ClickException(
            "this daemon's store is PostgreSQL: back it up with pg_dump (Backups in docs/operations.md)"
        )
    if app.unknown is not None:
        raise click.UsageError(app.unknown)
    if not dest:  # (a Path of "" is ".", the working directory)
        raise click.UsageError("DEST is empty: name a new file or a directory")
    try:
        made = back_up(app.data_dir / "cronwheel.db", Path(dest), keep)
    except BackupRefused as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        render.emit_json({"source": str(made.source.absolute()), "backup": str(made.dest.absolute()),
                          "bytes": made.size_bytes, "schema": made.schema, "jobs": made.jobs,
                          "seconds": round(made.seconds, 3), "removed": [str(p) for p in made.pruned]})  # fmt: skip
        return
    click.echo(f"{made.dest} ({made.size_bytes:,} bytes, schema {made.schema}, {made.jobs:,} jobs): "
               f"copied from {made.source.absolute()} and checked in {made.seconds:.1f} s")  # fmt: skip
    for path in made.pruned:
        click.echo(f"removed {path} (--keep {keep})")

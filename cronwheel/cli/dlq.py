"""``cronwheel dlq …``: the dead-letter queue, the executions that spent all their attempts:
list them, replay one with a fresh series of attempts, or purge it."""

from __future__ import annotations

from typing import Any

import click

from cronwheel.cli import render, views
from cronwheel.cli.context import CONTEXT, Cli, WholeNumber, pass_cli


@click.group(context_settings=CONTEXT)
def dlq() -> None:
    """The dead-letter queue: executions that spent all their attempts."""


@dlq.command("ls", context_settings=CONTEXT)
@click.option("-n", "--limit", type=WholeNumber(1, 100_000), default=100, show_default=True, help="At most N entries.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of executions.")
@pass_cli
def dlq_ls(app: Cli, limit: int, as_json: bool) -> None:
    """List dead-lettered executions."""
    dead: list[dict[str, Any]] = []
    after = None
    while len(dead) < limit:
        page = app.client.list_dead(min(1000, limit - len(dead)), after)
        dead.extend(page["executions"])
        after = page.get("next")
        if not after:
            break
    if as_json:
        render.emit_json(dead)
        return
    render.emit_table(views.DLQ_COLUMNS, views.dlq_rows(dead), empty="the dead-letter queue is empty")


@dlq.command("replay", context_settings=CONTEXT)
@click.argument("execution_id")
@click.option("--json", "as_json", is_flag=True, help="Print the execution as JSON.")
@pass_cli
def dlq_replay(app: Cli, execution_id: str, as_json: bool) -> None:
    """Run a dead-lettered execution again, with a fresh series of attempts."""
    data = app.client.replay_dead(execution_id)
    if as_json:
        render.emit_json(data)
    else:
        click.echo(f"Replaying execution {data['executionId']} ({data.get('status')})")


@dlq.command("purge", context_settings=CONTEXT)
@click.argument("execution_id")
@pass_cli
def dlq_purge(app: Cli, execution_id: str) -> None:
    """Delete a dead-lettered execution."""
    app.client.purge_dead(execution_id)
    click.echo(f"Purged execution {execution_id}")


"""What a node keeps in memory about things that come and go (tokens, jobs, tenants, clients)
returns to its baseline when they go: a node runs for months (bench/soak.py churns a real one).
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from cronwheel.core.tenants import Role, Tenant
from cronwheel.engine import tenancy
from cronwheel.engine.node import Node, NodeConfig
from cronwheel.obs.events import EventLog
from cronwheel.store.sqlite import SqliteStore


def _node(tmp_path: Path) -> Node:
    path = tmp_path / "cronwheel.db"
    return Node(NodeConfig(tmp_path, "n1"), SqliteStore.open(path), SqliteStore.open(path), EventLog("n1", stream=io.StringIO()))


def test_token_churn_keeps_only_the_newest_revocations_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tenancy, "REVOKED_REMEMBERED", 3, raising=False)  # raising: the old code had no bound
    node = _node(tmp_path)

    async def scenario() -> None:
        await node.create_tenant(Tenant("acme"))
        ids = []
        for _ in range(5):
            token, _secret = await node.create_token(Role.TENANT, "acme")
            await node.revoke_token(token.token_id)
            ids.append(token.token_id)
        assert [node.revoked_here(t) for t in ids] == [False, False, True, True, True]
        # forgotten here, still revoked: the store refuses it
        assert (await node.list_tokens("acme"))[0].revoked_at is not None

    try:
        asyncio.run(scenario())
    finally:
        node.writer.close()
        node.reader.close()


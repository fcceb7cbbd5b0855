"""A node's cache of the tenants' settings, refreshed from the store every TENANT_REFRESH_SEC,
must not forget what the node itself wrote while a refresh was reading: the 500-tenant
deletion test once had a tenant made with allowShell refused a command job a moment later
("tenant 't363' is not granted allowShell"), the refresh having read the tenants just before
it was made and put that list in place just after. On a real SQLite store and an in-process
node; the refresh's read is held (not faked) so that the two meet every time."""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path
from typing import Any

import pytest

from cronwheel.core.tenants import Tenant
from cronwheel.engine import tenancy
from cronwheel.engine.node import Node, NodeConfig
from cronwheel.obs.events import EventLog
from cronwheel.store.sqlite import SqliteStore


def test_a_tenant_made_while_a_refresh_reads_keeps_its_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tenancy, "TENANT_REFRESH_SEC", 0.01)
    path = tmp_path / "cronwheel.db"
    writer, reader = SqliteStore.open(path), SqliteStore.open(path)
    node = Node(NodeConfig(tmp_path, "n1"), writer, reader, EventLog("n1", stream=io.StringIO()))
    read, go_on, second = threading.Event(), threading.Event(), threading.Event()
    real = SqliteStore.list_tenants
    calls: list[int] = []

    def held(store: SqliteStore) -> Any:
        if store is reader:
            calls.append(1)
            if len(calls) == 2:  # the next refresh: the first one's list is in place by now
                second.set()
                go_on.wait(30)
            listed = real(store)
            if len(calls) == 1:
                read.set()
                go_on.wait(30)  # held with what it read, while the node makes the tenant
            return listed
        return real(store)

    monkeypatch.setattr(SqliteStore, "list_tenants", held)
    # another node's tenant, in the store before the first refresh reads it
    assert writer.create_tenant(Tenant("globex", weight=5), 0) is not None

    async def scenario() -> None:
        refresh = asyncio.ensure_future(node.tenant_refresh_loop())
        try:
            assert await asyncio.to_thread(read.wait, 30)
            await node.create_tenant(Tenant("acme", allow_shell=True))
            assert node.tenant_config("acme").allow_shell
            go_on.set()  # the first refresh goes on with the list it read before acme was made
            assert await asyncio.to_thread(second.wait, 30)
            assert node.tenant_config("acme").allow_shell, "the node forgot the tenant it had just made"
            # and the rest of that read is in place: what another node changed does not wait
            # for a refresh that reads after every write of this node's (none may, under a flood)
            assert node.tenant_weight("globex") == 5.0, "the stale read was dropped whole"
        finally:
            go_on.set()
            refresh.cancel()
            await asyncio.gather(refresh, return_exceptions=True)

    try:
        asyncio.run(scenario())
    finally:
        writer.close()
        reader.close()

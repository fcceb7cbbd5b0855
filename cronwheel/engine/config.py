"""How one node is set up: what ``cronwheel serve`` reads from its flags (daemon/serve.py)
and hands to ``Node``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cronwheel.core.limits import DLQ_KEEP_LAST
from cronwheel.core.tenants import HostAllow
from cronwheel.engine.channels import MailConfig
from cronwheel.engine.cluster import DEFAULT_LEASE_TTL_MS
from cronwheel.engine.disk import DISK_LOW_BYTES

#: a submission that finds the store unreachable (a restart, a failover) is tried again
#: until this budget is spent; then 503 (engine/submission.py)
SUBMIT_RETRY_MS = 3_000


@dataclass
class NodeConfig:
    data_dir: Path
    node_id: str
    workers: int = max(1, os.cpu_count() or 1)
    slots: int = 16
    reserved_high_slots: int = 0
    reaper_interval_ms: int = 1_000
    horizon_ms: int = 60_000
    claim_batch: int = 5_000
    #: claim ticks this far ahead of time (they wait in the delay wheel until due), so that the
    #: claim of a top-of-hour herd is paid before 00:00, not after it
    claim_ahead_ms: int = 2_000
    grace_sec: float = 30.0
    #: history retention: finished executions older than this, beyond the newest
    #: ``keep_last`` of each job, are pruned in the background; the dead-letter queue is not
    #: aged out, but each job keeps its newest ``dlq_keep_last`` dead letters (engine/retention.py)
    retention_ms: int = 30 * 86_400_000
    keep_last: int = 1_000
    dlq_keep_last: int = DLQ_KEEP_LAST
    retention_interval_ms: int = 300_000
    api_url: str | None = None  #: given to jobs as CRONWHEEL_URL (for `cronwheel effect`)
    worker_env: dict[str, str] = field(default_factory=dict)
    worker_cmd: list[str] | None = None  #: how to start a worker (default: this Python, -m)
    #: cluster mode (engine/cluster.py): bucket lease TTL, and the address other nodes see
    bucket_lease_ms: int = DEFAULT_LEASE_TTL_MS
    address: str = ""
    submit_retry_ms: int = SUBMIT_RETRY_MS
    #: under this much free space in the data directory: ``store.disk_low`` (engine/disk.py)
    disk_low_bytes: int = DISK_LOW_BYTES
    #: the daemon's --http-allow (tenants without a list of their own): webhooks obey it too;
    #: None when it is not set (any host), empty when it allows none
    http_allow: HostAllow = None
    mail: MailConfig | None = None  #: how email notifications are sent (None: they fail, and say why)

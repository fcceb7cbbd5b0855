"""History and the store's own log: retention of finished executions, WAL upkeep.

Part of the store contract (``store.base.Store`` is the union of the roles); the
conventions in ``store.base`` hold for every method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from cronwheel.core.records import DeadLettersPruned


class HistoryStore(ABC):
    """What keeps the store from growing without bound: pruning finished history and bounding
    the backend's own log."""

    # ---- retention
    @abstractmethod
    def prune_executions(
        self, older_than_ms: int, keep_last: int, after_job: str | None, jobs_per_call: int, limit: int
    ) -> tuple[int, str | None]:
        """Delete finished history, a few jobs at a time: for up to ``jobs_per_call`` jobs
        (ordered by id, starting after ``after_job``), delete up to ``limit`` executions in
        all that are SUCCEEDED, CANCELLED or SKIPPED, finished before ``older_than_ms``, and
        not among the job's ``keep_last`` newest executions (with their effects). DEAD
        executions are the dead-letter queue, bounded by ``prune_dead_letters`` alone; live
        ones are never pruned. Returns ``(deleted, cursor)``: pass the cursor back as
        ``after_job``; None when the pass over all jobs is complete."""

    @abstractmethod
    def prune_dead_letters(
        self, keep: int, after_job: str | None, rows_per_call: int, limit: int
    ) -> tuple[list[DeadLettersPruned], str | None]:
        """Bound each job's dead letters: read the next ``rows_per_call`` DEAD executions
        (at least ``keep`` + 1) in job order after ``after_job``, from the index of DEAD rows
        alone (jobs without dead letters cost nothing), and for each job found with more than
        ``keep``, delete its oldest (by tick, with their effects) until ``keep`` are left, up
        to ``limit`` executions in all. Returns ``(pruned, cursor)``: one entry per job that
        lost some, and the cursor to pass back as ``after_job``; None when the pass over the
        whole queue is complete."""

    @abstractmethod
    def prune_settled_jobs(
        self, older_than_ms: int, after_job: str | None, jobs_per_call: int, max_rows: int
    ) -> tuple[int, str | None]:
        """Delete settled jobs (SUCCEEDED, FAILED, CANCELLED) that are done with: settled before
        ``older_than_ms``, every execution finished before it and none DEAD, no notification
        about them still to tell. Each goes with its executions (and their effects), watch,
        idempotency keys, name and definition (``store/settled.py``). Reads the next
        ``jobs_per_call`` jobs after ``after_job`` (id order), then checks the settled ones
        among them a few at a time outside any write transaction, and deletes those it found in
        short write transactions, stopping once ``max_rows`` rows were deleted.
        Returns ``(jobs deleted, cursor)``: pass the cursor back as ``after_job``; None when
        the pass over all jobs is complete."""

    def checkpoint(self) -> None:
        """Give the backend a chance to bound its log (SQLite: checkpoint the WAL).
        A no-op unless a backend has such a log."""
        return None

    def maintain_log(self, disk_low: bool) -> int | None:
        """Keep the store's own log small, from the daemon's disk watch (every few seconds):
        SQLite checkpoints its WAL once it is over 16 MiB (``WAL_TARGET_BYTES``), and while
        the disk is low checkpoints at 4 MiB and truncates the file. Returns the log's size
        in bytes, or None for a backend whose log is not ours (PostgreSQL bounds its own)."""
        return None

"""``cronwheel logs -f``: the daemon's events, or a job's output as it is printed, execution
after execution, for as long as it runs, as ``tail -F`` follows a file: a daemon that goes
away (a restart) is waited for, said once, and followed on where it left off.

Nothing is shown twice or skipped: each stream's ``Cronwheel-Cursor`` header says where its
answer starts, and moved on by what came (an event's ``seq``, the bytes of output), it asks
the daemon for the rest (``after``). The event log is the daemon's memory: a restarted daemon
has a new one, sent whole. A run's output is live only while it runs; one that ended while
the daemon was away is finished from its stored output, when that begins with what was shown.
"""

from __future__ import annotations

import codecs
import functools
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from cronwheel.cli import render, views
from cronwheel.cli.away import Away, is_away
from cronwheel.cli.client import ApiError, Client, ClientError
from cronwheel.core.model import ExecStatus
from cronwheel.core.records import INTERRUPTED_REASON

POLL_SEC = 0.25  #: how often the job is looked at while no execution of it is going on
SETTLED = ("CANCELLED", "SUCCEEDED", "FAILED")  #: job states with no execution to come
#: what a follower does while the daemon is away
WAITING = "waiting for it to come back, then following on"
#: bytes of an attempt's output kept to match against its stored output (when the daemon
#: was away as it ended); its stored output holds 64 KiB characters at most, so no more
KEEP_SHOWN = 4 * 64 * 1024
CURSOR = "cronwheel-cursor"

T = TypeVar("T")
A = TypeVar("A")


def _print(text: str) -> None:
    """A job's output: on a terminal its control characters shown as visible escapes (a job
    must not clear the screen, retitle the window or write the clipboard of whoever follows
    it); into a pipe or a file exact, as ``cronwheel logs`` writes it."""
    sys.stdout.write(render.safe(text) if render.is_tty() else text)
    sys.stdout.flush()


def _problem(exc: ClientError) -> str:
    return f"the daemon cannot answer now ({exc})" if isinstance(exc, ApiError) else str(exc)


def _asking(away: Away, call: Callable[[A], T], arg: A) -> T:
    """``call(arg)`` (a read: asking again is always safe), until the daemon answers it."""
    while True:
        try:
            answer = call(arg)
        except ClientError as exc:
            if not is_away(exc):
                raise
            away.wait(_problem(exc))
            continue
        away.over()
        return answer


class _Shown:
    """Where this follower is in one attempt's output: the hand-off (its lease epoch, from
    the stream's cursor), the bytes had (the offset to resume at), and the first of them."""

    def __init__(self, before: dict[str, Any]) -> None:
        #: the hand-off a stream without a cursor will show: one running elsewhere, or the next
        self.expect = int(before.get("leaseEpoch") or 0) + (0 if before.get("status") == "RUNNING" else 1)
        self.epoch: int | None = None
        self.offset = 0
        self.head = bytearray()
        self._decode = codecs.getincrementaldecoder("utf-8")("replace").decode  # a character may come in two chunks

    def opened(self, headers: dict[str, str]) -> None:
        """A stream's cursor: which hand-off's output it is, and from which byte."""
        epoch, _, start = headers.get(CURSOR, "").partition(":")
        if not (epoch.isdigit() and start.isdigit()):
            self.epoch = self.expect if self.epoch is None else self.epoch
            return
        if self.epoch is not None and int(epoch) != self.epoch:
            raise _MovedOn()
        resuming = self.epoch is not None
        self.epoch = int(epoch)
        if int(start) > self.offset:
            if resuming:  # it printed more while we were away than a run keeps live
                self.flush()
                render.emit_note(f"[cronwheel: {int(start) - self.offset} bytes of its output were no longer kept]")
            self.offset = int(start)  # else a long run's bounded tail: where it starts

    def show(self, chunk: bytes) -> None:
        if len(self.head) == self.offset < KEEP_SHOWN:
            self.head += chunk[: KEEP_SHOWN - self.offset]
        self.offset += len(chunk)
        _print(self._decode(chunk))

    def flush(self) -> None:
        """The end of a stream: a character it left unfinished is not coming."""
        _print(self._decode(b"", True))

    def cursor(self) -> str | None:
        return None if self.epoch is None else f"{self.epoch}:{self.offset}"

    def resume(self, ex: dict[str, Any]) -> bool:
        """After the stream broke off: True to open it again (its attempt goes on, or has not
        begun); False when it ended meanwhile, said with the rest of its output as far as it
        is known: all of it, when its stored output begins with what was shown (it does unless
        the run printed over 64 KiB, or faster than the live view forwards)."""
        epoch, status = ex.get("leaseEpoch"), ex.get("status")
        if self.epoch is None or (epoch == self.epoch and status == "RUNNING"):
            return True
        if isinstance(epoch, int) and epoch < self.epoch:  # it has not begun: still to come?
            return not ExecStatus(str(status)).terminal
        stored = str(ex.get("output") or "").encode() if epoch == self.epoch else b""
        if len(self.head) == self.offset and stored.startswith(self.head):
            self.show(stored[self.offset :])
            self.flush()
        elif stored:
            render.emit_note(f"[cronwheel: its stored output is not the rest of what was shown here: `cronwheel logs "
                             f"{ex['executionId']}` shows it]")
        else:
            render.emit_note("[cronwheel: the attempt ended while the daemon was away: the rest of its output was not kept]")
        return False


class _MovedOn(Exception):
    """The stream is the output of another hand-off than the one this follower was showing."""


def _stream(client: Client, away: Away, before: dict[str, Any], target: dict[str, Any] | None = None) -> dict[str, Any]:
    """Print an execution's output as it comes, until its attempt ends; then say how it ended
    (``before``: the execution as last seen; ``target``: its job's, when known, for the words
    of its exit code). A daemon that goes away meanwhile is waited for, and the output
    resumed at the byte it had got to."""
    execution_id = before["executionId"]
    shown = _Shown(before)
    while True:
        try:
            for chunk in client.output(execution_id, follow=True, after=shown.cursor(), opened=shown.opened):
                shown.show(chunk)
        except (_MovedOn, ClientError) as exc:
            if isinstance(exc, ClientError):
                if not is_away(exc):
                    raise
                away.wait(_problem(exc))
            if shown.resume(_asking(away, client.get_execution, execution_id)):
                continue
        else:
            shown.flush()
            away.over()
        break
    ex = _asking(away, client.get_execution, execution_id)
    _ended(ex, target)
    return ex


def target_of(client: Client, execution: dict[str, Any]) -> dict[str, Any] | None:
    """The target of an execution's job, for the words of its exit code (an HTTP target's is
    the response's status); None when the job is no longer there."""
    try:
        target = client.get_job(str(execution.get("jobId"))).get("target")
    except ApiError as exc:
        if exc.status not in (403, 404):
            raise
        return None
    return target if isinstance(target, dict) else None


def _interrupted(ex: dict[str, Any]) -> bool:
    """Its last attempt was cut short by the daemon's stop: it runs again after the restart
    (or does already)."""
    return ex.get("status") in ("RETRY_WAIT", "PENDING", "RUNNING") and INTERRUPTED_REASON in str(ex.get("reason") or "")


def _ended(ex: dict[str, Any], target: dict[str, Any] | None) -> None:
    """How an execution's attempt ended, the same words however it was followed."""
    why = f" ({ex.get('reason')})" if _interrupted(ex) else ""
    render.emit_note(views.attempt_ending(ex, target) + why)


def follow_output(client: Client, ref: str) -> None:
    """Follow an execution's output (``ref`` an execution id), or a job's (its id or name):
    the execution going on now, then each next one, until the job has no execution to come or
    Ctrl-C. One execution is followed to the end of its attempt, or of the next when the
    daemon's stop cut it short (it runs again after the restart)."""
    away = Away(WAITING, limit_sec=None)
    try:
        if ":" in ref:
            try:
                ex = client.get_execution(ref)
            except ApiError as exc:
                if exc.status != 404:
                    raise
            else:
                target = _asking(away, functools.partial(target_of, client), ex)  # the words of its exit code
                while _interrupted(ex := _stream(client, away, ex, target)):
                    pass
                return
        _follow_job(client, away, client.resolve_job(ref))
    except KeyboardInterrupt:
        sys.exit(130)


def _follow_job(client: Client, away: Away, job: dict[str, Any]) -> None:
    """Each attempt of the job's executions that starts, in the order they started: the one
    going on now, then each next one, those that started and ended between two looks (or while
    the daemon was away) included, with what they printed."""
    job_id = job["jobId"]
    label = f"{job_id} ({job['name']})" if job.get("name") else job_id

    def key(execution: dict[str, Any] | None) -> tuple[str, int] | None:
        """Which attempt of which execution: a retry of the same execution is new output."""
        return None if execution is None else (execution["executionId"], execution["attempt"])

    latest = job.get("lastRun")  # the latest execution that started
    last = None if latest is not None and latest["status"] == "RUNNING" else key(latest)  # the past is not shown
    shown = _Started(latest)
    waiting = False
    while True:
        latest = job.get("lastRun")
        if latest is not None and key(latest) != last:
            last = key(latest)
            waiting = False
            for ex in shown.since(_asking(away, _listing(client), job_id)["executions"], latest):
                render.emit_note(f"output of {ex['executionId']} (attempt {ex['attempt']}):")
                if ex["status"] == "RUNNING":
                    _stream(client, away, ex, job.get("target"))
                else:  # it started and ended between two looks: what it printed
                    ex = _asking(away, client.get_execution, ex["executionId"])
                    _print(ex.get("output") or "")
                    _ended(ex, job.get("target"))
        elif job.get("status") in SETTLED:
            render.emit_note(f"job {label} is {job['status']}: no execution to come")
            return
        elif not waiting:
            render.emit_note(f"waiting for the next execution of {label} (Ctrl-C stops)")
            waiting = True
        else:
            time.sleep(POLL_SEC)
        job = _asking(away, client.get_job, job_id)


#: a job's newest executions looked at for those that started since the last one shown: more
#: than a job's ticks claimed ahead (2 s) and the runs of a restart
LISTED = 200


def _listing(client: Client) -> Callable[[str], dict[str, Any]]:
    return lambda job_id: client.list_executions(job_id, limit=LISTED)


class _Started:
    """The attempts a job follower has shown (execution id -> attempt), and the start before
    which nothing is shown (the past: the job's latest run when the follower began, unless it
    was running then)."""

    def __init__(self, latest: dict[str, Any] | None) -> None:
        self.floor = str(latest["startedAt"]) if latest is not None and latest.get("startedAt") else ""
        self.shown: dict[str, int] = {}
        if latest is not None and latest["status"] != "RUNNING":
            self.shown[latest["executionId"]] = latest["attempt"]

    def since(self, listed: list[dict[str, Any]], latest: dict[str, Any]) -> list[dict[str, Any]]:
        """The attempts not shown yet among ``listed`` (the job's newest executions) and
        ``latest``, oldest start first, each taken as shown."""
        new = {e["executionId"]: e for e in listed
               if e.get("startedAt") and e["status"] != "PENDING" and str(e["startedAt"]) >= self.floor
               and self.shown.get(e["executionId"]) != e["attempt"]}  # fmt: skip
        if self.shown.get(latest["executionId"]) != latest["attempt"]:
            new.setdefault(latest["executionId"], latest)
        # what is no longer among the newest cannot come back: forgotten, so that a long follow stays small
        keep = {e["executionId"] for e in listed} | {latest["executionId"]}
        self.shown = {x: a for x, a in self.shown.items() if x in keep}
        ordered = sorted(new.values(), key=lambda e: (str(e.get("startedAt") or ""), e["executionId"]))
        self.shown.update((e["executionId"], e["attempt"]) for e in ordered)
        return ordered


def follow_events(client: Client, show: Callable[[dict[str, Any]], None], **query: Any) -> None:
    """Print the daemon's events as they happen (``query``: the filters and ``n``, the past
    events to start with), until Ctrl-C. When the daemon closes the stream (it stops) or
    cannot be reached, wait for it and go on after the last event had: of the same daemon,
    the events since; of a restarted one (a new log), all of its own. A daemon never reached
    is an error at once, as for any command (exit 69)."""
    away = Away(WAITING, limit_sec=None)
    cursor: list[str] = []  # LOG:SEQ, the last event had (or where the first answer began)

    def opened(headers: dict[str, str]) -> None:
        if headers.get(CURSOR):
            cursor[:] = [headers[CURSOR]]
        away.over()

    try:
        while True:
            try:
                after = cursor[0] if cursor else None
                for record in client.events(follow=True, after=after, opened=opened, **{**query, "n": None if after else query.get("n")}):
                    log, _, seq = cursor[0].partition(":") if cursor else ("", "", "")
                    if log and isinstance(record.get("seq"), int) and record["seq"] > int(seq or 0):
                        cursor[:] = [f"{log}:{record['seq']}"]
                    show(record)
                problem = "the daemon closed the event stream (it is stopping)"
            except ClientError as exc:
                if not (cursor and is_away(exc)):
                    raise
                problem = _problem(exc)
            away.wait(problem)
    except KeyboardInterrupt:
        sys.exit(130)

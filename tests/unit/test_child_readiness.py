"""worker/children.Readiness: the one epoll set a worker watches its runs' descriptors in,
on a real uvloop loop with real pipes."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import uvloop

from cronwheel.worker.children import Readiness


def test_each_readable_descriptor_gets_its_handler_and_a_failing_one_costs_the_others_nothing() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        errors: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _loop, context: errors.append(context))
        watch = Readiness(loop)
        pipes = [os.pipe() for _ in range(3)]
        got: list[tuple[int, bytes]] = []
        done = asyncio.Event()

        def reader(i: int, r: int) -> None:
            if i == 0:  # fails every time, its input left unread: it is ready again at each poll
                raise RuntimeError("a handler that fails")
            got.append((i, os.read(r, 100)))
            watch.remove(r)
            if len(got) == 2:
                done.set()

        for i, (r, _) in enumerate(pipes):
            watch.add(r, lambda i=i, r=r: reader(i, r))
        for i, (_, w) in enumerate(pipes):  # in this order: epoll reports them in this order
            os.write(w, b"run %d" % i)
        await asyncio.wait_for(done.wait(), 10)
        assert sorted(got) == [(1, b"run 1"), (2, b"run 2")]
        assert errors and isinstance(errors[0]["exception"], RuntimeError)
        # removed before being closed: nothing is called for it again, however often it is ready
        r0 = pipes[0][0]
        watch.remove(r0)
        os.write(pipes[1][1], b"more")  # ready, but no longer watched
        called = len(got)
        await asyncio.sleep(0)
        assert len(got) == called
        watch.close()
        for r, w in pipes:
            os.close(r)
            os.close(w)

    uvloop.run(main())


def test_a_descriptor_removed_by_an_earlier_handler_of_the_same_batch_is_skipped() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        errors: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _loop, context: errors.append(context))
        watch = Readiness(loop)
        (ra, wa), (rb, wb) = os.pipe(), os.pipe()
        calls: list[str] = []
        both = asyncio.Event()

        def first(me: int, other: int, name: str) -> None:
            calls.append(name)
            watch.remove(me)
            watch.remove(other)  # the other one, ready in the same poll, must not be called now
            both.set()

        watch.add(ra, lambda: first(ra, rb, "a"))
        watch.add(rb, lambda: first(rb, ra, "b"))
        os.write(wa, b"x")
        os.write(wb, b"y")  # both ready before the loop next looks: one poll reports both
        await asyncio.wait_for(both.wait(), 10)
        await asyncio.sleep(0)
        assert len(calls) == 1 and not errors, (calls, errors)
        watch.close()
        for fd in (ra, wa, rb, wb):
            os.close(fd)

    uvloop.run(main())

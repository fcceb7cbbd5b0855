"""The cyclic garbage collector of a long-running process (the daemon, a local worker).

CPython's default thresholds (700, 10, 10) were made for short scripts. A herd allocates
tens of container objects per execution (records, grants, futures), almost all freed by
reference counting within one batch; at 700 allocations per young collection the collector
ran thousands of times per 100,000 executions, each pass also walking what the batch still
held, and promoted those to the older generations, whose passes walk the whole heap
(`py-spy --native`: `gc_collect_main`, ~4 % of the daemon's CPU in a 30,000 herd). Frozen
start-up objects (modules, functions, classes, the loaded schedule) are never walked again;
a young generation of 20,000 lets a batch's objects die before it is looked at. Cycles are
still collected: a young pass holds at most 20,000 objects (a few MiB).
"""

from __future__ import annotations

import gc

#: (young, middle, old): objects allocated between young passes, young passes per middle one,
#: middle passes per old one (the old one also waits for 25 % growth of the long-lived heap)
THRESHOLDS = (20_000, 20, 10)


def settle_heap() -> None:
    """Call once start-up is done: what exists now lives as long as the process."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)

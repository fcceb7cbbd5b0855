"""Notifications as durable work, written once for both stores (one module per part).

Every function here runs inside the caller's write transaction, through a ``Sql`` adapter
that hides the two drivers' differences (parameter style, JSON columns, list parameters,
row locks; ``sql.py``). The SQL itself is portable (``ON CONFLICT``, ``RETURNING``, partial indexes).

* ``hooks.after_outcomes`` is the hook the stores call in the transaction that records an
  execution's outcome (a completion, an expired lease, a ping): it matches the job's rules
  (or its tenant's defaults) and inserts one notification per (execution, rule). The
  primary key ``subject@rule_id`` makes the dedup a constraint: the same outcome noticed
  twice is told once. It also keeps the job's watch row (last outcome, dead-man's window).
* ``delivery``: ``claim`` / ``finish`` / ``expire`` / ``release_owner`` move notifications through
  PENDING → RUNNING → SENT | PENDING (retry) | DEAD, fenced by ``lease_epoch`` like
  executions; ``claim`` applies each rule's rate limit (HELD instead of RUNNING), and
  ``summarize_held`` later tells what was held back in one notification.
* ``windows.check_windows`` fires ``missed`` for the dead-man's windows that passed.
* ``reads``: list, replay, purge, prune and count notifications.
"""


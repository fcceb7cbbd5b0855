"""The checker must catch what it claims to catch (a checker that cannot fail is worthless)."""

from tests.support.checker import History, check


def ex(job, tick, status="SUCCEEDED", epoch=1):
    return {"jobId": job, "scheduledAt": tick, "executionId": f"{job}:{tick}", "status": status, "leaseEpoch": epoch}


def test_clean_history_has_no_violations():
    h = History({"k1": "j1"}, [ex("j1", 1)], [["j1:1", 1, "charge", 1]], {"j1"})
    assert check(h) == {}


def test_each_violation_is_reported():
    h = History(
        acknowledged={"k1": "j1", "k2": "j2", "k3": "j3", "k4": "j1"},
        executions=[ex("j1", 1, epoch=2), ex("j1", 1), ex("j2", 5, "RUNNING"), ex("j4", 9)],
        ledger=[["j1:1", 1, "c", 1], ["j1:1", 2, "c", 1], ["j2:5", 7, "c", 1]],
        jobs_in_store={"j1", "j2"},
    )
    v = check(h)
    assert set(v) == {"lost", "duplicate_job", "duplicate_tick", "duplicate_effect", "stale_write", "stuck", "missing_effect"}

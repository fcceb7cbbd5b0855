"""The store contract for tenants, API tokens and the registered-jobs quota.

Written against ``Store`` only: every backend in ``BACKENDS`` runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cronwheel.core.model import JobStatus
from cronwheel.core.records import CreateOutcome, NewJob
from cronwheel.core.tenants import (
    ApiToken,
    Role,
    Tenant,
    hash_token,
    new_token_id,
    new_token_secret,
)
from cronwheel.store.base import Store, StoreError
from tests.contract.conftest import MIN, T0, create, new_job
from tests.support.store_probe import get_tenant


def capped(max_jobs: int, **kw) -> NewJob:
    nj = new_job(**kw)
    nj.max_jobs = max_jobs
    return nj


def token(role: Role = Role.TENANT, tenant: str | None = "acme", name: str | None = None) -> tuple[str, ApiToken]:
    secret = new_token_secret()
    return secret, ApiToken(new_token_id(), hash_token(secret), role, tenant, name)


# ---------------------------------------------------------------- tenants


def test_there_is_always_a_default_tenant(store: Store) -> None:
    (default,) = store.list_tenants()
    assert default.name == "default" and default.weight == 1
    assert default.max_running is None and default.max_jobs is None and default.submit_rate is None
    assert default.allow_shell is False and default.http_allow is None  # none of its own
    assert default.allow_high_priority is True  # the admin's own jobs may be high
    assert get_tenant(store, "default") == default
    assert get_tenant(store, "nobody") is None


def test_create_tenant_stores_every_setting(store: Store) -> None:
    t = Tenant(
        "acme", weight=3, max_running=2, max_jobs=10, submit_rate=2.5, submit_burst=5,
        allow_shell=True, http_allow=("api.example.com", "*.acme.test"), created_at=1, updated_at=2,
        allow_high_priority=True,
    )
    created = store.create_tenant(t, T0)
    assert created == Tenant(
        "acme", 3, 2, 10, 2.5, 5, True, ("api.example.com", "*.acme.test"), created_at=T0, updated_at=T0,
        allow_high_priority=True,
    )
    assert get_tenant(store, "acme") == created
    assert [x.name for x in store.list_tenants()] == ["acme", "default"]


def test_the_high_tier_is_a_grant_no_tenant_holds_until_given(store: Store) -> None:
    """allow_high_priority: false for a new tenant (made explicitly, or by its first job), kept
    apart from allow_shell, granted and withdrawn by an update."""
    assert store.create_tenant(Tenant("acme"), T0).allow_high_priority is False  # type: ignore[union-attr]
    create(store, new_job(tenant="implicit"))
    assert get_tenant(store, "implicit").allow_high_priority is False  # type: ignore[union-attr]
    granted = store.update_tenant("acme", {"allow_high_priority": True}, T0 + MIN)
    assert granted is not None and granted.allow_high_priority is True and granted.allow_shell is False
    assert get_tenant(store, "acme") == granted
    assert store.update_tenant("acme", {"weight": 2}, T0 + 2 * MIN).allow_high_priority is True  # type: ignore[union-attr]
    revoked = store.update_tenant("acme", {"allow_high_priority": False}, T0 + 3 * MIN)
    assert revoked is not None and revoked.allow_high_priority is False and revoked.weight == 2
    assert {t.name: t.allow_high_priority for t in store.list_tenants()} == {"acme": False, "default": True, "implicit": False}


#: a store as version 23 left it: tenants, and jobs of each priority and status
_BEFORE_24 = [
    "INSERT INTO tenants (name, created_at, updated_at) VALUES ('hi', 0, 0), ('lo', 0, 0), ('gone', 0, 0), ('paused', 0, 0)",
    "INSERT INTO jobs (id, bucket_id, status, next_run_at, schedule, timezone, misfire, overlap, tenant, priority,"
    " max_attempts) VALUES"
    " ('j1', 1, 'ACTIVE', 1, '* * * * *', 'UTC', 'run_once', 'allow', 'hi', 0, 3),"
    " ('j2', 1, 'ACTIVE', 1, '* * * * *', 'UTC', 'run_once', 'allow', 'lo', 1, 3),"
    " ('j3', 1, 'ACTIVE', 1, '* * * * *', 'UTC', 'run_once', 'allow', 'lo', 2, 3),"
    " ('j4', 1, 'CANCELLED', NULL, '* * * * *', 'UTC', 'run_once', 'allow', 'gone', 0, 3),"
    " ('j5', 1, 'PAUSED', 1, '* * * * *', 'UTC', 'run_once', 'allow', 'paused', 0, 3)",
]


def _upgraded_from_23(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    """A store at version 23 with the rows of ``_BEFORE_24``, opened (migrated) by this cronwheel."""
    if backend == "sqlite":
        import apsw

        from cronwheel.store.sqlite import SqliteStore
        from cronwheel.store.sqlite.migrate import apply_migrations

        conn = apsw.Connection(str(tmp_path / "v23.db"))
        apply_migrations(conn, 0, until=23)
        for statement in _BEFORE_24:
            conn.execute(statement)
        conn.close()
        return SqliteStore.open(tmp_path / "v23.db")
    import psycopg

    from cronwheel.store.postgres import PostgresStore
    from cronwheel.store.postgres import migrate as pg_migrate

    dsn = request.getfixturevalue("postgres_server").database(migrated=False)
    request.addfinalizer(lambda: dsn.__exit__(None, None, None))
    url = dsn.__enter__()
    with psycopg.connect(url, autocommit=True) as pg:
        pg_migrate.apply_migrations(pg, 0, until=23)
        for statement in _BEFORE_24:
            pg.execute(statement)
    return PostgresStore.open(url)


def test_the_upgrade_grants_the_high_tier_to_tenants_with_a_high_job(backend: str, tmp_path: Path,
                                                                       request: pytest.FixtureRequest) -> None:
    """Version 24: every tenant with a live job (ACTIVE, PAUSED, ...) at high priority keeps
    running it at high, the default tenant (the admin's) may; no other tenant gets the grant."""
    store = _upgraded_from_23(backend, tmp_path, request)
    try:
        assert store.schema_version() >= 24
        assert {t.name: t.allow_high_priority for t in store.list_tenants()} == {
            "default": True, "hi": True, "paused": True, "lo": False, "gone": False}
    finally:
        store.close()


def test_create_tenant_twice_changes_nothing(store: Store) -> None:
    first = store.create_tenant(Tenant("acme", weight=2), T0)
    assert store.create_tenant(Tenant("acme", weight=9), T0 + MIN) is None
    assert get_tenant(store, "acme") == first


def test_update_tenant_changes_only_what_is_named(store: Store) -> None:
    store.create_tenant(Tenant("acme", weight=2, max_running=5, submit_rate=1.0), T0)
    updated = store.update_tenant("acme", {"max_running": 1, "http_allow": ("a.example",)}, T0 + MIN)
    assert updated is not None
    assert (updated.weight, updated.max_running, updated.submit_rate, updated.http_allow) == (2, 1, 1.0, ("a.example",))
    assert (updated.created_at, updated.updated_at) == (T0, T0 + MIN)
    cleared = store.update_tenant("acme", {"max_running": None, "submit_rate": None, "allow_shell": True}, T0 + 2 * MIN)
    assert cleared is not None
    assert cleared.max_running is None and cleared.submit_rate is None and cleared.allow_shell is True
    assert get_tenant(store, "acme") == cleared
    assert store.update_tenant("nobody", {"weight": 2}, T0) is None
    with pytest.raises(ValueError):
        store.update_tenant("acme", {"name": "evil"}, T0)
    assert get_tenant(store, "acme") == cleared


def test_an_empty_http_allow_is_kept_apart_from_none(store: Store) -> None:
    """None (no list of its own: the daemon's applies) and an empty list (no host at all) are
    two settings: each is stored, read back and changed to the other as it is."""
    assert store.create_tenant(Tenant("closed", http_allow=()), T0).http_allow == ()  # type: ignore[union-attr]
    assert store.create_tenant(Tenant("open"), T0).http_allow is None  # type: ignore[union-attr]
    assert get_tenant(store, "closed").http_allow == ()  # type: ignore[union-attr]
    assert get_tenant(store, "open").http_allow is None  # type: ignore[union-attr]
    assert store.update_tenant("open", {"http_allow": ()}, T0 + MIN).http_allow == ()  # type: ignore[union-attr]
    assert store.update_tenant("closed", {"http_allow": None}, T0 + MIN).http_allow is None  # type: ignore[union-attr]
    assert store.update_tenant("closed", {"weight": 2}, T0 + 2 * MIN).http_allow is None  # type: ignore[union-attr]
    assert store.update_tenant("open", {"weight": 2}, T0 + 2 * MIN).http_allow == ()  # type: ignore[union-attr]
    assert {t.name: t.http_allow for t in store.list_tenants()} == {"closed": None, "default": None, "open": ()}
    create(store, new_job(tenant="implicit"))  # a tenant its first job makes: none of its own
    assert get_tenant(store, "implicit").http_allow is None  # type: ignore[union-attr]


def test_the_default_tenant_can_be_configured_too(store: Store) -> None:
    updated = store.update_tenant("default", {"weight": 4}, T0)
    assert updated is not None and updated.weight == 4


def test_submitting_for_an_unknown_tenant_creates_it_with_defaults(store: Store) -> None:
    create(store, new_job(tenant="fresh"))
    fresh = get_tenant(store, "fresh")
    assert fresh is not None and fresh.weight == 1 and fresh.max_jobs is None
    # and an explicit create afterwards does not overwrite it
    assert store.create_tenant(Tenant("fresh", weight=7), T0) is None


# ---------------------------------------------------------------- tokens


def test_tokens_are_found_by_hash_and_listed(store: Store) -> None:
    store.create_tenant(Tenant("acme"), T0)
    s1, t1 = token(name="ci")
    s2, t2 = token(Role.WORKER)
    s3, t3 = token(Role.ADMIN, None)
    assert store.create_token(t1, T0)
    assert store.create_token(t2, T0 + 1)
    assert store.create_token(t3, T0 + 2)
    found = store.get_token_by_hash(hash_token(s1))
    assert found is not None
    assert (found.token_id, found.role, found.tenant, found.name, found.created_at, found.revoked_at) == (
        t1.token_id, Role.TENANT, "acme", "ci", T0, None,
    )
    assert store.get_token_by_hash(hash_token(s3)).role is Role.ADMIN  # type: ignore[union-attr]
    assert store.get_token_by_hash(hash_token(new_token_secret())) is None
    assert [t.token_id for t in store.list_tokens()] == [t1.token_id, t2.token_id, t3.token_id]
    assert [t.token_id for t in store.list_tokens("acme")] == [t1.token_id, t2.token_id]
    assert store.list_tokens("nobody") == []
    assert all(t.token_hash not in (s1, s2, s3) for t in store.list_tokens())


def test_a_token_needs_an_existing_tenant(store: Store) -> None:
    _, t = token(tenant="ghost")
    assert store.create_token(t, T0) is False
    assert store.list_tokens() == []


def test_roles_and_tenants_must_agree(store: Store) -> None:
    store.create_tenant(Tenant("acme"), T0)
    with pytest.raises(ValueError):
        store.create_token(token(Role.ADMIN, "acme")[1], T0)
    with pytest.raises(ValueError):
        store.create_token(token(Role.TENANT, None)[1], T0)
    assert store.list_tokens() == []


def test_token_ids_and_hashes_are_unique(store: Store) -> None:
    store.create_tenant(Tenant("acme"), T0)
    _, t = token()
    assert store.create_token(t, T0)
    with pytest.raises(StoreError):
        store.create_token(ApiToken(t.token_id, hash_token("other"), Role.TENANT, "acme"), T0)
    with pytest.raises(StoreError):
        store.create_token(ApiToken(new_token_id(), t.token_hash, Role.TENANT, "acme"), T0)
    assert len(store.list_tokens()) == 1


def test_revoke_keeps_the_first_time_and_the_row(store: Store) -> None:
    store.create_tenant(Tenant("acme"), T0)
    secret, t = token()
    store.create_token(t, T0)
    revoked = store.revoke_token(t.token_id, T0 + MIN)
    assert revoked is not None and revoked.revoked_at == T0 + MIN and not revoked.active
    again = store.revoke_token(t.token_id, T0 + 2 * MIN)
    assert again is not None and again.revoked_at == T0 + MIN
    found = store.get_token_by_hash(hash_token(secret))
    assert found is not None and found.revoked_at == T0 + MIN
    assert store.revoke_token("tk_0000000000000000", T0) is None


def test_retention_prunes_tokens_revoked_before_the_cutoff_and_only_those(store: Store) -> None:
    store.create_tenant(Tenant("acme"), T0)
    made = [token()[1] for _ in range(5)]
    for t in made:
        store.create_token(t, T0)
    for i, t in enumerate(made[:4]):  # revoked at T0+1m .. T0+4m; the fifth stays active
        store.revoke_token(t.token_id, T0 + (i + 1) * MIN)
    assert store.prune_revoked_tokens(T0 + 3 * MIN, 1) == 1  # a limit per call
    assert store.prune_revoked_tokens(T0 + 3 * MIN, 100) == 1  # revoked before the cutoff only
    assert store.prune_revoked_tokens(T0 + 3 * MIN, 100) == 0
    assert {t.token_id for t in store.list_tokens("acme")} == {t.token_id for t in made[2:]}
    assert store.prune_revoked_tokens(T0 + 60 * MIN, 100) == 2
    assert [t.token_id for t in store.list_tokens("acme")] == [made[4].token_id]


def test_the_last_active_admin_token_is_never_revoked(store: Store) -> None:
    store.create_tenant(Tenant("acme"), T0)
    _, first = token(Role.ADMIN, None)
    _, second = token(Role.ADMIN, None)
    _, metrics = token(Role.METRICS, None)
    _, tenant = token()
    for t in (first, second, metrics, tenant):
        store.create_token(t, T0)
    revoked = store.revoke_token(first.token_id, T0 + MIN)
    assert revoked is not None and revoked.revoked_at == T0 + MIN  # another admin is left
    kept = store.revoke_token(second.token_id, T0 + MIN)
    assert kept is not None and kept.token_id == second.token_id and kept.active  # the last one
    assert [t.token_id for t in store.list_tokens() if t.role is Role.ADMIN and t.active] == [second.token_id]
    # other roles are not guarded; a revoked admin token revoked again keeps its first time
    for other in (metrics, tenant):
        gone = store.revoke_token(other.token_id, T0 + MIN)
        assert gone is not None and not gone.active
    again = store.revoke_token(first.token_id, T0 + 2 * MIN)
    assert again is not None and again.revoked_at == T0 + MIN


def test_tokens_survive_reopening(store_factory) -> None:
    s = store_factory()
    s.create_tenant(Tenant("acme", max_running=3), T0)
    secret, t = token()
    s.create_token(t, T0)
    s.close()
    again = store_factory()
    assert again.get_token_by_hash(hash_token(secret)) is not None
    assert get_tenant(again, "acme").max_running == 3  # type: ignore[union-attr]


# ---------------------------------------------------------------- the registered-jobs quota


def test_max_jobs_refuses_beyond_the_quota_in_one_batch(store: Store) -> None:
    jobs = [capped(2, tenant="acme") for _ in range(3)]
    results = store.create_jobs(jobs, T0)
    assert [r.outcome for r in results] == [CreateOutcome.CREATED, CreateOutcome.CREATED, CreateOutcome.QUOTA_EXCEEDED]
    assert results[2].job_id is None
    assert store.count_jobs(tenant="acme") == 2
    assert store.get_job(jobs[2].job_id) is None


def test_max_jobs_counts_committed_and_in_batch_jobs_of_that_tenant_only(store: Store) -> None:
    create(store, new_job(tenant="acme"), new_job(tenant="other"), new_job(tenant="other"))
    plain = new_job(tenant="acme")  # no quota on this one, but it counts for the next
    results = store.create_jobs([plain, capped(2, tenant="acme")], T0)
    assert [r.outcome for r in results] == [CreateOutcome.CREATED, CreateOutcome.QUOTA_EXCEEDED]
    assert store.create_jobs([capped(3, tenant="other")], T0)[0].outcome is CreateOutcome.CREATED


def test_cancelled_and_completed_jobs_do_not_count(store: Store) -> None:
    (a, b) = create(store, new_job(tenant="acme"), new_job(tenant="acme"))
    store.cancel_job(a, T0)
    store.set_job_status(b, [JobStatus.ACTIVE], JobStatus.PAUSED, T0)
    assert store.create_jobs([capped(2, tenant="acme")], T0)[0].outcome is CreateOutcome.CREATED  # b (paused) + this
    assert store.create_jobs([capped(2, tenant="acme")], T0)[0].outcome is CreateOutcome.QUOTA_EXCEEDED
    found = store.tenant_with_jobs("acme")  # what GET /v1/tenants/acme shows against maxJobs
    assert found is not None and found[0].name == "acme" and found[1] == 2
    assert store.tenant_with_jobs("nobody") is None


def test_a_replay_is_answered_even_at_the_quota(store: Store) -> None:
    (created,) = store.create_jobs([capped(1, tenant="acme", key="k1", request_hash="h1")], T0)
    assert created.outcome is CreateOutcome.CREATED
    (again,) = store.create_jobs([capped(1, tenant="acme", key="k1", request_hash="h1")], T0)
    assert again.outcome is CreateOutcome.REPLAYED and again.job_id == created.job_id
    assert store.create_jobs([capped(1, tenant="acme", key="k2", request_hash="h2")], T0)[0].outcome is CreateOutcome.QUOTA_EXCEEDED
    # a refused key was not recorded: once there is room, the same key creates the job
    store.cancel_job(str(created.job_id), T0)
    assert store.create_jobs([capped(1, tenant="acme", key="k2", request_hash="h2")], T0)[0].outcome is CreateOutcome.CREATED


def test_idempotency_keys_are_scoped_per_tenant(store: Store) -> None:
    a = new_job(tenant="acme", key="same", request_hash="ha")
    b = new_job(tenant="beta", key="same", request_hash="hb")
    ra, rb = store.create_jobs([a, b], T0)
    assert ra.outcome is rb.outcome is CreateOutcome.CREATED
    assert ra.job_id != rb.job_id
    assert store.get_job(str(ra.job_id), tenant="beta") is None

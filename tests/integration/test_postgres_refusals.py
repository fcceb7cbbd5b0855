"""``cronwheel serve --store postgresql://…`` refused by the server: a wrong password, an
unknown role or a missing database is refused for good (exit 2: the unit does not restart
it), naming the refusal and what to check, never the password; a server that cannot take
the node now (unreachable, too many connections) is "may pass" (exit 75). Real processes
against the suite's PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from tests.support.daemon import REPO
from tests.support.postgres import PostgresServer, free_port, url_of

pytestmark = pytest.mark.postgres

PASSWORD = "Pa55-not-this-one"


def serve(tmp_path: Path, store: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PGPASSWORD", None)
    cmd = [sys.executable, "-m", "cronwheel", "serve", "--data-dir", str(tmp_path / "data"), "--http", "127.0.0.1:0",
           "--workers", "1", "--store", store]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)


def refusal(res: subprocess.CompletedProcess[str], status: int) -> str:
    assert res.returncode == status, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == "", res
    [line] = res.stderr.strip().splitlines()
    return line


def url(server: PostgresServer, **params: str) -> str:
    return url_of({**conninfo_to_dict(server.admin_dsn), **params})


@contextlib.contextmanager
def password_role(server: PostgresServer) -> Iterator[str]:
    """A role that must give its password (scram-sha-256 from 127.0.0.1): a line ahead of
    the cluster's trust lines in pg_hba.conf, taken out again afterwards."""
    if server.cluster is None:
        pytest.skip("changing pg_hba.conf needs the suite's own cluster")
    role = f"cw_pw_{os.getpid()}"
    server._admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'right-one'")
    hba = server.cluster.data / "pg_hba.conf"
    before = hba.read_text()
    hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n{before}")
    server._admin.execute("SELECT pg_reload_conf()")
    try:
        yield role
    finally:
        hba.write_text(before)
        server._admin.execute("SELECT pg_reload_conf()")
        server._admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_a_wrong_password_or_none_is_refused_for_good_without_printing_it(
    postgres_server: PostgresServer, tmp_path: Path,
) -> None:
    with password_role(postgres_server) as role:
        line = refusal(serve(tmp_path, url(postgres_server, user=role, password=PASSWORD, dbname="postgres")), 2)
        assert f'password authentication failed for user "{role}"' in line, line
        assert "check the user and password of --store" in line and "pg_hba.conf" in line, line
        assert PASSWORD not in line and "password=" not in line, line
        line = refusal(serve(tmp_path, url(postgres_server, user=role, dbname="postgres")), 2)
        assert "no password supplied" in line and "check the user and password" in line, line


def test_an_unknown_role_or_database_is_refused_for_good(postgres_server: PostgresServer, tmp_path: Path) -> None:
    line = refusal(serve(tmp_path, url(postgres_server, user="cw_no_such_role", dbname="postgres")), 2)
    assert 'role "cw_no_such_role" does not exist' in line and "check the user of --store" in line, line
    line = refusal(serve(tmp_path, url(postgres_server, dbname="cw_no_such_db")), 2)
    assert 'database "cw_no_such_db" does not exist' in line and "CREATE DATABASE" in line, line


def test_a_server_that_cannot_take_the_node_now_may_pass(postgres_server: PostgresServer, tmp_path: Path) -> None:
    closed = free_port()
    line = refusal(serve(tmp_path, url(postgres_server, host="127.0.0.1", port=str(closed), dbname="postgres")), 75)
    assert "Connection refused" in line, line
    role = f"cw_full_{os.getpid()}"  # "too many connections for role": it may have room later
    postgres_server._admin.execute(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 0")
    try:
        line = refusal(serve(tmp_path, url(postgres_server, user=role, dbname="postgres")), 75)
        assert "too many connections" in line, line
    finally:
        postgres_server._admin.execute(f"DROP ROLE IF EXISTS {role}")
    # one host refusing for good and another unreachable: a restart may reach a better one
    port = conninfo_to_dict(postgres_server.admin_dsn)["port"]
    hosts = url(postgres_server, host="127.0.0.1,127.0.0.1", port=f"{port},{closed}", dbname="cw_no_such_db")
    refusal(serve(tmp_path, hosts), 75)

"""A throwaway PostgreSQL for the test session, and a fresh database for every test.

Where the server comes from, in order:

1. ``CRONWHEEL_TEST_POSTGRES_DSN`` (a libpq conninfo of a role allowed to CREATE DATABASE):
   an existing server; every database the suite makes there is named ``cwtest_<pid>_…`` and
   dropped at the end.
2. ``initdb``/``pg_ctl`` on PATH or in ``/usr/lib/postgresql/*/bin`` (the newest): a cluster
   of our own in a temporary directory (on /dev/shm when there is room), listening on 127.0.0.1 at a free port (and on a Unix
   socket in that directory), trust authentication, and fsync, synchronous_commit and
   full_page_writes off (a test cluster is thrown away; the store still asks for
   ``synchronous_commit=on`` per session, so the code path is the production one). As root,
   initdb and pg_ctl run as the ``postgres`` OS user (initdb refuses root). It is stopped
   (``pg_ctl -m immediate``) and removed at the end of the session.
3. Neither: the PostgreSQL tests are skipped with a loud reason, or fail when
   ``CRONWHEEL_REQUIRE_POSTGRES=1`` (CI sets it: a CI run that silently skipped the
   cluster store would prove nothing).

Databases: the first request makes a template database migrated to the latest schema; each
test then gets ``CREATE DATABASE t_<n> TEMPLATE <it>`` (about 20 ms), dropped after the test.

Failover tests get a pair of their own (``replicated_pair``): a primary and a synchronous
streaming standby (``pg_basebackup -R -X stream``), so a commit the primary acknowledged is
flushed on the standby too, and the test can ``stop_immediate()`` the one and ``promote()``
the other.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, urlencode

import pytest

ENV_DSN = "CRONWHEEL_TEST_POSTGRES_DSN"
ENV_REQUIRE = "CRONWHEEL_REQUIRE_POSTGRES"
OS_USER = "postgres"  #: who runs initdb/pg_ctl when the tests run as root

#: settings of a test cluster: fast and disposable
TEST_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "wal_init_zero": "off",  # new WAL segments are not zero-filled first (CREATE DATABASE writes a lot of WAL)
    "shared_buffers": "64MB",
    "log_min_messages": "warning",
    "log_min_error_statement": "panic",  # expected errors (conflicts the tests provoke) stay quiet
}


def unavailable(reason: str) -> NoReturn:
    """Skip loudly, or fail when PostgreSQL is required."""
    if os.environ.get(ENV_REQUIRE) == "1":
        pytest.fail(f"PostgreSQL is required ({ENV_REQUIRE}=1) but unavailable: {reason}", pytrace=False)
    pytest.skip(
        f"!!! POSTGRESQL STORE NOT TESTED: {reason}. Install PostgreSQL (initdb/pg_ctl) or set "
        f"{ENV_DSN}; set {ENV_REQUIRE}=1 to make this an error !!!"
    )


def find_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl: PATH first, then the newest Debian-style
    ``/usr/lib/postgresql/<major>/bin``."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent

    def major(path: str) -> int:
        name = Path(path).parent.name
        return int(name) if name.isdigit() else -1

    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=major, reverse=True):
        bindir = Path(candidate)
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    return None


def pg_tool(bindir: Path, name: str) -> Path | None:
    """Another PostgreSQL program of the same installation: in ``bindir``, next to the file
    ``bindir/initdb`` links to (``/usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/…``),
    or on PATH."""
    for candidate in (bindir / name, (bindir / "initdb").resolve().parent / name):
        if candidate.is_file():
            return candidate
    found = shutil.which(name)
    return Path(found) if found else None


def scratch_dir() -> str | None:
    """Where test clusters live: ``CRONWHEEL_TEST_PG_DIR``, else /dev/shm when it is a roomy
    tmpfs (CREATE DATABASE writes the whole template: on a busy disk that is 300 ms per test
    instead of 20), else the system's temporary directory."""
    chosen = os.environ.get("CRONWHEEL_TEST_PG_DIR")
    if chosen:
        return chosen
    with contextlib.suppress(OSError):
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize >= 1 << 30 and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    return None


def url_of(params: dict[str, Any]) -> str:
    """A libpq conninfo as a ``postgresql://`` URL (multi-host and options included)."""
    params = {k: str(v) for k, v in params.items()}
    user = quote(params.pop("user", ""), safe="")
    password = params.pop("password", None)
    auth = f"{user}:{quote(password, safe='')}@" if password is not None else (f"{user}@" if user else "")
    hosts = params.pop("host", "").split(",")
    ports = params.pop("port", "").split(",")
    if len(ports) == 1:
        ports = ports * len(hosts)
    netloc = ",".join(
        (quote(h, safe="") if h.startswith("/") else h) + (f":{p}" if p else "")
        for h, p in zip(hosts, ports, strict=True)
    )
    dbname = quote(params.pop("dbname", ""), safe="")
    query = f"?{urlencode(params)}" if params else ""
    return f"postgresql://{auth}{netloc}/{dbname}{query}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A PostgreSQL cluster of our own: ``Cluster.create(bindir)`` runs initdb in a new
    temporary directory; ``start``/``stop`` as often as needed; ``destroy`` removes it."""

    def __init__(self, bindir: Path, root: Path) -> None:
        self.bindir = bindir
        self.root = root
        self.data = root / "data"
        self.log = root / "postgres.log"
        self.port = 0

    @staticmethod
    def _as_root() -> bool:
        return os.geteuid() == 0

    def _run(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = list(cmd)
        if self._as_root():
            argv = ["runuser", "-u", OS_USER, "--", *argv] if shutil.which("runuser") else [
                "su", OS_USER, "-s", "/bin/sh", "-c", " ".join(f"'{a}'" for a in argv)]  # fmt: skip
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)

    @staticmethod
    def _new_root() -> Path:
        """A private temporary directory, owned by the OS user that runs the server."""
        user = None
        if Cluster._as_root():
            try:
                user = pwd.getpwnam(OS_USER)
            except KeyError:
                unavailable(f"running as root and there is no {OS_USER!r} OS user to run initdb as")
        root = Path(tempfile.mkdtemp(prefix="cronwheel-pg-", dir=scratch_dir()))
        os.chmod(root, 0o700)
        if user is not None:
            os.chown(root, user.pw_uid, user.pw_gid)
        return root

    @classmethod
    def create(cls, bindir: Path, settings: dict[str, str] | None = None) -> Cluster:
        """initdb a new cluster; ``settings`` override ``TEST_SETTINGS``."""
        cluster = cls(bindir, cls._new_root())
        out = cluster._run(
            str(bindir / "initdb"), "-D", str(cluster.data), "-U", "postgres", "--auth=trust",
            "--no-sync", "--encoding=UTF8", "--locale=C",
        )
        if out.returncode != 0:
            cluster.destroy()
            unavailable(f"initdb failed: {(out.stderr or out.stdout).strip()[-500:]}")
        cluster.configure({**TEST_SETTINGS, **(settings or {})})
        return cluster

    def configure(self, settings: dict[str, str], file: str = "postgresql.conf") -> None:
        """Append settings to a configuration file (a later line wins over an earlier one;
        ``postgresql.auto.conf`` wins over ``postgresql.conf``)."""
        settings = {**settings, "unix_socket_directories": f"'{self.root}'"} if file == "postgresql.conf" else settings
        with open(self.data / file, "a", encoding="utf-8") as conf:
            conf.write("\n# cronwheel test cluster\n")
            conf.writelines(f"{k} = {v}\n" for k, v in settings.items())

    def start(self) -> None:
        """Start on ``self.port`` (a free port the first time; the same one after a stop)."""
        attempts = 3 if self.port == 0 else 1
        for _ in range(attempts):
            port = self.port or free_port()
            out = self._run(
                str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "30",
                "-o", f"-p {port}", "start",
            )
            if out.returncode == 0:
                self.port = port
                return
        raise RuntimeError(f"pg_ctl start failed: {out.stderr.strip()}\n{self.log_tail()}")

    def stop(self, mode: str = "immediate") -> None:
        if self.data.exists():
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def stop_immediate(self) -> None:
        """Stop as a crash would (``pg_ctl -m immediate``: no shutdown checkpoint, every
        session cut at once)."""
        out = self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        if out.returncode != 0:
            raise RuntimeError(f"pg_ctl stop -m immediate failed: {out.stderr.strip()}\n{self.log_tail()}")

    def promote(self) -> None:
        """A standby becomes a primary (``pg_ctl promote -w``: returns once it accepts writes)."""
        out = self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", "-t", "30", "promote")
        if out.returncode != 0:
            raise RuntimeError(f"pg_ctl promote failed: {out.stderr.strip()}\n{self.log_tail()}")

    def sql(self, query: str, args: Any = None, dbname: str = "postgres") -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.dsn(dbname), autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(query, args)
            return cur.fetchall() if cur.description is not None else []

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"


class PostgresServer:
    """The session's server: hands out fresh databases."""

    def __init__(self, admin_dsn: str, prefix: str, cluster: Cluster | None = None) -> None:
        import psycopg

        self.admin_dsn = admin_dsn
        self.prefix = prefix
        self.cluster = cluster
        self._admin = psycopg.connect(admin_dsn, autocommit=True)
        self._lock = threading.Lock()
        self._count = 0
        self._template: str | None = None
        self._made: list[str] = []

    def dsn(self, dbname: str) -> str:
        """A ``postgresql://`` URL (what ``--store`` takes) for a database of this server."""
        from psycopg.conninfo import conninfo_to_dict

        return url_of({**conninfo_to_dict(self.admin_dsn), "dbname": dbname})

    def _name(self) -> str:
        self._count += 1
        return f"{self.prefix}_{self._count}"

    def _template_name(self) -> str:
        """A database at the latest schema, made once: tests copy it instead of migrating."""
        if self._template is None:
            from cronwheel.store.postgres import PostgresStore

            name = f"{self.prefix}_template"
            self._admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
            self._made.append(name)
            PostgresStore.open(self.dsn(name)).close()
            self._template = name
        return self._template

    def create_database(self, migrated: bool = True) -> str:
        """A new database (at the latest schema, or empty); returns its name."""
        with self._lock:
            template = self._template_name() if migrated else "template0"
            name = self._name()
            self._admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
            self._made.append(name)
            return name

    def drop_database(self, name: str) -> None:
        with self._lock:
            self._admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            with contextlib.suppress(ValueError):
                self._made.remove(name)

    @contextlib.contextmanager
    def database(self, migrated: bool = True) -> Iterator[str]:
        """A fresh database for one test; yields its DSN and drops it afterwards."""
        name = self.create_database(migrated)
        try:
            yield self.dsn(name)
        finally:
            self.drop_database(name)

    def close(self) -> None:
        for name in list(self._made):
            with contextlib.suppress(Exception):
                self._admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._admin.close()


@contextlib.contextmanager
def session_server() -> Iterator[PostgresServer]:
    """The server for the whole session (see the module docstring for where it comes from)."""
    try:
        import psycopg
    except ImportError as exc:
        unavailable(f"psycopg is not installed ({exc})")
    dsn = os.environ.get(ENV_DSN)
    if dsn:
        try:
            server = PostgresServer(dsn, f"cwtest_{os.getpid()}")
        except psycopg.Error as exc:
            unavailable(f"cannot connect to {ENV_DSN}: {exc}")
        try:
            yield server
        finally:
            server.close()
        return
    bindir = find_bindir()
    if bindir is None:
        unavailable(f"no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin, and {ENV_DSN} is not set")
    cluster = Cluster.create(bindir)
    try:
        cluster.start()
        server = PostgresServer(cluster.dsn(), "t", cluster)
        try:
            yield server
        finally:
            server.close()
    finally:
        cluster.destroy()


@contextlib.contextmanager
def dedicated_cluster() -> Iterator[Cluster]:
    """A small cluster of its own, for a test that stops and starts the server."""
    bindir = find_bindir()
    if bindir is None:
        if os.environ.get(ENV_DSN):
            pytest.skip(f"stopping a server needs a local PostgreSQL (initdb/pg_ctl); {ENV_DSN} is an external one")
        unavailable("no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin")
    cluster = Cluster.create(bindir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


#: a primary that waits for its standby before it acknowledges a commit: with these, what a
#: client was told is committed survives the primary's loss (full_page_writes back on: a
#: base backup and crash recovery want it; fsync stays off, a process crash keeps the page
#: cache)
PRIMARY_SETTINGS = {
    "wal_level": "replica",
    "max_wal_senders": "5",
    "wal_keep_size": "'256MB'",
    "synchronous_commit": "on",
    "synchronous_standby_names": "'standby1'",
    "full_page_writes": "on",
}


class ReplicatedPair:
    """A primary and its synchronous streaming standby (``application_name=standby1``)."""

    def __init__(self, primary: Cluster, standby: Cluster) -> None:
        self.primary = primary
        self.standby = standby

    @classmethod
    def create(cls, bindir: Path) -> ReplicatedPair:
        primary = Cluster.create(bindir, PRIMARY_SETTINGS)
        try:
            # replication connections from loopback (initdb's default file has this line too)
            with open(primary.data / "pg_hba.conf", "a", encoding="utf-8") as hba:
                hba.write("host replication postgres 127.0.0.1/32 trust\n")
            primary.start()
            standby = Cluster(bindir, Cluster._new_root())
        except BaseException:
            primary.destroy()
            raise
        pair = cls(primary, standby)
        try:
            out = standby._run(
                str(pg_tool(bindir, "pg_basebackup")), "-D", str(standby.data), "-R", "-X", "stream", "-c", "fast",
                "--no-sync", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres", timeout=120,
            )
            if out.returncode != 0:
                raise RuntimeError(f"pg_basebackup failed: {(out.stderr or out.stdout).strip()[-500:]}")
            # its own socket directory; and once promoted it must not wait for a standby of
            # its own that nobody started (an HA manager would reconfigure that, we do it now)
            standby.configure({"synchronous_standby_names": "''", "hot_standby": "on"})
            conninfo = f"host=127.0.0.1 port={primary.port} user=postgres application_name=standby1"
            standby.configure({"primary_conninfo": f"'{conninfo}'"}, file="postgresql.auto.conf")
            standby.start()
        except BaseException:
            pair.destroy()
            raise
        return pair

    def sync_state(self) -> str | None:
        rows = self.primary.sql("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'")
        return str(rows[0][0]) if rows else None

    def dsn(self, dbname: str = "postgres") -> str:
        """The multi-host URL a cronwheel node is given: primary first, then the standby; only
        a server that accepts writes is taken (``target_session_attrs=read-write``)."""
        hosts = ",".join("127.0.0.1" for _ in (self.primary, self.standby))
        ports = f"{self.primary.port},{self.standby.port}"
        return url_of({"host": hosts, "port": ports, "user": "postgres", "dbname": dbname,
                       "target_session_attrs": "read-write"})

    def destroy(self) -> None:
        self.primary.destroy()
        self.standby.destroy()


@contextlib.contextmanager
def replicated_pair(sync_timeout: float = 30) -> Iterator[ReplicatedPair]:
    """A primary and a standby that is ``sync`` in ``pg_stat_replication``, for one test."""
    from tests.support.wait import wait_for

    bindir = find_bindir()
    if bindir is None:
        if os.environ.get(ENV_DSN):
            pytest.skip(f"a failover test needs a local PostgreSQL (initdb/pg_ctl); {ENV_DSN} is an external one")
        unavailable("no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin")
    if pg_tool(bindir, "pg_basebackup") is None:
        unavailable(f"no pg_basebackup next to {bindir / 'initdb'} or on PATH")
    pair = ReplicatedPair.create(bindir)
    try:
        wait_for(lambda: pair.sync_state() == "sync", sync_timeout, interval=0.1,
                 what="the standby to be a synchronous standby of the primary")
        yield pair
    finally:
        pair.destroy()

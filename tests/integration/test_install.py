"""`make install DESTDIR=…`: the tree it lays out, `systemd-analyze verify` on the installed
unit, and the unit's ExecStart run as systemd would run it (its user, environment and
directories), with nothing but the installed configuration file; then `make uninstall`."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_dist import bare_python, get, make
from tests.integration.test_systemd import _unit_settings
from tests.support.daemon import REPO
from tests.support.wait import wait_for

pytestmark = pytest.mark.slow

PREFIX = "/usr/local"
UNIT = f"{PREFIX}/lib/systemd/system/cronwheel.service"
CONFIG = "/etc/cronwheel/cronwheel.toml"
#: a uid from the range DynamicUser= allocates from (61184-65519)
DYNAMIC_UID = 61_999


@pytest.fixture(scope="module")
def installed() -> Iterator[Path]:
    """One `make install` into a DESTDIR every user can read (the daemon runs as another)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    root = Path(tempfile.mkdtemp(prefix="cronwheel-install-"))
    root.chmod(0o755)
    dest = root / "dest"
    venv_bin = Path(sys.executable).parent
    res = make("-o", ".venv/.installed", "install", f"DESTDIR={dest}", f"PREFIX={PREFIX}", f"DIST={root / 'dist'}",
               f"PY={sys.executable}", f"SHIV={venv_bin / 'shiv'}", "STAMP=.venv/.installed")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    try:
        yield dest
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_tree(installed: Path) -> None:
    files = sorted(str(p.relative_to(installed)) for p in installed.rglob("*") if p.is_file())
    assert files == [
        "etc/cronwheel/cronwheel.toml",
        "usr/local/bin/cronwheel",
        "usr/local/lib/systemd/system/cronwheel.service",
        "usr/local/share/doc/cronwheel/cron-replacement.conf.example",
        "usr/local/share/man/man1/cronwheel.1",
        "usr/local/share/man/man5/cronwheel.5",
        "usr/local/share/man/man5/cronwheel.toml.5",
    ]
    assert os.access(installed / "usr/local/bin/cronwheel", os.X_OK)
    unit = _unit_settings((installed / UNIT.lstrip("/")).read_text())
    assert unit["ExecStart"] == [f"{PREFIX}/bin/cronwheel serve --config {CONFIG}"]
    # the wheel `make dist` built on the way carries the man pages too (pip installs them)
    (wheel,) = (installed.parent / "dist").glob("cronwheel-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        pages = sorted(n.split(".data/data/", 1)[1] for n in zf.namelist() if ".data/data/share/man/" in n)
    assert pages == ["share/man/man1/cronwheel.1", "share/man/man5/cronwheel.5", "share/man/man5/cronwheel.toml.5"]


def test_systemd_analyze_verifies_the_installed_unit(installed: Path, tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    # verify checks that ExecStart's program exists on this host, and that Documentation=
    # pages exist: point the first at the installed executable, the second at the installed pages
    units = tmp_path / "units"
    units.mkdir()
    text = (installed / UNIT.lstrip("/")).read_text()
    (units / "cronwheel.service").write_text(text.replace(f"{PREFIX}/bin/cronwheel", str(installed / "usr/local/bin/cronwheel")))
    env = {**os.environ, "MANPATH": str(installed / "usr/local/share/man")}
    res = subprocess.run(
        ["systemd-analyze", "verify", str(units / "cronwheel.service")],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert res.returncode == 0 and res.stderr == "" and res.stdout == "", res.stderr + res.stdout


def test_exec_start_runs_as_the_unit_would(installed: Path) -> None:
    """systemd, emulated: a dynamic user, the unit's Environment=, StateDirectory=,
    RuntimeDirectory=, CacheDirectory= (with the $*_DIRECTORY variables), WorkingDirectory=
    and UMask=; the command line exactly as ExecStart= has it, the installed paths re-rooted in
    DESTDIR. The configuration's data_dir is the unit's state directory (/var/lib/cronwheel),
    re-rooted the same way: the only change to the installed file."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running as the unit's own user needs root and setpriv")
    unit = _unit_settings((installed / UNIT.lstrip("/")).read_text())
    assert unit["DynamicUser"] == ["yes"]
    root = installed.parent / "host"
    dirs = {
        "STATE_DIRECTORY": root / "var/lib" / unit["StateDirectory"][0],
        "RUNTIME_DIRECTORY": root / "run" / unit["RuntimeDirectory"][0],
        "CACHE_DIRECTORY": root / "var/cache" / unit["CacheDirectory"][0],
    }
    for path in dirs.values():
        path.mkdir(parents=True)
        os.chown(path, DYNAMIC_UID, DYNAMIC_UID)
    dirs["STATE_DIRECTORY"].chmod(int(unit["StateDirectoryMode"][0], 8))

    config = installed / CONFIG.lstrip("/")
    settings = tomllib.loads(config.read_text())
    assert settings["data_dir"] == "/var/lib/cronwheel"
    config.write_text(config.read_text().replace('"/var/lib/cronwheel"', f'"{dirs["STATE_DIRECTORY"]}"'))
    conf_text = config.read_text()
    if "\nhttp =" not in conf_text:  # the default port may be taken on a test machine
        config.write_text(conf_text + 'http = "127.0.0.1:0"\n')

    argv = shlex.split(unit["ExecStart"][0])
    argv[0] = str(installed / argv[0].lstrip("/"))
    argv = [str(installed / a.lstrip("/")) if a == CONFIG else a for a in argv]
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
           **{k: str(v) for k, v in dirs.items()}}
    for assignment in unit.get("Environment", []):
        for word in shlex.split(assignment):
            key, _, value = word.partition("=")
            env[key] = value.replace("%C", str(root / "var/cache")).replace("%S", str(root / "var/lib"))
    python = bare_python()[0]
    if python != "/usr/bin/python3":  # the zipapp's #! finds python3 on PATH, as under systemd
        pytest.skip("no system Python of this minor version for the zipapp")
    umask = int(unit["UMask"][0], 8)
    cwd = unit["WorkingDirectory"][0].replace("%S", str(root / "var/lib"))
    log = open(root / "serve.log", "wb")  # noqa: SIM115 - the child keeps it
    proc = subprocess.Popen(
        ["setpriv", f"--reuid={DYNAMIC_UID}", f"--regid={DYNAMIC_UID}", "--clear-groups", *argv],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True,
        preexec_fn=lambda: os.umask(umask),
    )
    log.close()
    try:
        addr = dirs["STATE_DIRECTORY"] / "http.addr"

        def up() -> bool:
            assert proc.poll() is None, (root / "serve.log").read_text()[-3000:]
            return addr.exists() and get(addr.read_text().strip() + "/healthz") == 200

        wait_for(up, 60, what="the installed unit's daemon to answer /healthz")
        assert (dirs["RUNTIME_DIRECTORY"] / "http.addr").exists()
        assert os.stat(dirs["STATE_DIRECTORY"] / "cronwheel.db").st_uid == DYNAMIC_UID
        # the CLI finds the daemon through the same file, from any directory
        cli = subprocess.run(
            [str(installed / "usr/local/bin/cronwheel"), "--config", str(config), "add", "@daily", "--name", "n", "--", "true"],
            capture_output=True, text=True, timeout=60, cwd="/", env={**env, "SHIV_ROOT": str(root / "cli-shiv")},
        )
        assert cli.returncode == 0 and "Created job" in cli.stdout, cli.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    assert proc.returncode == 0, (root / "serve.log").read_text()[-3000:]


def test_uninstall_removes_what_install_put(installed: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    shutil.copytree(installed, dest, symlinks=True)
    res = subprocess.run(["make", "-s", "-C", str(REPO), "uninstall", f"DESTDIR={dest}", f"PREFIX={PREFIX}"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    left = [p for p in dest.rglob("*") if p.is_file()]
    # the configuration stays when it was changed (the previous test re-rooted its data_dir)
    changed = (installed / CONFIG.lstrip("/")).read_text() != (REPO / "etc/cronwheel.toml").read_text()
    assert left == ([dest / CONFIG.lstrip("/")] if changed else []), left


def test_another_prefix_puts_the_unit_where_systemd_looks_and_the_cli_reads_its_sysconfdir(tmp_path: Path) -> None:
    """`make install PREFIX=/opt/cw` put the unit in /opt/cw/lib/systemd/system, which systemd
    does not read, and a SYSCONFDIR other than /etc left the CLI reading /etc's file, so
    `cronwheel ls` did not find the daemon "from any directory"."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dest = tmp_path / "dest"
    venv_bin = Path(sys.executable).parent
    vars_ = [f"DESTDIR={dest}", "PREFIX=/opt/cw", "SYSCONFDIR=/opt/cw/etc"]
    res = make("-o", ".venv/.installed", "install", *vars_, f"DIST={tmp_path / 'dist'}", f"PY={sys.executable}",
               f"SHIV={venv_bin / 'shiv'}", "STAMP=.venv/.installed")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    found = subprocess.run(["pkg-config", "--variable=systemdsystemunitdir", "systemd"], capture_output=True, text=True) \
        if shutil.which("pkg-config") else None
    unitdir = (found.stdout.strip() if found is not None and found.returncode == 0 else "") or "/lib/systemd/system"
    assert unitdir in ("/lib/systemd/system", "/usr/lib/systemd/system"), unitdir  # where systemd looks
    unit = _unit_settings((dest / unitdir.lstrip("/") / "cronwheel.service").read_text())
    assert unit["ExecStart"] == ["/opt/cw/bin/cronwheel serve --config /opt/cw/etc/cronwheel/cronwheel.toml"]
    assert (dest / "opt/cw/etc/cronwheel/cronwheel.toml").is_file() and not (dest / "opt/cw/lib").exists()
    assert not (tmp_path / "dist" / "sysconfdir.py").exists()  # the build's preamble is in the single file only

    # the installed CLI reads the SYSCONFDIR it was built for (here staged in DESTDIR: absent)
    python = bare_python()
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "SHIV_ROOT": str(tmp_path / "shiv")}
    shown = subprocess.run([*python, str(dest / "opt/cw/bin/cronwheel"), "config"], capture_output=True, text=True,
                           env=env, timeout=60, cwd="/")
    assert shown.returncode == 0, shown.stderr
    assert "# configuration file: none (/opt/cw/etc/cronwheel/cronwheel.toml does not exist)" in shown.stdout.splitlines()
    # and its help says so: `config --help` named /etc/cronwheel/cronwheel.toml whatever the build read
    for command in ("config", "serve"):
        helped = subprocess.run([*python, str(dest / "opt/cw/bin/cronwheel"), command, "--help"], capture_output=True,
                                text=True, env=env, timeout=60, cwd="/")
        assert helped.returncode == 0, helped.stderr
        assert "/opt/cw/etc/cronwheel/cronwheel.toml" in helped.stdout, helped.stdout
        assert not re.search(r"(?<!/opt/cw)/etc/cronwheel", helped.stdout), helped.stdout

    res = make("-s", "uninstall", *vars_, timeout=60)
    assert res.returncode == 0, res.stderr
    assert [p for p in dest.rglob("*") if p.is_file()] == []

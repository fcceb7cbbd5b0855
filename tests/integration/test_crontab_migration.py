"""Real crontabs through ``cronwheel import-crontab`` into a real daemon: Debian's system
crontabs as the packages ship them (tests/data/debian), user crontabs with settings lines,
``%``, macros, names and ``@reboot``; each job checked field by field, the way back through
``export``, and imported jobs of both formats running with the right user, shell,
environment, zone and standard input."""

from __future__ import annotations

import datetime as dt
import grp
import json
import os
import pwd
import secrets
import shutil
import subprocess
import zoneinfo
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.daemon import REPO, Daemon
from tests.support.wait import wait_for

DEBIAN = REPO / "tests" / "data" / "debian"
PATH_DEBIAN = "/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin"
#: every member of an API job that import does not set, at its default
DEFAULTS: dict[str, Any] = {
    "name": None, "tenant": "default", "status": "ACTIVE", "runAt": None, "timezone": "UTC", "payload": None,
    "retryPolicy": {"maxAttempts": 3, "initialBackoffSec": 1.0, "maxBackoffSec": 300.0, "multiplier": 2.0, "jitter": 0.2},
    "timeoutSec": 3600.0, "leaseSec": 60.0, "priority": "default", "overlap": "allow", "misfire": "run_once",
    "jitterSec": 0, "misfireGraceSec": None, "env": {}, "runAs": None, "shell": None, "stdin": None,
    "calendars": [], "activeFrom": None, "activeUntil": None, "onSuccess": [], "onFailure": [], "managedBy": None,
    "notify": [], "expectSuccessWithin": None, "window": None,
}  # fmt: skip
#: what ``MAILTO=ann@example.com`` becomes: one email rule on failure, at the default limits
ANN_MAIL = {"on": "failure", "via": "email", "to": ["ann@example.com"], "maxPerHour": 30, "maxAttempts": 8}
#: members that differ from job to job whatever the file says
VOLATILE = ("jobId", "bucketId", "nextRunAt", "createdAt", "updatedAt", "lastRun")


def job(schedule: str, command: str, **fields: Any) -> dict[str, Any]:
    """The API job object an import must produce (less its volatile members)."""
    return {**DEFAULTS, "schedule": schedule, "target": {"command": command}, **fields}


def root_job(schedule: str, command: str, **fields: Any) -> dict[str, Any]:
    return job(schedule, command, runAs={"user": "root"}, **fields)


#: what each Debian file must become, line by line
DEBIAN_JOBS: dict[str, list[dict[str, Any]]] = {
    "cron.d/e2scrub_all": [
        root_job("30 3 * * 0", "test -e /run/systemd/system || SERVICE_MODE=1 /usr/lib/x86_64-linux-gnu/e2fsprogs/e2scrub_all_cron"),
        root_job("10 3 * * *", "test -e /run/systemd/system || SERVICE_MODE=1 /sbin/e2scrub_all -A -r"),
    ],
    "cron.d/sysstat": [
        root_job("5-55/10 * * * *", "command -v debian-sa1 > /dev/null && debian-sa1 1 1",
                 env={"PATH": "/usr/lib/sysstat:/usr/sbin:/usr/sbin:/usr/bin:/sbin:/bin"}),
        root_job("59 23 * * *", "command -v debian-sa1 > /dev/null && debian-sa1 60 2",
                 env={"PATH": "/usr/lib/sysstat:/usr/sbin:/usr/sbin:/usr/bin:/sbin:/bin"}),
    ],
    "cron.d/certbot": [
        root_job("0 */12 * * *", "test -x /usr/bin/certbot -a \\! -d /run/systemd/system && perl -e 'sleep int(rand(43200))' "
                 "&& certbot -q renew --no-random-sleep-on-renew", shell="/bin/sh", env={"PATH": PATH_DEBIAN}),
    ],
    "cron.d/php": [
        root_job("09,39 * * * *", "[ -x /usr/lib/php/sessionclean ] && if [ ! -d /run/systemd/system ]; then /usr/lib/php/sessionclean; fi"),
    ],
    "cron.d/anacron": [
        root_job("30 7-23 * * *", "[ -x /etc/init.d/anacron ] && if [ ! -d /run/systemd/system ]; then "
                 "/usr/sbin/invoke-rc.d anacron start >/dev/null; fi", shell="/bin/sh", env={"PATH": PATH_DEBIAN}),
    ],
    "crontab": [
        root_job("17 * * * *", "cd / && run-parts --report /etc/cron.hourly", shell="/bin/sh", env={"PATH": PATH_DEBIAN}),
        root_job("25 6 * * *", "test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }",
                 shell="/bin/sh", env={"PATH": PATH_DEBIAN}),
        root_job("47 6 * * 7", "test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.weekly; }",
                 shell="/bin/sh", env={"PATH": PATH_DEBIAN}),
        root_job("52 6 1 * *", "test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.monthly; }",
                 shell="/bin/sh", env={"PATH": PATH_DEBIAN}),
    ],
}  # fmt: skip

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root (the CI runs as root)")


def jobs(d: Daemon) -> list[dict[str, Any]]:
    return d.get("/v1/jobs?limit=1000").json()["jobs"]


def settled(j: dict[str, Any]) -> dict[str, Any]:
    """A job without its volatile members (and its rules without their ids, a hash)."""
    out = {k: v for k, v in j.items() if k not in VOLATILE}
    out["notify"] = [{k: v for k, v in r.items() if k != "ruleId"} for r in j["notify"]]
    return out


def stable(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs without their volatile members, in a stable order."""
    out = [settled(j) for j in found]
    return sorted(out, key=lambda j: json.dumps(j, sort_keys=True))


def imported(d: Daemon, result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The jobs an ``import-crontab --json`` run created or found, in line order."""
    rows = json.loads(result.stdout)
    by_id = {j["jobId"]: j for j in jobs(d)}
    return [by_id[r["jobId"]] for r in rows if "jobId" in r]


# ---------------------------------------------------------------- Debian's system crontabs


def test_debian_system_crontabs_import_as_written(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    daemon = make_daemon()
    total = 0
    for name, expected in DEBIAN_JOBS.items():
        path = DEBIAN / name
        # cron.d files are read in the system format by their path; /etc/crontab's copy here is
        # not at /etc/crontab, so it says so
        args = ["--system"] if name == "crontab" else []
        res = daemon.cli("import-crontab", "--json", *args, str(path))
        assert res.returncode == 0, (name, res.stderr)
        got = imported(daemon, res)
        assert [{k: v for k, v in j.items() if k not in VOLATILE} for j in got] == expected, name
        for j in got:  # the bug this fixes: the user field taken as the command's first word
            assert not j["target"]["command"].startswith("root"), j
            assert j["nextRunAt"] is not None
        total += len(expected)
        again = daemon.cli("import-crontab", *args, str(path))
        assert again.returncode == 0 and f"0 jobs created, {len(expected)} already there" in again.stderr, again.stderr
    assert len(jobs(daemon)) == total == 11

    # the way back: export as a system crontab, import the export: nothing changes
    exported = daemon.cli("export", "--format", "crontab", "--system")
    assert exported.returncode == 0, exported.stderr
    assert "# skipped" not in exported.stdout
    back = tmp_path / "exported.crontab"
    back.write_text(exported.stdout)
    res = daemon.cli("import-crontab", "--system", str(back))
    assert res.returncode == 0 and "0 jobs created, 11 already there" in res.stderr, res.stderr
    assert len(jobs(daemon)) == 11
    # and into another daemon it makes the very same jobs
    other = make_daemon("other")
    res = other.cli("import-crontab", "--system", str(back))
    assert res.returncode == 0 and "11 jobs created" in res.stderr, res.stderr
    assert stable(jobs(other)) == stable(jobs(daemon))


def test_a_system_crontab_kept_outside_etc_is_recognised_when_read_as_a_user_one(daemon: Daemon, tmp_path: Path) -> None:
    # a copy of /etc/crontab (or of a cron.d file) under another name would be read in the
    # user format: `root<TAB>cd / …` would become each command; the import asks which it is
    for source in ("crontab", "cron.d/certbot"):
        copy = tmp_path / f"copy-of-{source.replace('/', '-')}"
        copy.write_bytes((DEBIAN / source).read_bytes())
        for args in (("--dry-run",), ("--dry-run", "--json"), ()):
            res = daemon.cli("import-crontab", *args, str(copy))
            assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
            assert f"{copy}: this looks like a system crontab (user field): use --system" in res.stderr, (source, args, res.stderr)
            assert "nothing was imported" in res.stderr
        assert daemon.get("/v1/jobs").json()["jobs"] == []
        # what --system reads is what it is: no warning, and no command starting with root
        res = daemon.cli("import-crontab", "--system", "--dry-run", str(copy))
        assert "looks like a system crontab" not in res.stderr, res.stderr
        assert not [x for x in res.stdout.splitlines() if x.startswith("line ") and "root" in x], res.stdout
        res = daemon.cli("import-crontab", "--user", "--dry-run", str(copy))  # chosen: not second-guessed
        assert "looks like a system crontab" not in res.stderr
    user = tmp_path / "mine.crontab"
    user.write_text(USER_CRONTAB)
    assert "looks like a system crontab" not in daemon.cli("import-crontab", "--dry-run", str(user)).stderr


# ---------------------------------------------------------------- a user crontab


USER_CRONTAB = """\
# ann's crontab (crontab -l)
SHELL=/bin/bash
PATH=/home/ann/bin:/usr/local/bin:/usr/bin:/bin
MAILTO=ann@example.com
GREETING="  hello  "
@weekly          tidy --older-than 30d
*/15 9-17 * * MON-FRI  echo "tick $(date +\\%s)"
CRON_TZ=Asia/Kolkata
30 9 * JAN,JUL sun  mail -s "report" ann%Dear Ann,%%50\\% done.%
@reboot          /usr/local/bin/start-things
TZ=America/St_Johns
0 12 1 * *       echo "noon in $TZ" >> /tmp/noon.log
"""

USER_JOBS = [
    job("@weekly", "tidy --older-than 30d", shell="/bin/bash", notify=[ANN_MAIL],
        env={"PATH": "/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "GREETING": "  hello  "}),
    job("*/15 9-17 * * MON-FRI", 'echo "tick $(date +%s)"', shell="/bin/bash", notify=[ANN_MAIL],
        env={"PATH": "/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "GREETING": "  hello  "}),
    job("30 9 * JAN,JUL sun", 'mail -s "report" ann', shell="/bin/bash", notify=[ANN_MAIL], timezone="Asia/Kolkata",
        stdin="Dear Ann,\n\n50% done.\n",
        env={"PATH": "/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "GREETING": "  hello  "}),
    job("0 12 1 * *", 'echo "noon in $TZ" >> /tmp/noon.log', shell="/bin/bash", notify=[ANN_MAIL], timezone="America/St_Johns",
        env={"PATH": "/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "GREETING": "  hello  ", "TZ": "America/St_Johns"}),
]  # fmt: skip


def test_a_user_crontab_imports_what_can_be_imported(make_daemon: Callable[..., Daemon], tmp_path: Path) -> None:
    daemon = make_daemon()
    src = tmp_path / "ann.crontab"
    src.write_text(USER_CRONTAB)

    # --strict: all or nothing, as before
    strict = daemon.cli("import-crontab", "--strict", str(src))
    assert strict.returncode == 1
    assert f"{src}:10: @reboot is not carried over" in strict.stderr
    assert "MAILTO" not in strict.stderr  # an email rule on failure now: carried over
    assert "1 line cannot be carried over" in strict.stderr, strict.stderr
    assert "nothing was imported" in strict.stderr
    assert jobs(daemon) == []

    # --dry-run: the job of each line, and each skipped line with its reason
    dry = daemon.cli("import-crontab", "--dry-run", str(src))
    assert dry.returncode == 1, dry.stderr  # a line would be skipped
    assert dry.stdout.splitlines() == [
        "line 6: @weekly  tidy --older-than 30d",
        "    zone: UTC", "    shell: /bin/bash",
        "    env: PATH=/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "    env: GREETING=  hello  ", "    notify: email ann@example.com on failure",
        'line 7: */15 9-17 * * MON-FRI  echo "tick $(date +%s)"',
        "    zone: UTC", "    shell: /bin/bash",
        "    env: PATH=/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "    env: GREETING=  hello  ", "    notify: email ann@example.com on failure",
        'line 9: 30 9 * JAN,JUL sun  mail -s "report" ann',
        "    zone: Asia/Kolkata", "    shell: /bin/bash",
        "    env: PATH=/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "    env: GREETING=  hello  ",
        '    stdin: "Dear Ann,\\n\\n50% done.\\n"', "    notify: email ann@example.com on failure",
        'line 12: 0 12 1 * *  echo "noon in $TZ" >> /tmp/noon.log',
        "    zone: America/St_Johns", "    shell: /bin/bash",
        "    env: PATH=/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "    env: GREETING=  hello  ", "    env: TZ=America/St_Johns", "    notify: email ann@example.com on failure",
    ]  # fmt: skip
    assert f"{src}:10: @reboot is not carried over" in dry.stderr
    assert "4 jobs would be created, 0 already there, 1 line skipped" in dry.stderr
    assert jobs(daemon) == []

    res = daemon.cli("import-crontab", "--json", str(src))
    assert res.returncode == 1, res.stderr  # something was skipped
    rows = json.loads(res.stdout)
    assert [(r["line"], "skipped" in r) for r in rows] == [(6, False), (7, False), (9, False), (10, True), (12, False)]
    assert rows[3]["skipped"].startswith("@reboot is not carried over")
    assert "4 jobs created, 0 already there, 1 line skipped" in res.stderr
    assert "setting not carried over" not in res.stderr
    got = imported(daemon, res)
    assert [settled(j) for j in got] == USER_JOBS
    # the zone is the line's: 09:30 on a Sunday of January or July in Kolkata is 04:00 UTC
    report = got[2]
    next_run = dt.datetime.fromisoformat(report["nextRunAt"].replace("Z", "+00:00"))
    local = next_run.astimezone(zoneinfo.ZoneInfo("Asia/Kolkata"))
    assert (local.hour, local.minute, local.month in (1, 7), local.isoweekday()) == (9, 30, True, 7)
    assert (next_run.hour, next_run.minute) == (4, 0)

    # show prints the new fields
    shown = daemon.cli("show", report["jobId"])
    assert shown.returncode == 0, shown.stderr
    for line in ("Shell:", "/bin/bash", "Env:", "PATH=/home/ann/bin", "GREETING=  hello  ", 'Stdin:', '"Dear Ann,\\n\\n50% done.\\n"'):
        assert line in shown.stdout, shown.stdout

    # export (user format) and import back: nothing new; into another daemon: the same jobs
    exported = daemon.cli("export")
    assert exported.returncode == 0 and "# skipped" not in exported.stdout, exported
    back = tmp_path / "back.crontab"
    back.write_text(exported.stdout)
    res = daemon.cli("import-crontab", str(back))
    assert res.returncode == 0 and "0 jobs created, 4 already there" in res.stderr, res.stderr
    other = make_daemon("other")
    res = other.cli("import-crontab", str(back))
    assert res.returncode == 0, res.stderr
    assert stable(jobs(other)) == stable(jobs(daemon))


@pytest.mark.runs_no_jobs
def test_export_leaves_out_what_a_crontab_cannot_say_and_names_it(daemon: Daemon, tmp_path: Path) -> None:
    # the applied job `backup` (a name, maxAttempts 5) was written as a bare line, and a
    # watched job was dropped without a word: imported back, neither was what it had been
    plain = daemon.add_job({"schedule": "0 4 * * *", "command": "plain.sh"})
    named = daemon.add_job({"name": "backup", "schedule": "0 3 * * *", "command": "backup.sh",
                            "retryPolicy": {"maxAttempts": 5}})  # fmt: skip
    assert daemon.cli("watch", "offsite-backup", "26h").returncode == 0
    watched = next(j for j in jobs(daemon) if j["name"] == "offsite-backup")

    exported = daemon.cli("export")
    assert exported.returncode == 0 and "Traceback" not in exported.stderr, exported.stderr
    lines = [x for x in exported.stdout.splitlines() if not x.startswith("#")]
    assert lines == ["0 4 * * * plain.sh"], exported.stdout
    header = exported.stdout.splitlines()[0]  # it counts what the file holds, not what was asked for
    assert header.startswith("# cronwheel export, 1 active job as a crontab (2 not written: see '# skipped')"), header
    assert f"# skipped {named['jobId']} (backup): a crontab line cannot say its name, retryPolicy:" in exported.stdout
    assert f"# skipped {watched['jobId']} (offsite-backup): a watched job" in exported.stdout
    for label, why in ((f"{named['jobId']} (backup)", "a crontab line cannot say its name, retryPolicy"),
                       (f"{watched['jobId']} (offsite-backup)", "a watched job")):  # fmt: skip
        assert f"not in the crontab: {label}: {why}" in exported.stderr, exported.stderr
    assert "2 jobs have no crontab form" in exported.stderr
    back = tmp_path / "back.crontab"
    back.write_text(exported.stdout)
    res = daemon.cli("import-crontab", str(back), "--json")
    assert res.returncode == 0, res.stderr
    # the plain line only, and it is the job it came from: nothing new
    assert [(r.get("jobId"), r.get("created")) for r in json.loads(res.stdout)] == [(plain["jobId"], False)]
    assert len(jobs(daemon)) == 3

    # json keeps everything, the watched job too
    as_json = daemon.cli("export", "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    bodies = {b.get("name"): b for b in json.loads(as_json.stdout)}
    assert bodies["offsite-backup"]["expectSuccessWithin"] == "26h" and bodies["backup"]["retryPolicy"]["maxAttempts"] == 5


@pytest.mark.runs_no_jobs
def test_an_export_imports_back_to_nothing_new_though_it_leaves_webhook_rules_out(daemon: Daemon, tmp_path: Path) -> None:
    """A job with a webhook rule and another rule came back from `export --format json` with
    the other rule alone (a webhook's secret is never shown), and importing that export on the
    same daemon created the job a second time."""
    hook = {"on": "dead", "via": "webhook", "url": "https://hooks.example.com/cw", "secret": "a-long-random-secret"}
    late = {"on": "late", "afterSec": 600, "via": "command", "command": "logger -t cronwheel late"}
    daemon.add_job({"schedule": "0 3 * * *", "command": "backup.sh", "notify": [hook, late]})
    daemon.add_job({"schedule": "0 4 * * *", "command": "other.sh", "notify": [hook]})
    exported = daemon.cli("export", "--format", "json")
    assert exported.returncode == 0 and "2 webhook rules not exported" in exported.stderr, exported.stderr
    path = tmp_path / "jobs.json"
    path.write_text(exported.stdout)
    res = daemon.cli("import", str(path), "--json")
    assert res.returncode == 0, res.stderr
    assert [r.get("created") for r in json.loads(res.stdout)] == [False, False], res.stdout
    assert len(jobs(daemon)) == 2


# ---------------------------------------------------------------- running as cron would


@pytest.fixture
def throwaway_user() -> Iterator[dict[str, Any]]:
    """A user with a primary group of its own, one supplementary group and a home directory."""
    tag = secrets.token_hex(3)
    user, extra = f"cw22u{tag}", f"cw22g{tag}"
    home = Path(f"/tmp/{user}-home")
    subprocess.run(["groupadd", extra], check=True)
    subprocess.run(["useradd", "--user-group", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh",
                    "--groups", extra, user], check=True)  # fmt: skip
    home.mkdir()
    pw = pwd.getpwnam(user)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    try:
        yield {"user": user, "uid": pw.pw_uid, "gid": pw.pw_gid, "extra_gid": grp.getgrnam(extra).gr_gid, "home": str(home)}
    finally:
        subprocess.run(["userdel", user], check=False)
        subprocess.run(["groupdel", extra], check=False)
        shutil.rmtree(home, ignore_errors=True)


def _next_minute_in(zone: str, lead_sec: float = 15) -> tuple[dt.datetime, str]:
    """The next whole minute at least ``lead_sec`` away, as a UTC instant and as the
    ``M H`` fields of that minute in ``zone``."""
    now = dt.datetime.now(dt.UTC)
    at = (now + dt.timedelta(seconds=lead_sec + 60)).replace(second=0, microsecond=0)
    local = at.astimezone(zoneinfo.ZoneInfo(zone))
    return at, f"{local.minute} {local.hour}"


def _run_of(daemon: Daemon, job_id: str, timeout: float) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        done = [e for e in daemon.executions(job_id) if e["status"] in ("SUCCEEDED", "DEAD", "RETRY_WAIT")]
        return done[0] if done else None

    ex = wait_for(finished, timeout=timeout, interval=0.25, what=f"a finished run of {job_id}")
    full = daemon.get(f"/v1/executions/{ex['executionId']}").json()
    assert full["status"] == "SUCCEEDED", full
    return full


@needs_root
def test_jobs_of_both_formats_run_with_their_user_shell_env_zone_and_stdin(
    daemon: Daemon, tmp_path: Path, throwaway_user: dict[str, Any]
) -> None:
    u = throwaway_user
    # two zones with half-hour offsets: a zone read wrongly fires hours away, not in a minute
    sys_at, sys_fields = _next_minute_in("Asia/Kolkata")
    user_at, user_fields = _next_minute_in("America/St_Johns")
    probe = ('echo "uid=$(id -u) gid=$(id -g) groups=$(id -G) home=$HOME user=$USER logname=$LOGNAME pwd=$(pwd) '
             'shell=$0 bash=${BASH_VERSION:+yes} greeting=$GREETING tz=$TZ"; echo "stdin=$(cat | tr \'\\n\' \'|\')"')
    system_file = tmp_path / "cron.d" / "probe"
    system_file.parent.mkdir()
    system_file.write_text(
        "SHELL=/bin/bash\nGREETING=hello from cron.d\nCRON_TZ=Asia/Kolkata\n"
        f"{sys_fields} * * * {u['user']}  {probe}%first line%second 50\\% line\n"
    )
    user_file = tmp_path / "probe.crontab"
    user_file.write_text(f"GREETING=hello from a user crontab\nTZ=America/St_Johns\n{user_fields} * * *  {probe}%just one%\n")
    for f in (system_file, user_file):
        res = daemon.cli("import-crontab", "--json", str(f))
        assert res.returncode == 0, res.stderr
    by_user = {(j.get("runAs") or {}).get("user"): j for j in jobs(daemon)}
    sys_job, user_job = by_user[u["user"]], by_user[None]
    # each line's zone is its own: the next tick is that minute (read wrongly, hours away)
    assert sys_job["nextRunAt"] == sys_at.strftime("%Y-%m-%dT%H:%M:00.000Z"), sys_job
    assert user_job["nextRunAt"] == user_at.strftime("%Y-%m-%dT%H:%M:00.000Z"), user_job
    # and a run is as cron would make it: triggered now rather than waited for (up to 75 s)
    for job in (sys_job, user_job):
        assert daemon.post(f"/v1/jobs/{job['jobId']}/trigger").status == 202

    sys_run = _run_of(daemon, sys_job["jobId"], timeout=60)
    assert sys_run["output"].splitlines() == [
        f"uid={u['uid']} gid={u['gid']} groups={u['gid']} {u['extra_gid']} home={u['home']} user={u['user']} "
        f"logname={u['user']} pwd={u['home']} shell=/bin/bash bash=yes greeting=hello from cron.d tz=",
        "stdin=first line|second 50% line",  # no % at the end: no newline at the end
    ]
    user_run = _run_of(daemon, user_job["jobId"], timeout=60)
    out = user_run["output"].splitlines()
    assert out[0].startswith("uid=0 gid=0 ")  # no runAs: the daemon's own user
    assert out[0].endswith(" shell=/bin/sh bash= greeting=hello from a user crontab tz=America/St_Johns"), out
    assert out[1] == "stdin=just one|"


@needs_root
def test_run_as_is_refused_for_unknown_users_and_fails_clearly_when_one_vanishes(
    daemon: Daemon, tmp_path: Path, throwaway_user: dict[str, Any]
) -> None:
    ghost = "cw22-nobody-" + secrets.token_hex(2)
    r = daemon.post("/v1/jobs", {"schedule": "@daily", "command": "true", "runAs": {"user": ghost}})
    assert r.status == 422 and r.json()["code"] == "run_as_refused", r
    assert r.json()["detail"] == f"runAs user {ghost!r} does not exist on this node"
    r = daemon.post("/v1/jobs", {"schedule": "@daily", "command": "true", "runAs": {"user": "root", "group": ghost}})
    assert r.status == 422 and f"runAs group {ghost!r} does not exist" in r.json()["detail"], r

    # in a crontab: that line is skipped with its number and reason, the others are imported
    src = tmp_path / "cron.d" / "mixed"
    src.parent.mkdir()
    src.write_text(f"@daily root true\n@hourly {ghost} echo lost\n@weekly nobody id\n")
    strict = daemon.cli("import-crontab", "--strict", str(src))  # the daemon's refusal counts too
    assert strict.returncode == 1 and f"runAs user {ghost!r} does not exist" in strict.stderr, strict.stderr
    assert "--strict: nothing imported" in strict.stderr
    assert jobs(daemon) == []
    res = daemon.cli("import-crontab", str(src))
    assert res.returncode == 1
    assert f"{src}:2: runAs user {ghost!r} does not exist on this node" in res.stderr
    assert "2 jobs created, 0 already there, 1 line skipped" in res.stderr
    assert sorted((j["runAs"] or {}).get("user") for j in jobs(daemon)) == ["nobody", "root"]

    # a user deleted after the job was created: a failed attempt that says so
    created = daemon.add_job({"schedule": "@daily", "command": "id", "runAs": {"user": throwaway_user["user"]},
                              "retryPolicy": {"maxAttempts": 1}})  # fmt: skip
    subprocess.run(["userdel", throwaway_user["user"]], check=True)
    trig = daemon.post(f"/v1/jobs/{created['jobId']}/trigger")
    assert trig.status in (200, 201, 202), trig
    eid = trig.json()["executionId"]
    dead = wait_for(lambda: (e := daemon.get(f"/v1/executions/{eid}").json())["status"] == "DEAD" and e,
                    timeout=30, what="the run to fail")  # fmt: skip
    assert dead["error"] == f"runAs user {throwaway_user['user']!r} does not exist on this node", dead


def test_env_and_stdin_from_the_cli_and_api_reach_the_command(daemon: Daemon) -> None:
    res = daemon.cli("add", "@daily", "--name", "envy", "--env", "A=1", "--env", "B=two words", "--env", "EMPTY=",
                     "--shell", "/bin/bash", "--stdin", "in put", "--", 'echo "$A|$B|${EMPTY-unset}|$0|$(cat)"')  # fmt: skip
    assert res.returncode == 0, res.stderr
    shown = daemon.cli("show", "envy", "--json")
    data = json.loads(shown.stdout)
    assert (data["env"], data["shell"], data["stdin"], data["runAs"]) == ({"A": "1", "B": "two words", "EMPTY": ""}, "/bin/bash", "in put", None)
    run = daemon.cli("run", "envy", "--wait", "--timeout", "60s")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "1|two words||/bin/bash|in put"
    bad = daemon.cli("add", "@daily", "--env", "NOEQUALS", "--", "true")
    assert bad.returncode == 2 and "is not NAME=VALUE" in bad.stderr
    bad = daemon.cli("add", "@daily", "--env", "1X=y", "--", "true")
    assert bad.returncode == 1 and "env: '1X' is not a valid variable name" in bad.stderr


@pytest.mark.runs_no_jobs
def test_update_patches_env_user_shell_and_stdin_in_place(daemon: Daemon) -> None:
    created = daemon.add_job({"schedule": "@daily", "command": "cat", "name": "patchy", "env": {"A": "1", "B": "2"},
                              "shell": "/bin/bash", "runAs": {"user": "root"}})  # fmt: skip
    job_id = created["jobId"]

    def patch(body: dict[str, Any]) -> Any:
        return daemon.request("PATCH", f"/v1/jobs/{job_id}", body)

    # env merges variable by variable (null removes one); null removes a member
    r = patch({"env": {"A": None, "C": "3"}, "shell": None, "stdin": "hello"})
    assert r.status == 200, r
    got = r.json()
    assert (got["env"], got["shell"], got["stdin"], got["runAs"]) == ({"B": "2", "C": "3"}, None, "hello", {"user": "root"})
    # the CLI's update takes add's options
    res = daemon.cli("update", "patchy", "--env", "D=4", "--shell", "/bin/sh", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["env"] == {"B": "2", "C": "3", "D": "4"}
    if os.geteuid() == 0:
        r = patch({"runAs": {"user": "cw22-no-such-user"}})
        assert r.status == 422 and r.json()["code"] == "run_as_refused", r
    # a target that cannot carry them is refused, naming the member to remove
    r = patch({"http": {"url": "https://example.invalid/"}})
    assert r.status == 422 and r.json()["field"] in ("env", "runAs", "shell", "stdin"), r
    r = patch({"env": None, "runAs": None, "shell": None, "stdin": None})
    assert r.status == 200 and (r.json()["env"], r.json()["runAs"]) == ({}, None), r

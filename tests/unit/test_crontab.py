"""crontab(5) parsing and export, as tables (no daemon, no clock)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cronwheel.cli.transfer import system_format_path
from cronwheel.core.crontab import (
    Entry,
    keyed,
    keyed_requests,
    looks_like_json,
    looks_like_system_format,
    parse_crontab,
    parse_json_requests,
    split_percent,
)
from cronwheel.core.crontab_export import export_crontab, job_request, unexported_rules

CRONTAB = """\
# m h  dom mon dow   command
*/5 *  *   *   *     /usr/local/bin/poll --fast

0   3  *   *   1-5   backup.sh   >> /var/log/backup.log 2>&1
@hourly echo "date: $(date +\\%F)"
@DAILY	rotate
   # an indented comment
15 10 1 jan,jul sun  echo twice a year or on sundays
"""


def test_a_crontab_parses_into_entries() -> None:
    parsed = parse_crontab(CRONTAB)
    assert parsed.skipped == [] and parsed.notes == []
    assert [(e.line_no, e.schedule, e.command) for e in parsed.entries] == [
        (2, "*/5 * * * *", "/usr/local/bin/poll --fast"),
        (4, "0 3 * * 1-5", "backup.sh   >> /var/log/backup.log 2>&1"),
        (5, "@hourly", 'echo "date: $(date +%F)"'),
        (6, "@daily", "rotate"),
        (8, "15 10 1 jan,jul sun", "echo twice a year or on sundays"),
    ]
    first = parsed.entries[0]
    assert first.request() == {"schedule": "*/5 * * * *", "command": "/usr/local/bin/poll --fast"}
    assert parse_crontab(CRONTAB, "Europe/Paris").entries[0].request()["timezone"] == "Europe/Paris"
    assert first.text == "*/5 *  *   *   *     /usr/local/bin/poll --fast"


ANN_MAIL = {"on": "failure", "via": "email", "to": ["ann@example.com"]}

USER_CRONTAB = """\
SHELL=/bin/bash
PATH=/home/ann/bin:/usr/local/bin:/usr/bin:/bin
MAILTO=ann@example.com
  GREETING = "  hello world  "
'QUOTED'='single'
@weekly   tidy --older-than 30d
CRON_TZ=Asia/Kolkata
30 9 * JAN-MAR mon-fri  mail -s "report" ann%Dear Ann,%%50\\% done.%
TZ=America/New_York
@reboot  /usr/local/bin/start-things
PATH=/opt/bin
0 12 * * sun  echo "at noon in $TZ"
"""


def test_settings_lines_govern_the_lines_below_them() -> None:
    parsed = parse_crontab(USER_CRONTAB)
    assert [(s.line_no, s.message.split(":")[0]) for s in parsed.skipped] == [(10, "@reboot is not carried over")]
    assert parsed.notes == []  # MAILTO= is carried over, as an email rule on failure
    weekly, report, noon = parsed.entries
    assert weekly.request() == {
        "schedule": "@weekly", "command": "tidy --older-than 30d", "shell": "/bin/bash",
        "env": {"PATH": "/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "GREETING": "  hello world  ", "QUOTED": "single"},
        "notify": [ANN_MAIL],
    }
    assert report.request() == {
        "schedule": "30 9 * JAN-MAR mon-fri", "timezone": "Asia/Kolkata", "shell": "/bin/bash",
        "command": 'mail -s "report" ann', "stdin": "Dear Ann,\n\n50% done.\n",
        "env": {"PATH": "/home/ann/bin:/usr/local/bin:/usr/bin:/bin", "GREETING": "  hello world  ", "QUOTED": "single"},
        "notify": [ANN_MAIL],
    }
    # TZ= sets the zone of the lines below, and stays in their environment as cron passes it on
    assert noon.request() == {
        "schedule": "0 12 * * sun", "timezone": "America/New_York", "shell": "/bin/bash",
        "command": 'echo "at noon in $TZ"',
        "env": {"PATH": "/opt/bin", "GREETING": "  hello world  ", "QUOTED": "single", "TZ": "America/New_York"},
        "notify": [ANN_MAIL],
    }


def test_mailto_is_mail_on_failure_for_the_lines_below_until_the_next_mailto() -> None:
    parsed = parse_crontab(
        "@daily before\n"
        "MAILTO=ops@example.com, ann@example.com\n@daily both\n"
        "MAILTO=root\n@daily local\n"  # a local mailbox: no address cronwheel can mail
        "MAILTO=ann@example.com\n@daily ann\n"
        'MAILTO=""\n@daily none\n'
    )
    assert [e.request().get("notify") for e in parsed.entries] == [
        None,
        [{"on": "failure", "via": "email", "to": ["ops@example.com", "ann@example.com"]}],
        None,
        [ANN_MAIL],
        None,
    ]
    assert parsed.skipped == []
    [note] = parsed.notes
    assert note.line_no == 4 and note.message.startswith("MAILTO=root is not carried over: 'root' is not an email address")
    assert "cronwheel update JOB --notify-email" in note.message
    # an import key covers the mail: the same line under another MAILTO is another job
    assert len({key for _, key in keyed(parsed.entries)}) == 5


def test_mailto_empty_is_what_cronwheel_does_anyway() -> None:
    assert parse_crontab('MAILTO=""\n@daily x\n').notes == []


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("@reboot /usr/local/bin/start", 3, "@reboot is not carried over"),
        ("@fortnightly x", 3, "unknown macro '@fortnightly'"),
        ("@hourly", 3, "no command after the schedule '@hourly'"),
        ("0 * * * *", 3, "no command after the schedule"),
        ("0 * * *", 3, "expected five time fields and a command, got 4"),
        ("61 * * * * echo", 3, "minute"),
        ("0 0 30 2 * echo", 3, "never"),
        ("0 * * * * %only input", 3, "no command before the standard input"),
        ("MY-VAR=1", 3, "MY-VAR is not a variable name"),
        ("CRONWHEEL_JOB_ID=x", 3, "CRONWHEEL_JOB_ID is reserved"),
    ],
)
def test_skipped_lines_name_their_line(text: str, line: int, message: str) -> None:
    parsed = parse_crontab(f"# header\n\n{text}\n0 * * * * ok\n")
    assert [e.command for e in parsed.entries] == ["ok"]  # the good line still imports
    (err,) = parsed.skipped
    assert err.line_no == line and err.text == text
    assert str(err).startswith(f"line {line}: ")
    assert message in str(err), str(err)


def test_a_broken_zone_or_shell_skips_the_lines_it_governs() -> None:
    parsed = parse_crontab("CRON_TZ=Mars/Olympus\n0 * * * * a\nCRON_TZ=UTC\n0 * * * * b\nSHELL=bash\n0 * * * * c\n")
    assert [e.command for e in parsed.entries] == ["b"]
    assert [(s.line_no, s.message) for s in parsed.skipped][1::2] == [
        (2, "skipped because its zone (CRON_TZ= on line 1) cannot be used: unknown time zone 'Mars/Olympus'"),
        (6, "skipped because its shell (SHELL= on line 5) is not an absolute path"),
    ]
    assert [s.line_no for s in parsed.skipped] == [1, 2, 5, 6]


def test_every_skipped_line_is_reported_at_once() -> None:
    parsed = parse_crontab("A-B=1\n@reboot x\n0 * * * * y\n99 * * * * z\n")
    assert [e.line_no for e in parsed.skipped] == [1, 2, 4]


SYSTEM = """\
SHELL=/bin/sh
17 *\t* * *\troot\tcd / && run-parts --report /etc/cron.hourly
@daily www-data  php /srv/cron.php
0 * * * * root
0 * * * * b@d! echo
"""


def test_the_system_format_has_a_user_field() -> None:
    parsed = parse_crontab(SYSTEM, system=True)
    hourly, daily = parsed.entries
    assert hourly.request() == {"schedule": "17 * * * *", "command": "cd / && run-parts --report /etc/cron.hourly",
                                "shell": "/bin/sh", "runAs": {"user": "root"}}  # fmt: skip
    assert daily.user == "www-data" and daily.command == "php /srv/cron.php"
    assert [(s.line_no, s.message) for s in parsed.skipped] == [(4, "no command after the user 'root'"), (5, "'b@d!' is not a user name")]
    # the same file read as a user crontab takes the user for the command's first word: that is
    # why /etc/crontab and cron.d files are read in the system format by default
    assert parse_crontab(SYSTEM).entries[0].command == "root\tcd / && run-parts --report /etc/cron.hourly"


@pytest.mark.parametrize(
    ("path", "system"),
    [("/etc/crontab", True), ("/etc/cron.d/certbot", True), ("/srv/backup/cron.d/php", True),
     ("/home/ann/my.crontab", False), ("/tmp/crontab", False), ("/etc/cron.daily/sysstat", False)],
)
def test_system_format_is_detected_by_path(path: str, system: bool) -> None:
    assert system_format_path(Path(path)) is system


@pytest.mark.parametrize(
    ("field", "command", "stdin"),
    [
        ("echo hi", "echo hi", None),
        ("date +\\%F", "date +%F", None),
        ("mail bob%hi%there%", "mail bob", "hi\nthere\n"),
        ("cat%50\\% off", "cat", "50% off"),
        ("cat%", "cat", ""),
        ("printf 'a\\tb'%x\\y", "printf 'a\\tb'", "x\\y"),  # other backslashes stay
        ("cmd\\\\%in", "cmd\\\\", "in"),  # in the command a backslash pair is kept: % then ends it
        ("cat%a\\\\%b", "cat", "a\\%b"),  # in the input a backslash escapes a backslash too
        ("cat%trailing\\", "cat", "trailing\\"),
    ],
)
def test_percent_as_crontab_5_defines_it(field: str, command: str, stdin: str | None) -> None:
    assert split_percent(field) == (command, stdin)


def test_keys_follow_the_job_not_the_line_number_or_path() -> None:
    a = parse_crontab("0 * * * * one\n0 * * * * two\n").entries
    b = parse_crontab("# a new comment on top\n\n0  *  * * *   one\n0 * * * * two\n").entries
    assert [k for _, k in keyed(a)] == [k for _, k in keyed(b)]
    zoned = parse_crontab("CRON_TZ=Europe/Paris\n0 * * * * one\n").entries
    assert keyed(zoned)[0][1] != keyed(a)[0][1]  # another zone is another job
    twice = parse_crontab("0 * * * * same\n0 * * * * same\n").entries
    keys = [k for _, k in keyed(twice)]
    assert len(set(keys)) == 2  # cron runs a line written twice twice
    assert all(k.startswith("import-") and len(k) <= 200 and k.isascii() for k in keys)


JOB = {
    "jobId": "jabc", "name": "backup", "tenant": "default", "status": "ACTIVE",
    "schedule": "0 3 * * *", "runAt": None, "timezone": "UTC", "nextRunAt": "2026-01-01T03:00:00.000Z",
    "target": {"command": "backup.sh --full"}, "payload": None,
    "retryPolicy": {"maxAttempts": 5, "initialBackoffSec": 1.0, "maxBackoffSec": 300.0, "multiplier": 2.0, "jitter": 0.2},
    "timeoutSec": 3600.0, "leaseSec": 60.0, "priority": "default", "overlap": "forbid", "misfire": "run_once",
    "jitterSec": 0, "env": {}, "runAs": None, "shell": None, "stdin": None,
    "bucketId": 3, "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
}

#: a job that a crontab line holds whole: what JOB is, less what no line says (a name, a
#: retry policy and an overlap policy other than an import's)
LINE_JOB = {**JOB, "name": None, "overlap": "allow",
            "retryPolicy": {"maxAttempts": 3, "initialBackoffSec": 1.0, "maxBackoffSec": 300.0, "multiplier": 2.0, "jitter": 0.2}}  # fmt: skip


def test_job_request_round_trips_what_a_job_holds() -> None:
    body = job_request(JOB)
    assert body == {
        "name": "backup", "schedule": "0 3 * * *", "command": "backup.sh --full",
        "retryPolicy": JOB["retryPolicy"], "timeoutSec": 3600.0, "leaseSec": 60.0,
        "priority": "default", "overlap": "forbid", "misfire": "run_once", "jitterSec": 0,
    }
    paris = job_request({**JOB, "timezone": "Europe/Paris", "target": {"http": {"url": "https://x.test/"}}})
    assert paris["timezone"] == "Europe/Paris" and paris["http"] == {"url": "https://x.test/"}
    once = job_request({**JOB, "schedule": None, "runAt": "2030-01-01T00:00:00.000Z"})
    assert once["runAt"] == "2030-01-01T00:00:00.000Z" and "schedule" not in once
    full = job_request({**JOB, "env": {"A": "1"}, "runAs": {"user": "ann"}, "shell": "/bin/bash", "stdin": "x"})
    assert (full["env"], full["runAs"], full["shell"], full["stdin"]) == ({"A": "1"}, {"user": "ann"}, "/bin/bash", "x")



def test_job_request_keeps_rules_and_windows_but_not_webhook_secrets() -> None:
    email = {"on": "failure", "via": "email", "to": ["ops@example.com"], "maxPerHour": 30, "maxAttempts": 8, "ruleId": "r_1"}
    hook = {"on": "dead", "via": "webhook", "url": "https://h.test/", "secret": "********", "ruleId": "r_2"}
    watched = {**JOB, "schedule": None, "target": {"ping": {}}, "expectSuccessWithin": "26h", "notify": [email, hook]}
    body = job_request(watched)
    assert body["expectSuccessWithin"] == "26h" and "ping" not in body and "command" not in body
    assert body["notify"] == [{k: v for k, v in email.items() if k != "ruleId"}]
    assert unexported_rules(watched) == 1


@pytest.mark.parametrize(
    ("change", "line", "why"),
    [
        ({}, "0 3 * * * backup.sh --full", None),
        ({"schedule": "0  3 * *   *"}, "0 3 * * * backup.sh --full", None),
        ({"schedule": "@daily"}, "@daily backup.sh --full", None),
        ({"target": {"command": "date +%F"}}, "0 3 * * * date +\\%F", None),
        ({"stdin": "Dear Ann,\n50% done\n"}, "0 3 * * * backup.sh --full%Dear Ann,%50\\% done%", None),
        ({"schedule": "@every 5m"}, None, "@every has no crontab form"),
        ({"schedule": "*/10 * * * * *"}, None, "6-field"),
        ({"schedule": None, "runAt": "2030-01-01T00:00:00.000Z"}, None, "one-off"),
        ({"target": {"python": "m:f"}}, None, "only command targets"),
        ({"target": {"command": "a\nb"}}, None, "no exact crontab form"),
        ({"target": {"command": "a\\%b"}}, None, "no exact crontab form"),
        ({"stdin": "line\\\nnext"}, None, "no exact crontab form"),
        ({"runAs": {"user": "ann"}}, None, "only a system crontab"),
        ({"env": {"A": "two\nlines"}}, None, "line break"),
    ],
)
def test_one_job_line(change: dict, line: str | None, why: str | None) -> None:
    done = export_crontab([{**LINE_JOB, **change}])
    if why is None:
        assert done.skipped == [] and done.lines == ["# jabc", line]
    else:
        ((_, reason),) = done.skipped
        assert why in reason and done.lines == []


def test_system_export_writes_the_user_field_and_needs_one() -> None:
    done = export_crontab([{**LINE_JOB, "runAs": {"user": "root"}}, LINE_JOB], system=True)
    assert done.lines == ["# jabc", "0 3 * * * root backup.sh --full"]
    assert "runs as the daemon's user" in done.skipped[0][1]


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        ({"name": "backup"}, "name"),
        ({"retryPolicy": JOB["retryPolicy"]}, "retryPolicy"),  # maxAttempts 5
        ({"name": "backup", "retryPolicy": JOB["retryPolicy"], "timeoutSec": 60.0}, "name, retryPolicy, timeoutSec"),
        ({"overlap": "forbid"}, "overlap"),
        ({"priority": "high", "jitterSec": 30}, "priority, jitterSec"),
        ({"calendars": ["holidays"], "onFailure": ["j2"]}, "calendars, onFailure"),
        ({"payload": {"a": 1}, "expectSuccessWithin": "26h"}, "payload, expectSuccessWithin"),
    ],
)
def test_a_job_whose_members_a_crontab_cannot_say_is_left_out_naming_them(change: dict, fields: str) -> None:
    # the applied job `backup` (a name, maxAttempts 5) was written as a bare line: imported
    # back, it was another job
    done = export_crontab([{**LINE_JOB, **change}])
    ((_, reason),) = done.skipped
    assert f"a crontab line cannot say its {fields}:" in reason and done.lines == []
    assert export_crontab([{**LINE_JOB, "calendars": [], "onSuccess": [], "misfireGraceSec": None}]).skipped == []


def test_a_watched_job_is_left_out_as_watched() -> None:
    watched = {**LINE_JOB, "schedule": None, "nextRunAt": None, "target": {"ping": {}}, "expectSuccessWithin": "26h"}
    ((_, reason),) = export_crontab([watched]).skipped
    assert reason.startswith("a watched job")


#: what a crontab line holds of a job
CRONTAB_FIELDS = ("schedule", "command", "timezone", "env", "shell", "stdin", "runAs")


def test_settings_are_written_so_that_no_job_inherits_what_it_lacks() -> None:
    jobs = [
        {**LINE_JOB, "jobId": "j1", "name": None, "env": {"PATH": "/opt/bin"}, "timezone": "Asia/Kolkata"},
        {**LINE_JOB, "jobId": "j2", "name": None},
        {**LINE_JOB, "jobId": "j3", "name": None, "env": {"PATH": "/usr/bin"}, "shell": "/bin/bash"},
        {**LINE_JOB, "jobId": "j4", "name": None, "env": {"B": "2"}},  # B would carry over to j3: left out
        {**LINE_JOB, "jobId": "j5", "name": None, "env": {"TZ": "Europe/Paris", "PATH": "/usr/bin", "SPACE": " x "},
         "timezone": "America/New_York", "shell": "/bin/bash", "stdin": "a%b\n"},
    ]
    done = export_crontab(jobs)
    assert done.lines == [
        "# j2", "0 3 * * * backup.sh --full",
        "PATH=/opt/bin", "CRON_TZ=Asia/Kolkata", "# j1", "0 3 * * * backup.sh --full",
        "PATH=/usr/bin", "SHELL=/bin/bash", "CRON_TZ=UTC", "# j3", "0 3 * * * backup.sh --full",
        "TZ=Europe/Paris", 'SPACE=" x "', "CRON_TZ=America/New_York", "# j5", "0 3 * * * backup.sh --full%a\\%b%",
    ]
    assert [(j["jobId"], "cannot unset" in why) for j, why in done.skipped] == [("j4", True)]
    # and what was written reads back to those very jobs
    parsed = parse_crontab("\n".join(done.lines) + "\n")
    assert parsed.skipped == [] and parsed.notes == []
    by_id = {j["jobId"]: j for j in jobs}
    for entry, written in zip(parsed.entries, ["j2", "j1", "j3", "j5"], strict=True):
        want = {k: v for k, v in job_request(by_id[written]).items() if k in CRONTAB_FIELDS}
        assert entry.request() == want, written


MAIL = {"on": "failure", "via": "email", "maxPerHour": 30, "maxAttempts": 8, "ruleId": "r_1"}


def test_mail_on_failure_is_written_as_mailto_and_reset_for_jobs_without_it() -> None:
    jobs = [
        {**LINE_JOB, "jobId": "j1", "name": None, "notify": [{**MAIL, "to": ["ops@example.com", "ann@example.com"]}]},
        {**LINE_JOB, "jobId": "j2", "name": None},
        {**LINE_JOB, "jobId": "j3", "name": None, "notify": [{**MAIL, "to": ["ann@example.com"]}]},
    ]
    done = export_crontab(jobs)
    assert done.skipped == []
    assert done.lines == [
        "MAILTO=ops@example.com,ann@example.com", "# j1", "0 3 * * * backup.sh --full",
        'MAILTO=""', "# j2", "0 3 * * * backup.sh --full",
        "MAILTO=ann@example.com", "# j3", "0 3 * * * backup.sh --full",
    ]
    parsed = parse_crontab("\n".join(done.lines) + "\n")
    assert parsed.skipped == [] and parsed.notes == []
    for entry, job in zip(parsed.entries, jobs, strict=True):  # what was written reads back to them
        want = {k: v for k, v in job_request(job).items() if k in (*CRONTAB_FIELDS, "notify")}
        assert {**entry.request(), "notify": [
            {**r, "maxPerHour": 30, "maxAttempts": 8} for r in entry.request().get("notify", [])
        ]} == {**want, "notify": want.get("notify", [])}, job["jobId"]


@pytest.mark.parametrize(
    "rules",
    [
        [{**MAIL, "to": ["ops@example.com"], "on": "dead"}],  # another event
        [{**MAIL, "to": ["ops@example.com"], "maxPerHour": 5}],  # another limit
        [{**MAIL, "to": ["ops@example.com"]}, {**MAIL, "to": ["ann@example.com"]}],  # two rules
        [{"on": "failure", "via": "command", "command": "page", "maxPerHour": 30, "maxAttempts": 8}],
    ],
)
def test_rules_a_mailto_cannot_say_leave_the_job_out_naming_why(rules: list[dict]) -> None:
    done = export_crontab([{**LINE_JOB, "notify": rules}])
    ((_, reason),) = done.skipped
    assert "notification rules have no crontab form" in reason and done.lines == []


def test_json_import() -> None:
    assert looks_like_json('  [{"schedule": "@daily"}]') and not looks_like_json("@daily x")
    bodies = parse_json_requests('[{"schedule": "@daily", "command": "x"}, {"command": "x", "schedule": "@daily"}]')
    keys = [k for _, k in keyed_requests(bodies)]
    assert len(set(keys)) == 2  # identical jobs stay two jobs
    assert keyed_requests(bodies[:1])[0][1] == keys[0]
    for bad in ("[1, 2]", '{"a": 1}', "[{"):
        with pytest.raises(ValueError):
            parse_json_requests(bad)


def test_entry_is_hashable_data() -> None:
    e = Entry(1, "@daily", "x", "@daily x", env=(("A", "1"),))
    assert {e: 1}[Entry(1, "@daily", "x", "@daily x", env=(("A", "1"),))] == 1


@pytest.mark.parametrize(
    ("text", "system"),
    [
        ((Path(__file__).resolve().parents[1] / "data" / "debian" / "crontab").read_text(), True),  # its header
        ("17 * * * * root cd / && run-parts /etc/cron.hourly\n@daily  root  /usr/sbin/logrotate x\n", True),
        ("17 * * * * root cd /\n@daily ann backup.sh\n", True),  # every sixth field a user
        ("17 * * * * root cd /\n@daily backup.sh --full\n", False),  # one is not
        ("@hourly sync\n", False),  # a user's name, but nothing after it: a command
        ("# m h  dom mon dow   command\n0 3 * * * backup.sh\n", False),  # crontab -e's template
        ("", False),
    ],
)
def test_a_system_crontab_read_as_a_user_one_is_recognised(text: str, system: bool) -> None:
    users = {"root", "ann", "sync"}
    assert looks_like_system_format(text, parse_crontab(text).entries, users.__contains__) is system


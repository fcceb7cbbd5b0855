"""Which of an import's entries are already there. Pure: no I/O, no clock.

An entry (a crontab line's request body, or a job of an ``export --format json`` file) is
already there when a live job of the caller's is that very job: it runs the same thing
(target, payload, standard input, environment, shell, user) at the same times (schedule or
runAt, zone, calendars, active window, watch window; a schedule by when it fires, not how it
is written: ``@daily`` is ``0 0 * * *``), and every setting the entry states
(name, retry policy, timeout, priority, notification rules, chains…) is the job's too (an
entry without webhook rules, as an export writes every job, is compared with the job's other
rules: a webhook's secret is never shown, so no export carries one). A
setting the entry leaves out is not compared: a crontab line states no name or retry policy,
and a job renamed or given retries since it was imported is still that line's job. Each job
there stands for one entry at most: two identical lines are two jobs.
"""

from __future__ import annotations

import contextlib
import json
from functools import lru_cache
from typing import Any

from cronwheel.core.cron import MACROS, meaning, parse_template
from cronwheel.core.crontab import UTC
from cronwheel.core.crontab_export import job_request, unsayable_fields
from cronwheel.core.jobfields import TARGET_KINDS
from cronwheel.core.limits import MIN_SECRET_CHARS
from cronwheel.core.notify import RuleError, parse_window, rule_from_json
from cronwheel.core.schedule import ScheduleError, looks_like_instant, parse_instant, parse_schedule

#: what a job runs and when: an entry that leaves one out means its default (no calendars,
#: no payload…), so these must all be equal
_WHAT_AND_WHEN = ("schedule", "runAt", "timezone", *TARGET_KINDS, "payload", "stdin", "env", "shell", "runAs",
                  "calendars", "activeFrom", "activeUntil", "expectSuccessWithin")  # fmt: skip
_INSTANTS = ("runAt", "activeFrom", "activeUntil")


def normal_form(body: dict[str, Any]) -> dict[str, Any]:
    """A request body with what the daemon would make of it spelled out the same way a job's
    own body (``job_request``) spells it: the target's members at the top, the zone, an HTTP
    method, instants and windows as milliseconds, rules as stored; absent and empty alike."""
    out = {k: v for k, v in body.items() if k != "target" and v not in (None, [], {})}
    if isinstance(body.get("target"), dict):
        out.update({k: v for k, v in body["target"].items() if v is not None})
    out.setdefault("timezone", UTC)
    watched = "expectSuccessWithin" in out and "schedule" not in out and "runAt" not in out
    if not any(k in out for k in TARGET_KINDS) and not watched:
        out["queue"] = "default"  # the daemon's target for a body without one
    if isinstance(out.get("http"), dict):
        http = out["http"]
        method = http.get("method") or "GET"
        out["http"] = {"url": http.get("url"), "method": method.upper() if isinstance(method, str) else method,
                       "headers": http.get("headers") or {}}  # fmt: skip
    if "schedule" in out:
        when = out.pop("schedule")
        if isinstance(when, str) and looks_like_instant(when) and not when.strip().startswith("+"):
            out["runAt"] = when  # the daemon makes an instant given as a schedule its runAt
        else:
            out["schedule"] = schedule_meaning(when)
    for key in _INSTANTS:
        if isinstance(out.get(key), str) and not out[key].strip().startswith("+"):
            with contextlib.suppress(ScheduleError):  # (the daemon refuses it: it matches nothing)
                out[key] = parse_instant(out[key])
    if "expectSuccessWithin" in out:
        with contextlib.suppress(RuleError):
            out["expectSuccessWithin"] = parse_window(out["expectSuccessWithin"])
    if isinstance(out.get("calendars"), list):
        out["calendars"] = sorted(out["calendars"], key=str)
    if isinstance(out.get("notify"), list):
        out["notify"] = [_rule(r) for r in out["notify"]]
    return out


def schedule_meaning(when: Any) -> list[Any]:
    """A schedule by when it fires, so that ``@daily`` and ``0 0 * * *`` are one: a cron
    expression's ``cron.meaning``, an interval's seconds; what does not parse (the daemon
    refuses it) is its own text, tagged so that no text passes for a meaning."""
    if isinstance(when, str):
        with contextlib.suppress(ScheduleError):
            return ["meaning", _meaning(when)]
    return ["text", when]


@lru_cache(maxsize=4096)
def _meaning(text: str) -> str:
    # the job id only moves what H and @every's anchor pick, compared as written, so no real
    # id is needed (an H month that may have no 31st might not fire for this one: then text)
    parsed = parse_schedule(text, "", UTC)
    if parsed.kind != "cron":
        return parsed.expression  # '@every 300s' for '@every 5m', '@triggered'
    body = text.strip()
    return meaning(parse_template(MACROS.get(body.lower(), body)))


def _rule(rule: Any) -> Any:
    """A rule as a job's answer shows it (defaults filled in, the secret hidden: an answer
    never shows it, so it cannot be compared), without its ``ruleId``."""
    if not isinstance(rule, dict):
        return rule
    bare = {k: v for k, v in rule.items() if k != "ruleId"}
    if bare.get("via") == "webhook":
        bare["secret"] = "s" * MIN_SECRET_CHARS  # (what it is does not show)
    try:
        shown = rule_from_json(bare).to_json(redact=True)
    except RuleError:
        return bare
    return {k: v for k, v in shown.items() if k != "ruleId"}


def _key(form: dict[str, Any]) -> str:
    return json.dumps({k: form.get(k) for k in _WHAT_AND_WHEN}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _states_the_same(entry: dict[str, Any], job: dict[str, Any]) -> bool:
    """Every setting the entry states (not what it runs or when: the key holds those) is the job's."""
    for key, value in entry.items():
        if key in _WHAT_AND_WHEN:
            continue
        have = job.get(key)
        if key == "notify" and isinstance(value, list) and isinstance(have, list) and not _webhooks(value):
            # an export leaves webhook rules out (their secrets are never shown): the job's
            # other rules are the ones the entry can state
            have = [rule for rule in have if not _webhooks([rule])]
        if key == "retryPolicy" and isinstance(value, dict) and isinstance(have, dict):
            if any(have.get(k) != v for k, v in value.items()):
                return False
        elif have != value:
            return False
    return True


def _webhooks(rules: list[Any]) -> bool:
    return any(isinstance(rule, dict) and rule.get("via") == "webhook" for rule in rules)


def job_form(job: dict[str, Any]) -> dict[str, Any]:
    """``normal_form`` of an existing job (an API job object): its body, webhook rules,
    chains and ``managedBy`` included."""
    body = job_request(job, webhooks=True)
    body.update({k: job[k] for k in ("onSuccess", "onFailure", "managedBy") if job.get(k)})
    return normal_form(body)


def already_there(entries: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> list[str | None]:
    """For each entry (a request body), the id of the live job (``jobs``: API job objects)
    that is that job, or None; no job for two entries. The entries that state the most
    settings choose first, each the job that states every setting it does (an export of it)
    or else the one with the fewest settings of its own: a bare crontab line leaves the job
    with retries to the entry that asks for them."""
    there: dict[str, list[tuple[dict[str, Any], str, int]]] = {}
    for job in jobs:
        form = job_form(job)
        there.setdefault(_key(form), []).append((form, str(job["jobId"]), len(unsayable_fields(job))))
    forms = [normal_form(body) for body in entries]
    out: list[str | None] = [None] * len(entries)
    for i in sorted(range(len(forms)), key=lambda i: -sum(k not in _WHAT_AND_WHEN for k in forms[i])):
        entry = forms[i]
        alike = [c for c in there.get(_key(entry), ()) if _states_the_same(entry, c[0])]
        if alike:
            chosen = min(alike, key=lambda c: (not _states_the_same(c[0], entry), c[2]))
            there[_key(entry)].remove(chosen)
            out[i] = chosen[1]
    return out

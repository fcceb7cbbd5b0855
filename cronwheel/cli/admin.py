"""``cronwheel tenant …`` and ``cronwheel token …``: the admin's commands for tenants (weights,
quotas, permissions) and their bearer tokens. Run them as the daemon's user (the Unix socket,
or TCP with ``<data-dir>/admin-token``) or with an admin token."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from cronwheel.cli import progress, render
from cronwheel.cli.client import ApiError
from cronwheel.cli.context import CONTEXT, Cli, WholeNumber, pass_cli
from cronwheel.core.limits import MAX_QUOTA, MAX_RATE, MIN_RATE

_CLEAR = ("none", "unlimited", "off")


class _Unset:
    def __repr__(self) -> str:
        return "none"


_UNSET_QUOTA = _Unset()


class _Limit(click.ParamType[float | _Unset]):
    """A number in ``low..high``, or none/unlimited (sent as null: no quota). The bounds are
    the API's: said here, so that ``inf`` is not sent as JSON no server can read."""

    def __init__(self, kind: Callable[[Any], float], low: float, high: float) -> None:
        self.kind = kind
        self.low = low
        self.high = high
        self.name = "N|none"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | _Unset:
        if isinstance(value, str) and value.strip().lower() in _CLEAR:
            return _UNSET_QUOTA
        try:
            number = self.kind(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number or 'none'", param, ctx)
        if not self.low <= number <= self.high:  # nan fails both comparisons
            self.fail(f"{value!r} must be {self.low:g} to {self.high:,.0f} (or 'none' for unlimited)", param, ctx)
        return number


def _settings(weight: int | None, max_running: Any, max_jobs: Any, rate: Any, burst: Any,
              allow_shell: bool | None, allow_high: bool | None, http_allow: str | None, inherit: bool) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for key, value in (("weight", weight), ("maxRunning", max_running), ("maxJobs", max_jobs),
                       ("submitRate", rate), ("submitBurst", burst), ("allowShell", allow_shell),
                       ("allowHighPriority", allow_high)):
        if value is _UNSET_QUOTA:
            body[key] = None
        elif value is not None:
            body[key] = value
    if http_allow is not None and inherit:
        raise click.UsageError("--http-allow and --http-allow-inherit: give one (a list of its own, or the daemon's)")
    if http_allow is not None:  # '' : an empty list, no host (as `serve --http-allow ''`)
        body["httpAllow"] = [h.strip() for h in http_allow.split(",") if h.strip()]
    elif inherit:
        body["httpAllow"] = None
    return body


def _http_allow(t: dict[str, Any], inherited: str, closed: str) -> str:
    """Which of the three a tenant's list is: none of its own, empty, or its hosts."""
    hosts = t.get("httpAllow")
    if hosts is None:
        return inherited
    return ", ".join(hosts) or closed


def _tenant_options(fn: Any) -> Any:
    options = [
        click.option("--weight", type=WholeNumber(1, 1000), help="Share of the ready queue against other tenants. [default 1]"),
        click.option("--max-running", type=_Limit(int, 0, MAX_QUOTA), help="Executions running at once (per node); beyond it they wait. 'none': unlimited."),
        click.option("--max-jobs", type=_Limit(int, 0, MAX_QUOTA), help="Registered (active or paused) jobs; beyond it submissions get 429. 'none': unlimited."),
        click.option("--rate", type=_Limit(float, MIN_RATE, MAX_RATE), help="Submissions per second (per node): new jobs, triggered runs, replayed dead letters, backfilled ticks and runs reported by pings; beyond it 429 + Retry-After. 'none': unlimited."),
        click.option("--burst", type=_Limit(int, 1, MAX_QUOTA), help="Submissions allowed at once before --rate applies. [default ceil(rate)]"),
        click.option("--allow-shell/--no-allow-shell", default=None,
                     help="May create command and python targets (they run as the daemon's user). [default no]"),
        click.option("--allow-high-priority/--no-allow-high-priority", "allow_high", default=None,
                     help="May give its jobs priority high, a tier served before every tenant's default work; "
                          "withdrawn, its high jobs are queued at default. [default no]"),
        click.option("--http-allow", metavar="HOST,...", help="Hosts its HTTP targets (their redirects too) and webhooks may call, and its email rules' recipients' domains; '': no host at all. [default: the daemon's --http-allow]"),
        click.option("--http-allow-inherit", "inherit", is_flag=True, help="No list of its own: the daemon's --http-allow applies (undoes --http-allow)."),
        click.option("--json", "as_json", is_flag=True, help="Print the tenant as JSON."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _fmt_quota(value: Any) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _own_or_daemons(t: dict[str, Any]) -> str:
    """The list that applies and whose it is (``effectiveHttpAllow``: GET /v1/tenants/NAME)."""
    if t.get("httpAllow") is not None or "effectiveHttpAllow" not in t:
        return _http_allow(t, "(the daemon's list)", "(none: every host refused)")
    applied = t["effectiveHttpAllow"]
    hosts = "any host" if applied is None else ", ".join(applied) or "none: every host refused"
    return f"the daemon's list: {hosts}"


def _against(used: int, quota: Any) -> str:
    return f"{used} (no quota)" if quota is None else f"{used} of {_fmt_quota(quota)}"


def _deleting(t: dict[str, Any]) -> str:
    if t.get("status") != "deleting":
        return ""
    return f" (deleting, {t['jobs']} jobs to cancel)" if t.get("jobs") else " (deleting)"


def _show_tenant(t: dict[str, Any], as_json: bool) -> None:
    if as_json:
        render.emit_json(t)
        return
    usage = []  # GET /v1/tenants/NAME: the registered jobs and this node's numbers
    if t.get("status") == "deleting":
        usage.append(("status", f"deleting since {t.get('deletingSince')}: {t.get('jobs', 0)} live jobs left to cancel, "
                                "then retention removes its rows"))
    elif "jobs" in t:
        usage.append(("jobs", _against(t["jobs"], t.get("maxJobs"))))
    if "running" in t:
        waiting = ", more waiting for the quota" if t.get("quotaWaiting") else ""
        usage += [("running here", _against(t["running"], t.get("maxRunning")) + waiting), ("queued here", t.get("queued", 0))]
    render.emit_kv([
        ("name", t["name"]), ("weight", t["weight"]), ("max running", _fmt_quota(t.get("maxRunning"))),
        ("max jobs", _fmt_quota(t.get("maxJobs"))), ("submissions/s", _fmt_quota(t.get("submitRate"))),
        ("burst", _fmt_quota(t.get("submitBurst"))), ("allow shell", "yes" if t.get("allowShell") else "no"),
        ("high priority", "allowed" if t.get("allowHighPriority") else "not allowed"),
        ("http allow", _own_or_daemons(t)), *usage,
    ])


# ---------------------------------------------------------------- tenant


@click.group(context_settings=CONTEXT)
def tenant() -> None:
    """Tenants: fair-share weight, quotas, and what their jobs may run (admin)."""


@tenant.command("add", context_settings=CONTEXT)
@click.argument("name")
@_tenant_options
@pass_cli
def tenant_add(app: Cli, /, name: str, weight: int | None, max_running: Any, max_jobs: Any, rate: Any, burst: Any,
               allow_shell: bool | None, allow_high: bool | None, http_allow: str | None, inherit: bool,
               as_json: bool) -> None:
    """Create tenant NAME.

    \b
    Example:
      cronwheel tenant add acme --weight 2 --max-running 10 --rate 5 --http-allow api.acme.com
      cronwheel token create --tenant acme          # its first token
    """
    body = {"name": name, **_settings(weight, max_running, max_jobs, rate, burst, allow_shell, allow_high, http_allow, inherit)}
    _show_tenant(app.client.create_tenant(body), as_json)


@tenant.command("set", context_settings=CONTEXT)
@click.argument("name")
@_tenant_options
@pass_cli
def tenant_set(app: Cli, /, name: str, weight: int | None, max_running: Any, max_jobs: Any, rate: Any, burst: Any,
               allow_shell: bool | None, allow_high: bool | None, http_allow: str | None, inherit: bool,
               as_json: bool) -> None:
    """Change tenant NAME (only the options given; 'none' lifts a quota).

    \b
    Example:
      cronwheel tenant set acme --max-running 2 --rate none
      cronwheel tenant set acme --http-allow ''          # no HTTP host at all
      cronwheel tenant set acme --allow-high-priority    # its jobs may be high
      cronwheel tenant set acme --http-allow-inherit     # the daemon's --http-allow again
    """
    changes = _settings(weight, max_running, max_jobs, rate, burst, allow_shell, allow_high, http_allow, inherit)
    if not changes:
        raise click.UsageError("nothing to change: give at least one option (see --help)")
    _show_tenant(app.client.update_tenant(name, changes), as_json)


@tenant.command("show", context_settings=CONTEXT)
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the tenant as JSON.")
@pass_cli
def tenant_show(app: Cli, /, name: str | None, as_json: bool) -> None:
    """Show tenant NAME: its settings, its usage against its quotas (jobs registered, this
    node's running and queued executions) and the HTTP allow-list that applies, its own or
    the daemon's. A tenant's token may show its own tenant, and without NAME shows it.

    \b
    Examples:
      cronwheel tenant show acme
      cronwheel tenant show acme --json
      CRONWHEEL_TOKEN=$ACME_TOKEN cronwheel tenant show    # the token's own tenant
    """
    if name is None:
        name = app.client.whoami().get("tenant")
        if not name:
            raise click.UsageError("these credentials belong to no tenant (an admin's or a metrics token): "
                                   "name one, e.g. `cronwheel tenant show acme` (`cronwheel tenant ls` lists them)")
    _show_tenant(app.client.get_tenant(name), as_json)


@tenant.command("ls", context_settings=CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of tenants.")
@pass_cli
def tenant_ls(app: Cli, /, as_json: bool) -> None:
    """List tenants with their settings and this node's running and queued executions."""
    tenants = app.client.list_tenants()["tenants"]
    if as_json:
        render.emit_json(tenants)
        return
    rows = [
        [t["name"] + _deleting(t), str(t["weight"]), f"{t.get('running', 0)}/{_fmt_quota(t.get('maxRunning'))}"
         + (" (waiting)" if t.get("quotaWaiting") else ""),
         str(t.get("queued", 0)), _fmt_quota(t.get("maxJobs")), _fmt_quota(t.get("submitRate")),
         "yes" if t.get("allowShell") else "no", "yes" if t.get("allowHighPriority") else "no",
         _http_allow(t, "(daemon's)", "(none)")]
        for t in tenants
    ]
    render.emit_table(["TENANT", "WEIGHT", "RUNNING/MAX", "QUEUED", "MAX JOBS", "RATE/S", "SHELL", "HIGH", "HTTP ALLOW"], rows)


@tenant.command("rm", context_settings=CONTEXT)
@click.argument("name")
@click.option("--force", is_flag=True, help="Cancel its live jobs (running executions are aborted); waits until they are.")
@click.option("--no-wait", is_flag=True, help="With --force: return once the deletion is asked, not once its jobs are cancelled.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print the tenant, being deleted, as JSON.")
@pass_cli
def tenant_rm(app: Cli, /, name: str, force: bool, no_wait: bool, yes: bool, as_json: bool) -> None:
    """Delete tenant NAME: its tokens are revoked at once, it takes no new job, and retention
    removes its rows in the background (its history, dead letters, calendars, names,
    idempotency keys), then the tenant; until then its name cannot be taken again and
    `tenant ls` shows it as deleting. Refused while it has live jobs or runs in flight,
    unless --force, which cancels them: the daemon does that in the background, and this
    command waits until they are all cancelled (a bar on a terminal), unless --no-wait. An
    interrupted wait leaves the deletion going; `tenant show NAME` shows the jobs left. The
    default tenant cannot be deleted.

    \b
    Examples:
      cronwheel tenant rm acme
      cronwheel tenant rm acme --force --yes     # cancel its jobs too, no question asked
      cronwheel tenant rm acme --force --yes --no-wait
    """
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError(f"deleting tenant {name!r} cannot be undone: give --yes to confirm without a terminal")
        what = "cancel its live jobs and delete" if force else "delete"
        click.confirm(f"{what} tenant {name!r} and all its history? This cannot be undone", abort=True)
    t = app.client.delete_tenant(name, force)
    if force and not no_wait and t.get("jobs"):
        progress.countdown(lambda: _jobs_left(app, name), total=t["jobs"], what=f"cancelling {name}'s jobs")
        t["jobs"] = 0
    if as_json:
        render.emit_json(t)
        return
    left = f"; {t['jobs']} live jobs are being cancelled" if t.get("jobs") else ""
    click.echo(f"tenant {t['name']} is being deleted: its tokens are revoked{left}; retention removes its rows, "
               "then the tenant (cronwheel tenant ls shows it until then)")


def _jobs_left(app: Cli, name: str) -> int | None:
    """A deleting tenant's live jobs still to cancel; None once it is gone."""
    try:
        return int(app.client.get_tenant(name).get("jobs", 0))
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


# ---------------------------------------------------------------- token


@click.group(context_settings=CONTEXT)
def token() -> None:
    """Bearer tokens for the TCP API: create (shown once), list, revoke (admin)."""


@token.command("create", context_settings=CONTEXT)
@click.option("--tenant", "tenant_name", metavar="NAME", help="The tenant it acts for (not for --role admin or metrics).")
@click.option("--role", type=click.Choice(["tenant", "worker", "admin", "metrics"]), default="tenant", show_default=True,
              help="tenant: manage its jobs; worker: claim, heartbeat, complete and record effects of its tenant's executions, and ping its jobs; admin: everything; "
                   "metrics: read /metrics only (for Prometheus).")
@click.option("--name", metavar="LABEL", help="A label for `token ls` (where it is used).")
@click.option("--json", "as_json", is_flag=True, help="Print {tokenId, token, role, tenant, ...} as JSON.")
@pass_cli
def token_create(app: Cli, /, tenant_name: str | None, role: str, name: str | None, as_json: bool) -> None:
    """Create a token. It is printed once, on stdout: keep it, only its hash is stored.

    \b
    Example:
      TOKEN=$(cronwheel token create --tenant acme --name ci)
      curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:7878/v1/jobs
    """
    tenantless = role in ("admin", "metrics")
    if not tenantless and not tenant_name:
        raise click.UsageError(f"a {role} token needs --tenant NAME")
    if tenantless and tenant_name:
        raise click.UsageError(f"{role} tokens belong to no tenant: leave out --tenant")
    created = app.client.create_token(tenant_name, role, name)
    if as_json:
        render.emit_json(created)
        return
    click.echo(created["token"])
    who = f"role {role}" if tenantless else f"role {role}, tenant {created['tenant']}"
    render.emit_note(f"token {created['tokenId']} ({who}) created; this is the only time it is shown")


@token.command("ls", context_settings=CONTEXT)
@click.option("--tenant", "tenant_name", metavar="NAME", help="Only this tenant's tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of tokens (never their secrets).")
@pass_cli
def token_ls(app: Cli, /, tenant_name: str | None, as_json: bool) -> None:
    """List tokens (ids, roles, tenants; never the secrets)."""
    tokens = app.client.list_tokens(tenant_name)["tokens"]
    if as_json:
        render.emit_json(tokens)
        return
    rows = [
        [t["tokenId"], t["role"], t.get("tenant") or "-", t.get("name") or "-", render.fmt_utc(t.get("createdAt")),
         render.fmt_utc(t["revokedAt"]) if t.get("revokedAt") else "active"]
        for t in tokens
    ]
    render.emit_table(["TOKEN ID", "ROLE", "TENANT", "NAME", "CREATED", "REVOKED"], rows, empty="no tokens")


@token.command("revoke", context_settings=CONTEXT)
@click.argument("token_id", metavar="TOKEN_ID")
@click.option("--json", "as_json", is_flag=True, help="Print the revoked token as JSON.")
@pass_cli
def token_revoke(app: Cli, /, token_id: str, as_json: bool) -> None:
    """Revoke a token: it stops working at once on this node (within seconds on others)."""
    revoked = app.client.revoke_token(token_id)
    if as_json:
        render.emit_json(revoked)
        return
    render.emit_note(f"token {revoked['tokenId']} revoked")


@click.command(context_settings=CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@pass_cli
def whoami(app: Cli, /, as_json: bool) -> None:
    """Who the daemon takes these credentials for: the role (admin, tenant, worker, metrics),
    the tenant, and the token's id (what `cronwheel token revoke` takes); over the local socket
    without a token, the admin by file permission.

    \b
    Examples:
      cronwheel whoami
      CRONWHEEL_TOKEN=$ACME_TOKEN cronwheel --url http://scheduler:7878 whoami --json
    """
    me = app.client.whoami()
    if as_json:
        render.emit_json(me)
        return
    render.emit_kv([("role", me.get("role")), ("tenant", me.get("tenant") or "(none: every tenant)" if me.get("role") == "admin"
                    else me.get("tenant") or "(none)"),
                    ("token", me.get("tokenId") or "(none: the local socket)"), ("via", me.get("via"))])


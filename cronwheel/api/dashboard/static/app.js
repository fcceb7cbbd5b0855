// The cronwheel dashboard: five views over the /v1 API, chosen by the URL fragment
// (#/ overview, #/jobs, #/jobs/<jobId>, #/dlq, #/notifications, #/calendars). No framework and no build step: each view
// loads its data, and its body is rebuilt only when that data changed (so focus, scroll and
// a half-typed search survive live updates). Live updates come from the event stream; while
// it is down (or not ours to read) the visible view is polled instead.

import * as api from "./api.js";
import { badge, count, counted, h, ms, table, targetText, time, when } from "./dom.js";
import { overview } from "./overview.js";

const POLL_MS = 5000; // without the event stream
const OVERVIEW_MS = 10000; // the overview's charts move with time even when nothing happens
const EVENT_DEBOUNCE_MS = 700;
const LIVE_OUTPUT_MS = 1000; // a job page looks at its running execution's output this often
const JOB_PAGES = 4; // at most 4 × 500 jobs are listed; filters narrow what is shown
const SHOWN_STEP = 50;
const CONCURRENCY = 6; // per-row calls (the DLQ rows' job names) in flight at once

const main = document.getElementById("main");
const liveEl = document.getElementById("live");
const alertEl = document.getElementById("alert");
const noticeEl = document.getElementById("notice");

const app = {
  route: null,
  view: null,
  body: null, // the element a view's data is rendered into
  signature: null, // JSON of the data last rendered
  loading: null,
  again: false,
  live: false,
  timer: null,
  outputTimer: null, // the next look at a running execution's output (job page)
  shown: SHOWN_STEP, // rows of the job list shown
  historyLimit: 50,
  expanded: new Set(), // executions whose output is open
};

// ---------------------------------------------------------------- messages

function announce(text) {
  noticeEl.textContent = "";
  setTimeout(() => { noticeEl.textContent = text; }, 30); // a change screen readers notice
}

/** Show an error; ``source`` "load" errors clear themselves once the view loads again. */
function showError(err, source = "action") {
  alertEl.dataset.source = source;
  alertEl.replaceChildren(
    h("span", {}, err instanceof api.ApiError ? err.message : String(err && err.message ? err.message : err)),
    // the sign-in dialog was dismissed: offer it again
    err instanceof api.ApiError && err.status === 401 ? h("button", { type: "button", onclick: () => { clearError(); refresh(); } }, "Sign in") : null,
    h("button", { type: "button", class: "quiet", "aria-label": "Dismiss the error", onclick: () => { alertEl.hidden = true; } }, "×"),
  );
  alertEl.hidden = false;
}

function clearError() {
  delete alertEl.dataset.source;
  alertEl.hidden = true;
  alertEl.replaceChildren();
}

// ---------------------------------------------------------------- dialogs

function askToken(message) {
  const dialog = document.getElementById("login");
  const form = document.getElementById("login-form");
  const input = document.getElementById("token");
  const error = document.getElementById("login-error");
  error.hidden = !message;
  error.textContent = message || "";
  input.value = "";
  return new Promise((resolve, reject) => {
    const done = () => {
      form.removeEventListener("submit", onSubmit);
      dialog.removeEventListener("close", onClose);
    };
    const onSubmit = () => {
      const value = input.value.trim();
      if (!value) return;
      api.setToken(value);
      document.getElementById("signout").hidden = false;
      stream.kick(); // the event stream was refused without a token: try again now
      done();
      resolve();
    };
    const onClose = () => {
      if (!api.token()) {
        done();
        reject(new api.ApiError(401, null, "no token given: the API needs one over TCP"));
      }
    };
    form.addEventListener("submit", onSubmit);
    dialog.addEventListener("close", onClose);
    if (!dialog.open) dialog.showModal();
    input.focus();
  });
}

function confirmAction(title, text, yes) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-yes").textContent = yes;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
    dialog.showModal();
    document.getElementById("confirm-no").focus();
  });
}

// ---------------------------------------------------------------- routing

function parseRoute() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, qs] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map((p) => {
    try { return decodeURIComponent(p); } catch { return p; }
  });
  const params = new URLSearchParams(qs || "");
  if (parts.length === 0) return { name: "overview", params };
  if (parts[0] === "jobs" && parts.length === 1) return { name: "jobs", params };
  if (parts[0] === "jobs" && parts.length === 2) return { name: "job", jobId: parts[1], params };
  if (parts[0] === "dlq" && parts.length === 1) return { name: "dlq", params };
  if (parts[0] === "calendars" && parts.length === 1) return { name: "calendars", params };
  if (parts[0] === "notifications" && parts.length === 1) return { name: "notifications", params };
  return { name: "missing", params, path };
}

function setParams(params) {
  const qs = params.toString();
  history.replaceState(null, "", `#/${app.route.name === "jobs" ? "jobs" : ""}${qs ? "?" + qs : ""}`);
}

function navigate() {
  app.route = parseRoute();
  app.view = VIEWS[app.route.name] || VIEWS.missing;
  app.signature = null;
  app.shown = SHOWN_STEP;
  app.historyLimit = 50;
  app.expanded = new Set();
  clearError();
  for (const a of document.querySelectorAll("nav a")) {
    const current = a.dataset.view === app.route.name || (a.dataset.view === "jobs" && app.route.name === "job");
    if (current) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  document.title = `${app.view.title(app.route)} · cronwheel`;
  app.body = h("div", { class: "view-body", "aria-busy": "true" }, h("p", { class: "loading" }, "Loading…"));
  main.replaceChildren(...app.view.shell(app.route), app.body);
  main.focus({ preventScroll: true });
  refresh();
  schedule();
}

/** Load the current view's data and render it if it changed; one load at a time. */
async function refresh() {
  if (app.loading) {
    app.again = true;
    return app.loading;
  }
  const route = app.route;
  app.loading = (async () => {
    try {
      const data = await app.view.load(route);
      if (route !== app.route) return; // navigated away meanwhile
      const sig = JSON.stringify(data);
      if (alertEl.dataset.source === "load") clearError(); // the daemon is back
      if (sig === app.signature) return;
      app.signature = sig;
      render(app.view.render(data, route));
    } catch (err) {
      if (route !== app.route) return;
      if (err instanceof api.ApiError && err.status === 404 && route.name === "job") {
        app.signature = null;
        render(h("p", { class: "empty" }, `No job ${route.jobId} (it may have been removed, or belong to another tenant).`));
        return;
      }
      showError(err, "load");
      if (app.signature === null) render(h("p", { class: "empty" }, "Could not load this view."));
    } finally {
      app.loading = null;
      if (app.again) {
        app.again = false;
        refresh();
      }
    }
  })();
  return app.loading;
}

/** Replace the view's body, keeping focus on "the same" control (by data-key) if it is there. */
function render(node) {
  const active = document.activeElement;
  const key = active && app.body.contains(active) ? active.dataset.key : null;
  app.body.replaceChildren(node);
  app.body.setAttribute("aria-busy", "false");
  if (key) {
    // a button that an action replaced hands focus to its successor (Pause ⇄ Resume)
    const [verb, ...rest] = key.split(":");
    const next = FOCUS_NEXT[verb] ? `${FOCUS_NEXT[verb]}:${rest.join(":")}` : null;
    const again = app.body.querySelector(`[data-key="${CSS.escape(key)}"]`)
      || (next && app.body.querySelector(`[data-key="${CSS.escape(next)}"]`));
    if (again) again.focus({ preventScroll: true });
  }
}

const FOCUS_NEXT = { pause: "resume", resume: "pause" };

function schedule() {
  clearInterval(app.timer);
  const every = app.live ? (app.route.name === "overview" ? OVERVIEW_MS : 0) : POLL_MS;
  app.timer = every ? setInterval(refresh, every) : null;
}

let eventTimer = null;
function onEvent(rec) {
  const name = String(rec.event || "");
  if (!/^(execution|job|dlq|lease|scheduler\.claimed|effect|notification|window)/.test(name)) return;
  if (eventTimer) return;
  eventTimer = setTimeout(() => { eventTimer = null; refresh(); }, EVENT_DEBOUNCE_MS);
}

function onStreamState(state, reason) {
  app.live = state === "live";
  liveEl.textContent = app.live ? "Live" : `Polling every ${POLL_MS / 1000} s`;
  liveEl.title = app.live ? "Updates arrive on the daemon's event stream" : reason || "";
  liveEl.className = app.live ? "live on" : "live";
  if (app.route) schedule();
}

// ---------------------------------------------------------------- actions

function actionButton(label, key, aria, fn, cls = "") {
  // not disabled while busy: a disabled button drops keyboard focus, and the focus should
  // pass to the button that replaces it (see render)
  let busy = false;
  return h("button", { type: "button", class: cls, "data-key": key, "aria-label": aria, onclick: async (ev) => {
    const btn = ev.currentTarget;
    if (busy) return;
    busy = true;
    btn.setAttribute("aria-busy", "true");
    try {
      await fn();
      clearError();
    } catch (err) {
      showError(err);
    } finally {
      busy = false;
      btn.removeAttribute("aria-busy");
      await refresh();
    }
  } }, label);
}

function jobName(job) {
  return job.name || job.jobId;
}

function jobActions(job) {
  const id = encodeURIComponent(job.jobId);
  const name = jobName(job);
  const out = [];
  if (job.status === "ACTIVE") {
    out.push(actionButton("Pause", `pause:${job.jobId}`, `Pause ${name}`, async () => {
      await api.post(`/v1/jobs/${id}/pause`);
      announce(`Paused ${name}`);
    }));
  }
  if (job.status === "PAUSED") {
    out.push(actionButton("Resume", `resume:${job.jobId}`, `Resume ${name}`, async () => {
      await api.post(`/v1/jobs/${id}/resume`);
      announce(`Resumed ${name}`);
    }));
  }
  // a watched job runs elsewhere and reports by pings: there is nothing to trigger here
  if (job.status !== "CANCELLED" && !(job.target && job.target.ping)) {
    out.push(actionButton("Trigger", `trigger:${job.jobId}`, `Run ${name} now`, async () => {
      const ex = await api.post(`/v1/jobs/${id}/trigger`);
      announce(`Triggered ${name}: execution ${ex.executionId}`);
    }));
  }
  if (job.status !== "CANCELLED") {
    out.push(actionButton("Cancel", `cancel:${job.jobId}`, `Cancel ${name}`, async () => {
      if (!(await confirmAction("Cancel this job?", `${name} will never run again and its running executions are aborted.`, "Cancel the job"))) return;
      await api.del(`/v1/jobs/${id}`);
      announce(`Cancelled ${name}`);
    }, "danger"));
  }
  return h("div", { class: "actions" }, out);
}

// ---------------------------------------------------------------- jobs

// status and tenant are filtered by the server; the search box over what was loaded
async function allJobs(status, tenant) {
  const jobs = [];
  let after = null;
  for (let page = 0; page < JOB_PAGES; page++) {
    const r = await api.get(`/v1/jobs${api.query({ limit: 500, status, tenant, after })}`);
    jobs.push(...r.jobs);
    after = r.next;
    if (!after) break;
  }
  return { jobs, more: Boolean(after) };
}

/** ``fn(id)`` for every id, a few at a time; an id whose call fails maps to null. */
async function eachLimited(ids, fn) {
  const out = {};
  let next = 0;
  async function worker() {
    while (next < ids.length) {
      const id = ids[next++];
      try {
        out[id] = await fn(id);
      } catch {
        out[id] = null; // removed meanwhile: the row shows its id and no last result
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return out;
}

/** Job id -> name (or id) for the DLQ's rows. */
const jobNames = (ids) => eachLimited(ids, async (id) => jobName(await api.get(`/v1/jobs/${encodeURIComponent(id)}`)));

function matches(job, q, tenant) {
  if (tenant && job.tenant !== tenant) return false;
  if (!q) return true;
  const hay = [job.jobId, job.name || "", job.schedule || "", targetText(job.target)].join("\n").toLowerCase();
  return hay.includes(q.toLowerCase());
}

/** "exit 3", or the error when it says more than that (never both saying the same). */
function resultText(ex) {
  const exit = ex.exitCode !== null && ex.exitCode !== undefined ? `exit ${ex.exitCode}` : "";
  if (!ex.error) return exit;
  return ex.error.includes(`exit code ${ex.exitCode}`) || !exit ? ex.error : `${exit}: ${ex.error}`;
}

/** A job's last result: its latest execution that started (the API's lastRun), never a tick
 * claimed ahead. None on record: it never started, or its history was pruned or purged. */
function lastCell(ex) {
  if (!ex) return h("span", { class: "muted" }, "no run on record");
  const detail = resultText(ex);
  return h("span", {}, badge(ex.status), " ", h("span", { class: "muted" }, when(ex.finishedAt || ex.startedAt || ex.scheduledAt)), detail && ex.status !== "SUCCEEDED" ? h("span", { class: "muted" }, ` · ${detail}`) : null);
}

const jobsView = {
  title: () => "Jobs",
  shell(route) {
    const p = route.params;
    const search = h("input", { id: "job-search", type: "search", value: p.get("q") || "", placeholder: "name, id, schedule or command", autocomplete: "off" });
    const tenant = h("select", { id: "job-tenant" }, h("option", { value: "" }, "All tenants"));
    if (p.get("tenant")) tenant.append(h("option", { value: p.get("tenant"), selected: true }, p.get("tenant")));
    const status = h("select", { id: "job-status" },
      ["", "ACTIVE", "PAUSED", "SUCCEEDED", "FAILED", "CANCELLED"].map((v) => h("option", { value: v, selected: (p.get("status") || "") === v }, v || "Any status")));
    let typing = null;
    const update = (key, value, immediate) => {
      const params = new URLSearchParams(app.route.params);
      if (value) params.set(key, value);
      else params.delete(key);
      app.route.params = params;
      setParams(params);
      app.shown = SHOWN_STEP;
      clearTimeout(typing);
      typing = setTimeout(refresh, immediate ? 0 : 250);
    };
    search.addEventListener("input", () => update("q", search.value.trim(), false));
    tenant.addEventListener("change", () => update("tenant", tenant.value, true));
    status.addEventListener("change", () => update("status", status.value, true));
    return [
      h("h1", {}, "Jobs"),
      h("form", { class: "toolbar", role: "search", onsubmit: (e) => e.preventDefault() },
        h("div", { class: "field" }, h("label", { for: "job-search" }, "Search"), search),
        h("div", { class: "field" }, h("label", { for: "job-tenant" }, "Tenant"), tenant),
        h("div", { class: "field" }, h("label", { for: "job-status" }, "Status"), status)),
    ];
  },
  async load(route) {
    const p = route.params;
    const { jobs, more } = await allJobs(p.get("status") || "", p.get("tenant") || "");
    const tenants = [...new Set(jobs.map((j) => j.tenant))].sort();
    const filtered = jobs.filter((j) => matches(j, p.get("q") || "", p.get("tenant") || ""));
    const visible = filtered.slice(0, app.shown);
    return { tenants, loaded: jobs.length, more, matched: filtered.length, visible };
  },
  render(d, route) {
    const select = document.getElementById("job-tenant");
    if (select) {
      const chosen = route.params.get("tenant") || "";
      const want = ["", ...new Set([...d.tenants, chosen].filter(Boolean))];
      const have = [...select.options].map((o) => o.value);
      if (want.join("\n") !== have.join("\n")) {
        select.replaceChildren(...want.map((t) => h("option", { value: t, selected: t === chosen }, t || "All tenants")));
      }
    }
    const rows = d.visible.map((j) => h("tr", { "data-job": j.jobId },
      h("td", {}, h("a", { href: `#/jobs/${encodeURIComponent(j.jobId)}`, class: "job-name", "data-key": `open:${j.jobId}` }, jobName(j)), j.name ? h("div", { class: "muted small" }, j.jobId) : null),
      h("td", {}, j.tenant),
      h("td", {}, badge(j.status), overdueBadge(j)),
      h("td", {}, h("code", {}, scheduleText(j)), j.timezone !== "UTC" ? h("div", { class: "muted small" }, j.timezone) : null),
      h("td", { class: "target" }, h("code", {}, targetText(j.target))),
      h("td", {}, time(j.nextRunAt)),
      h("td", {}, lastCell(j.lastRun)),
      h("td", {}, jobActions(j))));
    const summary = `${count(d.matched)} of ${counted(d.loaded, "job")}${d.more ? ` (the first ${count(d.loaded)} listed; narrow by status to see others)` : ""}`;
    return h("div", {},
      h("p", { class: "muted", id: "jobs-summary" }, summary),
      rows.length ? table("Jobs", ["Job", "Tenant", "Status", "Schedule", "Target", "Next run", "Last result", "Actions"], rows, "jobs") : h("p", { class: "empty" }, "No job matches."),
      d.matched > d.visible.length ? h("button", { type: "button", "data-key": "more", onclick: () => { app.shown += SHOWN_STEP; refresh(); } }, `Show ${Math.min(SHOWN_STEP, d.matched - d.visible.length)} more`) : null);
  },
};

// a job whose dead-man's window passed without a success
function overdueBadge(job) {
  if (!job.window || !job.window.overdue) return null;
  return h("span", { class: "badge s-overdue", title: `no success since the deadline ${job.window.overdueSince || job.window.deadline}` }, "OVERDUE");
}

function scheduleText(job) {
  if (job.schedule) return job.schedule;
  if (job.runAt) return `at ${when(job.runAt)}`;
  return job.expectSuccessWithin ? `pinged, every ${job.expectSuccessWithin}` : "–";
}

function ruleText(rule) {
  const where = rule.via === "webhook" ? rule.url : rule.via === "email" ? (rule.to || []).join(", ") : rule.command;
  return `on ${rule.on}${rule.afterSec ? ` ${rule.afterSec} s` : ""} via ${rule.via} ${where}`;
}

// ---------------------------------------------------------------- one job's history

// what made an execution when not the schedule: a backfill, or a chain parent (linked)
function contextNote(ctx) {
  if (!ctx) return null;
  if (ctx.backfill) return h("div", { class: "muted small" }, "backfill");
  const p = ctx.parent;
  if (!p || typeof p.jobId !== "string") return null;
  return h("div", { class: "muted small" }, "after ", h("a", { href: `#/jobs/${encodeURIComponent(p.jobId)}` }, String(p.executionId)), ` (${p.outcome})`);
}

function duration(ex) {
  if (!ex.startedAt || !ex.finishedAt) return null;
  return Date.parse(ex.finishedAt) - Date.parse(ex.startedAt);
}

// How the command's process is set up (crontab's user field, SHELL=, NAME=value lines and %):
// shown only when the job sets it, every value as text.
function processRows(j) {
  const rows = [];
  if (j.runAs) rows.push(["Run as", h("code", {}, j.runAs.group ? `${j.runAs.user}:${j.runAs.group}` : j.runAs.user)]);
  if (j.shell) rows.push(["Shell", h("code", {}, j.shell)]);
  const env = Object.entries(j.env || {});
  if (env.length) rows.push(["Environment", h("ul", { class: "env" }, env.map(([k, v]) => h("li", {}, h("code", {}, `${k}=${v}`))))]);
  if (j.stdin !== null && j.stdin !== undefined) rows.push(["Standard input", h("pre", { class: "stdin" }, j.stdin === "" ? "(empty)" : j.stdin)]);
  return rows;
}

const jobView = {
  title: (route) => `Job ${route.jobId}`,
  shell: (route) => [h("p", { class: "crumbs" }, h("a", { href: "#/jobs" }, "Jobs"), " / ", route.jobId)],
  async load(route) {
    const id = encodeURIComponent(route.jobId);
    const [job, history] = await Promise.all([api.get(`/v1/jobs/${id}`), api.get(`/v1/jobs/${id}/executions?limit=${app.historyLimit}`)]);
    // the run going on now: its output so far (the worker forwards it as it is printed)
    const running = job.lastRun && job.lastRun.status === "RUNNING" ? job.lastRun : null;
    const live = running ? await api.getText(`/v1/executions/${encodeURIComponent(running.executionId)}/output`) : null;
    clearTimeout(app.outputTimer);
    if (running) app.outputTimer = setTimeout(() => { if (app.route === route) refresh(); }, LIVE_OUTPUT_MS);
    const outputs = {};
    await Promise.all([...app.expanded].map(async (xid) => {
      try {
        outputs[xid] = (await api.get(`/v1/executions/${encodeURIComponent(xid)}`)).output;
      } catch (err) {
        outputs[xid] = `(cannot read the output: ${err.message})`;
      }
    }));
    return { job, executions: history.executions, more: Boolean(history.next), outputs, running, live };
  },
  render(d) {
    const j = d.job;
    const retry = j.retryPolicy || {};
    const def = [
      ["Job id", j.jobId], ["Tenant", j.tenant], ["Status", h("span", {}, badge(j.status), overdueBadge(j))],
      ["Schedule", h("code", {}, scheduleText(j))], ["Time zone", j.timezone],
      ["Target", h("code", { class: "target" }, targetText(j.target))], ["Next run", time(j.nextRunAt)],
      ["Last result", lastCell(j.lastRun)],
      ["Retries", `${retry.maxAttempts} attempts, backoff ${retry.initialBackoffSec} s × ${retry.multiplier} up to ${retry.maxBackoffSec} s`],
      ["Timeout", j.timeoutSec ? `${j.timeoutSec} s` : "none"], ["Priority", j.priority],
      ...processRows(j),
    ];
    // scheduling beyond cron: shown only when the job uses it
    const jobLinks = (ids) => ids.map((id, i) => [i ? ", " : null, h("a", { href: `#/jobs/${encodeURIComponent(id)}` }, id)]);
    if (j.calendars && j.calendars.length) def.push(["Calendars", j.calendars.join(", ")]);
    if (j.activeFrom || j.activeUntil) def.push(["Active", `${j.activeFrom ? when(j.activeFrom) : "…"} → ${j.activeUntil ? when(j.activeUntil) : "…"}`]);
    if (j.onSuccess && j.onSuccess.length) def.push(["On success", jobLinks(j.onSuccess)]);
    if (j.onFailure && j.onFailure.length) def.push(["On failure", jobLinks(j.onFailure)]);
    if (j.window) def.push(["Expect success", `within ${j.expectSuccessWithin}; next deadline ${when(j.window.deadline)}`]);
    if (j.notify && j.notify.length) def.push(["Notify", j.notify.map(ruleText).join("; ")]);
    const rows = [];
    for (const ex of d.executions) {
      const open = app.expanded.has(ex.executionId);
      const outId = `out-${ex.executionId.replace(/[^A-Za-z0-9_-]/g, "_")}`;
      rows.push(h("tr", { "data-execution": ex.executionId },
        h("td", {}, when(ex.scheduledAt)),
        h("td", {}, badge(ex.status), ex.origin && ex.origin !== "schedule" ? h("span", { class: "muted small" }, ` ${ex.origin.replace("_", "-")}`) : null,
          ex.reason ? h("div", { class: "muted small" }, ex.reason) : null, contextNote(ex.context)),
        h("td", { class: "num" }, ms(ex.lagMs)),
        h("td", { class: "num" }, `${ex.attempt}/${ex.maxAttempts}`),
        h("td", { class: "num" }, ex.leaseEpoch),
        h("td", { class: "num" }, ms(duration(ex))),
        h("td", { class: ex.error ? "error" : "" }, resultText(ex)),
        h("td", {}, h("button", { type: "button", class: "quiet", "data-key": `out:${ex.executionId}`, "aria-expanded": String(open), "aria-controls": outId,
          onclick: () => { if (open) app.expanded.delete(ex.executionId); else app.expanded.add(ex.executionId); refresh(); } }, open ? "Hide output" : "Output"))));
      if (open) {
        const text = d.outputs[ex.executionId];
        rows.push(h("tr", { class: "output-row", id: outId }, h("td", { colspan: 8 },
          h("pre", { class: "output", tabindex: "0", "aria-label": `Output of ${ex.executionId}` }, text ? text : "(no output)"))));
      }
    }
    return h("div", {},
      h("h1", { class: "job-title" }, jobName(j)),
      jobActions(j),
      h("dl", { class: "def" }, def.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      d.running ? h("section", { id: "live-output" },
        h("h2", {}, "Running now"),
        h("p", { class: "muted small" }, `${d.running.executionId}, attempt ${d.running.attempt}: its output as it is printed`),
        h("pre", { class: "output", tabindex: "0", "aria-label": `Live output of ${d.running.executionId}`, "aria-live": "polite" }, d.live || "(no output yet)")) : null,
      h("h2", {}, "Executions"),
      rows.length ? table("Executions, newest first", ["Scheduled", "Status", "Lag", "Attempt", "Epoch", "Duration", "Result", "Output tail"], rows, "history") : h("p", { class: "empty" }, "No execution yet."),
      d.more && app.historyLimit < 1000 ? h("button", { type: "button", "data-key": "older", onclick: () => { app.historyLimit = Math.min(1000, app.historyLimit + 50); refresh(); } }, "Show older") : null);
  },
};

// ---------------------------------------------------------------- dead letters

const dlqView = {
  title: () => "Dead letters",
  shell: () => [h("h1", {}, "Dead-letter queue"), h("p", { class: "muted" }, "Executions whose attempts are spent. Replay runs one again (attempt 1, a new lease epoch); purge deletes it.")],
  async load() {
    const dead = [];
    let after = null;
    for (let page = 0; page < 5; page++) {
      const r = await api.get(`/v1/dlq${api.query({ limit: 200, after })}`);
      dead.push(...r.executions);
      after = r.next;
      if (!after) break;
    }
    const names = await jobNames([...new Set(dead.map((ex) => ex.jobId))].slice(0, 100));
    return { dead, more: Boolean(after), names };
  },
  render(d) {
    const rows = d.dead.map((ex) => h("tr", { "data-execution": ex.executionId },
      h("td", {}, h("code", {}, ex.executionId)),
      h("td", {}, h("a", { href: `#/jobs/${encodeURIComponent(ex.jobId)}` }, d.names[ex.jobId] || ex.jobId)),
      h("td", {}, ex.tenant),
      h("td", {}, when(ex.scheduledAt)),
      h("td", { class: "num" }, `${ex.attempt}/${ex.maxAttempts}`),
      h("td", { class: ex.error ? "error" : "" }, resultText(ex)),
      h("td", {}, when(ex.finishedAt)),
      h("td", {}, h("div", { class: "actions" },
        actionButton("Replay", `replay:${ex.executionId}`, `Replay ${ex.executionId}`, async () => {
          await api.post(`/v1/dlq/${encodeURIComponent(ex.executionId)}/replay`);
          announce(`Replayed ${ex.executionId}`);
        }),
        actionButton("Purge", `purge:${ex.executionId}`, `Purge ${ex.executionId}`, async () => {
          if (!(await confirmAction("Purge this dead letter?", `${ex.executionId} is deleted for good; it will not run again.`, "Purge"))) return;
          await api.del(`/v1/dlq/${encodeURIComponent(ex.executionId)}`);
          announce(`Purged ${ex.executionId}`);
        }, "danger")))));
    return h("div", {},
      rows.length ? table("Dead-lettered executions", ["Execution", "Job", "Tenant", "Scheduled", "Attempts", "Last error", "Died", "Actions"], rows, "dlq") : h("p", { class: "empty" }, "The dead-letter queue is empty."),
      d.more ? h("p", { class: "muted" }, `The first ${count(d.dead.length)} are shown; replay or purge some to see the rest.`) : null);
  },
};

// ---------------------------------------------------------------- notifications

const NOTIFICATION_STATUSES = ["", "DEAD", "HELD", "PENDING", "RUNNING", "SENT"];

const notificationsView = {
  title: () => "Notifications",
  shell: () => [h("h1", {}, "Notifications"), h("p", { class: "muted" }, "What cronwheel told whom, newest first. DEAD ones are the notifications' dead-letter queue: replay sends one again, purge deletes it for good (a receiver that is gone).")],
  async load() {
    const status = app.route.params.get("status") || "";
    const r = await api.get(`/v1/notifications${api.query({ limit: 200, status: status || null })}`);
    const names = await jobNames([...new Set(r.notifications.map((n) => n.jobId))].slice(0, 100));
    return { items: r.notifications, more: Boolean(r.next), names, status };
  },
  render(d) {
    const filter = h("label", {}, "Status ",
      h("select", { id: "notification-status", onchange: (e) => {
        const params = new URLSearchParams(e.target.value ? { status: e.target.value } : {});
        location.hash = `#/notifications${params.toString() ? "?" + params : ""}`;
      } }, NOTIFICATION_STATUSES.map((s) => h("option", { value: s, selected: s === d.status }, s || "Any status"))));
    const rows = d.items.map((n) => h("tr", { "data-notification": n.notificationId },
      h("td", {}, h("code", {}, n.notificationId)),
      h("td", {}, h("a", { href: `#/jobs/${encodeURIComponent(n.jobId)}` }, d.names[n.jobId] || n.jobId)),
      h("td", {}, n.event),
      h("td", {}, n.rule.via),
      h("td", {}, n.status),
      h("td", { class: "num" }, String(n.attempt)),
      h("td", {}, when(n.createdAt)),
      h("td", { class: n.error ? "error" : "" }, n.error || ""),
      h("td", {}, h("div", { class: "actions" },
        n.status === "DEAD" || n.status === "HELD" ? actionButton("Replay", `replay:${n.notificationId}`, `Replay ${n.notificationId}`, async () => {
          await api.post(`/v1/notifications/${encodeURIComponent(n.notificationId)}/replay`);
          announce(`Replaying ${n.notificationId}`);
        }) : null,
        n.status === "DEAD" ? actionButton("Purge", `purge:${n.notificationId}`, `Purge ${n.notificationId}`, async () => {
          if (!(await confirmAction("Purge this notification?", `${n.notificationId} is deleted for good; it will not be sent again.`, "Purge"))) return;
          await api.del(`/v1/notifications/${encodeURIComponent(n.notificationId)}`);
          announce(`Purged ${n.notificationId}`);
        }, "danger") : null))));
    return h("div", {}, h("p", {}, filter),
      rows.length ? table("Notifications, newest first", ["Notification", "Job", "Event", "Via", "Status", "Attempt", "Created", "Last error", "Actions"], rows, "notifications")
        : h("p", { class: "empty" }, d.status ? `No ${d.status} notification.` : "No notification yet (a job's notify rules say when to tell someone)."),
      d.more ? h("p", { class: "muted" }, `The newest ${count(d.items.length)} are shown.`) : null);
  },
};

const calendarsView = {
  title: () => "Calendars",
  shell: () => [h("h1", {}, "Calendars"), h("p", { class: "muted" }, "Excluded days and windows. A job that observes a calendar records the ticks it excludes as SKIPPED (reason calendar: NAME); days and local windows are read in each job's time zone.")],
  async load() {
    return (await api.get("/v1/calendars")).calendars;
  },
  render(cals) {
    const rows = cals.map((c) => h("tr", { "data-calendar": `${c.tenant}/${c.name}` },
      h("td", {}, h("code", {}, c.name)),
      h("td", {}, c.tenant),
      h("td", {}, c.dates.join(", ") || "–"),
      h("td", {}, c.windows.map((w) => `${w.start} → ${w.end}`).join(", ") || "–"),
      h("td", {}, c.description || "")));
    return rows.length ? table("Calendars", ["Name", "Tenant", "Excluded days", "Excluded windows", "Description"], rows, "calendars")
      : h("p", { class: "empty" }, "No calendar yet (cronwheel calendar set NAME --date YYYY-MM-DD).");
  },
};

const missing = {
  title: () => "Not found",
  shell: () => [h("h1", {}, "Not found")],
  load: async () => null,
  render: () => h("p", {}, "No such page. ", h("a", { href: "#/" }, "Back to the overview.")),
};

const VIEWS = { overview, jobs: jobsView, job: jobView, dlq: dlqView, notifications: notificationsView, calendars: calendarsView, missing };

// ---------------------------------------------------------------- start

api.onTokenNeeded(askToken);
document.getElementById("signout").hidden = !api.token();
document.getElementById("signout").addEventListener("click", () => {
  api.setToken(null);
  location.reload();
});
window.addEventListener("hashchange", navigate);
onStreamState("polling", "connecting to the event stream");
const stream = api.follow(onEvent, onStreamState);
navigate();

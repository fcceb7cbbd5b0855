// The dashboard's overview (#/): the node's numbers, the last hour's dispatch lag, queue depth
// by tier, running executions and the coming hour's herd preview. Each part degrades on its
// own: a tenant token gets 403 for the node-wide parts and still sees its herd.

import * as api from "./api.js";
import { barChart, count, counted, h, hbars, lineChart, ms, section, stat, table, when } from "./dom.js";

const HERD_TTL_MS = 60000; // the herd preview reads every active job: not on every event

let herdCache = { at: 0, data: null, error: null };

async function settle(promise) {
  try {
    return { value: await promise };
  } catch (error) {
    return { error };
  }
}

async function herdPreview() {
  if (Date.now() - herdCache.at > HERD_TTL_MS) {
    const r = await settle(api.get("/v1/herd?window=3600&top=5"));
    herdCache = { at: Date.now(), data: r.value || null, error: r.error ? r.error.message : null };
  }
  return { data: herdCache.data, error: herdCache.error };
}

function lagSection(activity) {
  const minutes = activity.lagHistory.minutes;
  const values = (k) => minutes.map((m) => m[k]);
  const started = minutes.reduce((a, m) => a + m.count, 0);
  const worst = Math.max(0, ...minutes.map((m) => m.p99 || 0));
  const latest = [...minutes].reverse().find((m) => m.count);
  const chart = lineChart({
    id: "lag-chart",
    title: "Dispatch lag per minute, last hour",
    desc: started ? `${count(started)} scheduled first attempts started; worst minute p99 ${ms(worst)}; latest p99 ${ms(latest && latest.p99)}.` : "No execution started in the last hour.",
    series: [
      { name: "max", cls: "s-max", values: values("max") },
      { name: "p99", cls: "s-p99", values: values("p99") },
      { name: "p50", cls: "s-p50", values: values("p50") },
    ],
    labels: [{ at: 0, text: "−60 min", anchor: "start" }, { at: 30, text: "−30 min" }, { at: 59, text: "now", anchor: "end" }],
    fmt: ms,
  });
  const legend = h("ul", { class: "legend" },
    h("li", { class: "s-p50" }, "p50"), h("li", { class: "s-p99" }, "p99"), h("li", { class: "s-max" }, "max"));
  const rows = minutes.filter((m) => m.count).reverse().map((m) => h("tr", {},
    h("td", {}, when(m.at)), h("td", { class: "num" }, count(m.count)), h("td", { class: "num" }, ms(m.p50)), h("td", { class: "num" }, ms(m.p99)), h("td", { class: "num" }, ms(m.max))));
  return section("lag", "Dispatch lag, last hour",
    h("p", { class: "muted" }, "startedAt − scheduledAt of scheduled first attempts, per minute (catch-up runs, manual triggers, DLQ replays and retries are not lateness and are left out)."),
    chart, legend,
    h("details", {}, h("summary", {}, "The numbers"),
      rows.length ? table("Dispatch lag per minute", ["Minute", "Started", "p50", "p99", "max"], rows) : h("p", { class: "empty" }, "Nothing started in the last hour.")));
}

function herdSection(herd) {
  if (!herd.data) return section("herd", "Herd preview: the coming hour", h("p", { class: "empty" }, `Unavailable: ${herd.error || "no data"}`));
  const d = herd.data;
  const start = Date.parse(d.windowStart);
  const p99 = d.p99PerSecond;
  const chart = barChart({
    id: "herd-chart",
    title: "Jobs due per second in the coming hour (the busiest second of each minute)",
    desc: `${counted(d.ticks, "tick")} of ${counted(d.jobs, "active job")}; the busiest second has ${count(d.maxPerSecond)} due.`,
    values: d.peakPerMinute || d.perMinute,
    labels: {
      ticks: [{ at: 0, text: "now" }, { at: 15, text: "+15 min" }, { at: 30, text: "+30 min" }, { at: 45, text: "+45 min" }],
      full: (i) => when(new Date(start + i * 60000).toISOString()),
    },
    fmt: count,
    // the minute that holds the busiest second stands out
    highlight: (v, i) => d.busiest.length > 0 && Math.floor(d.busiest[0].offsetSec / 60) === i,
  });
  const rows = d.busiest.map((b) => h("tr", {},
    h("td", {}, when(b.at)),
    h("td", { class: "num" }, count(b.count)),
    h("td", {}, b.schedules.map((x) => h("span", { class: "chip" }, h("code", {}, x.schedule), ` × ${count(x.jobs)}`)))));
  return section("herd", "Herd preview: the coming hour",
    h("div", { class: "stats" },
      stat("Jobs due per second, max", count(d.maxPerSecond)),
      stat("p99 per second", count(p99)),
      stat("Ticks this hour", count(d.ticks)),
      stat("Active jobs", count(d.jobs))),
    chart,
    rows.length ? table("The busiest seconds of the coming hour", ["Second", "Jobs due", "Schedules"], rows, "busiest") : h("p", { class: "empty" }, "Nothing is due in the coming hour."),
    h("p", { class: "muted" }, "Spread a herd with H in the schedule (H * * * *) or jitterSec."));
}

function runningSection(activity, status) {
  const rows = activity.running.map((r) => h("tr", {},
    h("td", {}, h("a", { href: `#/jobs/${encodeURIComponent(r.jobId)}` }, r.executionId)),
    h("td", {}, r.workerId),
    h("td", { class: "num" }, r.leaseEpoch),
    h("td", { class: "num" }, r.runningSec === null ? "–" : ms(r.runningSec * 1000))));
  const storeRunning = status && status.executions ? status.executions.RUNNING : null;
  return section("running", "Running executions",
    h("p", { class: "muted" }, `${count(activity.runningTotal)} in this node's workers`, storeRunning !== null ? `; ${count(storeRunning)} RUNNING in the store (every node and remote worker).` : "."),
    rows.length ? table("Running executions", ["Execution", "Worker", "Epoch", "Running for"], rows, "running") : h("p", { class: "empty" }, "Nothing is running."));
}

function overviewStats(st) {
  const jobs = st.jobs || {};
  const ex = st.executions || {};
  const w = st.workers || {};
  const lag = st.dispatchLagMs || {};
  return h("div", { class: "stats", id: "node-stats" },
    stat("Active jobs", count(jobs.ACTIVE), `${count(jobs.PAUSED)} paused`),
    stat("Pending", count(ex.PENDING), `${count(ex.RETRY_WAIT)} waiting to retry`),
    stat("Running", count(ex.RUNNING)),
    stat("Dead letters", h("a", { href: "#/dlq" }, count(ex.DEAD))),
    stat("Workers", count(w.count), `${count(w.freeSlots)} free slots`),
    stat("Dispatch lag p99", ms(lag.p99), `p50 ${ms(lag.p50)} · ${count(lag.samples)} samples`),
    stat("Next run", when(st.nextRunAt)));
}

export const overview = {
  title: () => "Overview",
  shell: () => [h("h1", {}, "Overview")],
  async load() {
    const [status, activity, herd] = await Promise.all([settle(api.get("/v1/status")), settle(api.get("/v1/status/activity")), herdPreview()]);
    const err = (r) => (r.error ? { status: r.error.status, message: r.error.message } : null);
    return { status: status.value || null, statusError: err(status), activity: activity.value || null, activityError: err(activity), herd };
  },
  render(d) {
    const forbidden = (e) => e && e.status === 403;
    const parts = [];
    if (d.status) {
      if (d.status.stopping) parts.push(h("p", { class: "error stopping" }, "This node is stopping: it starts no new work, and its running executions finish within the grace period. Jobs created now run after the restart."));
      if (d.status.stale) parts.push(h("p", { class: "error stale" }, `The store cannot be reached (${d.status.storeError || "no detail"}): the job and execution counts are as of ${when(d.status.asOf)}${d.status.staleForMs !== undefined ? `, ${ms(d.status.staleForMs)} ago` : ""}. The queue, workers and lag are live.`));
      parts.push(h("p", { class: "muted node" }, `Node ${d.status.nodeId} · up ${ms(Math.round(d.status.uptimeSec) * 1000)}${d.status.store && d.status.store.kind ? ` · ${d.status.store.kind} store` : ""}${d.status.cluster ? " · cluster" : ""}`));
      parts.push(overviewStats(d.status));
    } else if (forbidden(d.statusError)) {
      parts.push(h("p", { class: "note" }, "The node's numbers need an admin token; this token sees its own tenant's jobs, history, dead letters and herd."));
    } else if (d.statusError) {
      parts.push(h("p", { class: "error" }, `Status unavailable: ${d.statusError.message}`));
    }
    const grid = [];
    if (d.activity) grid.push(lagSection(d.activity));
    if (d.status) {
      const q = d.status.queue || {};
      grid.push(section("tiers", "Queue depth by tier",
        hbars({ id: "tier-depths", title: "Ready executions per tier", rows: ["high", "default", "batch"].map((t) => ({ label: t, value: q[t] || 0 })) }),
        h("p", { class: "muted" }, `${count(d.status.delayed)} claimed ahead, waiting in the delay wheel for their time (or jitter); ${counted(d.status.wheel, "job")} in the timing wheel.`)));
    }
    if (d.activity) grid.push(runningSection(d.activity, d.status));
    grid.push(herdSection(d.herd));
    parts.push(h("div", { class: "grid" }, grid));
    return h("div", {}, parts);
  },
};

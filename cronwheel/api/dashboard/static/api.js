// The dashboard's only way to the daemon: the public /v1 JSON API, with the user's bearer
// token when there is one. Over TCP a call without a token answers 401: we then ask for one
// (askToken) and retry; over the local Unix socket (e.g. an SSH-forwarded socket) none is
// needed and none is asked for.

const TOKEN_KEY = "cronwheel.token";

export class ApiError extends Error {
  constructor(status, problem, fallback) {
    super((problem && problem.detail) || fallback || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || null;
  }
}

let askToken = null; // set by the app: () => Promise<string>, resolves once the user gave one
let pendingAsk = null; // one login prompt at a time, however many calls were refused

export function onTokenNeeded(fn) {
  askToken = fn;
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra) {
  const h = { Accept: "application/json", ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

async function problemOf(res) {
  try {
    return await res.json();
  } catch {
    return null; // not JSON (a proxy's error page): the status alone will have to do
  }
}

async function login(problem) {
  if (!askToken) throw new ApiError(401, problem);
  if (!pendingAsk) {
    pendingAsk = askToken(problem && token() ? "That token was refused: " + problem.detail : null)
      .finally(() => { pendingAsk = null; });
  }
  await pendingAsk;
}

/** One call; its JSON answer (or its text, with ``as = "text"``). Retries after a login
 * when the daemon answers 401. */
export async function call(method, path, body, as = "json") {
  for (let attempt = 0; ; attempt++) {
    const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
    if (body !== undefined) init.body = JSON.stringify(body);
    let res;
    try {
      res = await fetch(path, init);
    } catch (err) {
      throw new ApiError(0, null, `cannot reach the daemon (${err.message})`);
    }
    if (res.status === 401 && attempt < 5) {
      await login(await problemOf(res));
      continue;
    }
    if (!res.ok) throw new ApiError(res.status, await problemOf(res));
    if (as === "text") return res.text();
    return res.status === 204 ? null : res.json();
  }
}

export const get = (path) => call("GET", path);
export const getText = (path) => call("GET", path, undefined, "text");
export const post = (path, body = {}) => call("POST", path, body);
export const del = (path) => call("DELETE", path);

/** Build a query string from the non-empty members of ``params``. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? "?" + s : "";
}

/**
 * Follow the event log (GET /v1/events?follow=1, newline-delimited JSON). EventSource cannot
 * send an Authorization header, so this reads a fetch stream. Calls onEvent(record) per line;
 * onState("live" | "polling", reason) when the stream comes up or goes away. Reconnects with
 * backoff; a 403 (a tenant token: the stream covers every tenant) stops trying. Returns
 * {stop, kick}: kick() reconnects at once (after a sign-in).
 */
export function follow(onEvent, onState) {
  let stopped = false;
  let controller = null;
  let delay = 1000;
  let wake = null;

  async function run() {
    while (!stopped) {
      controller = new AbortController();
      let res = null;
      try {
        res = await fetch("/v1/events?follow=1&n=0", { headers: headers({ Accept: "application/x-ndjson" }), signal: controller.signal });
      } catch {
        res = null;
      }
      if (stopped) return;
      if (res && res.status === 403) {
        onState("polling", "the live event stream is for admin tokens");
        return;
      }
      if (res && res.ok && res.body) {
        onState("live");
        delay = 1000;
        try {
          await readLines(res.body, onEvent);
        } catch {
          // aborted or dropped: fall through to reconnect
        }
      }
      if (stopped) return;
      onState("polling", res && !res.ok ? `event stream answered ${res.status}` : "event stream disconnected");
      await new Promise((r) => { wake = r; setTimeout(r, delay); });
      wake = null;
      delay = Math.min(delay * 2, 30000);
    }
  }

  run();
  return {
    stop() {
      stopped = true;
      if (controller) controller.abort();
    },
    kick() {
      delay = 1000;
      if (wake) wake();
    },
  };
}

async function readLines(stream, onEvent) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.trim()) continue;
      try {
        onEvent(JSON.parse(line));
      } catch {
        // a line we cannot parse is skipped, never fatal to the stream
      }
    }
  }
}

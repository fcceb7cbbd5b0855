// DOM building and charts. Every string from the daemon (job names, commands, output, errors)
// reaches the page as a Text node or an attribute value set with setAttribute: never as HTML.
// There is no innerHTML in this dashboard, so a job named <script>…</script> stays text.

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.setAttribute("class", v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** An HTML element: h("button", {class: "x", onclick: fn}, "text", child, …). */
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element, same calling convention. */
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

// ---------------------------------------------------------------- building blocks

export function section(id, title, ...children) {
  return h("section", { class: "card", "aria-labelledby": `${id}-h` }, h("h2", { id: `${id}-h` }, title), children);
}

export function stat(label, value, extra) {
  return h("div", { class: "stat" }, h("div", { class: "stat-label" }, label), h("div", { class: "stat-value" }, value), extra ? h("div", { class: "stat-extra" }, extra) : null);
}

export function table(caption, columns, rows, cls = "") {
  return h("table", { class: cls },
    h("caption", { class: "visually-hidden" }, caption),
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows));
}

// ---------------------------------------------------------------- formatting

export function ms(value) {
  if (value === null || value === undefined) return "–";
  if (value < 1000) return `${Math.round(value)} ms`;
  if (value < 60000) return `${+(value / 1000).toFixed(value < 10000 ? 2 : 1)} s`;
  if (value < 3600000) return `${+(value / 60000).toFixed(1)} min`;
  return `${+(value / 3600000).toFixed(1)} h`;
}

export function count(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

// "1 job", "2 jobs": a count and its noun in the right number
export function counted(n, one, many) {
  return `${count(n)} ${Number(n) === 1 ? one : (many || one + "s")}`;
}

/** "2026-11-30 01:02:03Z" from an RFC 3339 instant; "–" for none. */
export function when(iso) {
  if (!iso) return "–";
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function relative(iso, now = Date.now()) {
  if (!iso) return "";
  const d = Date.parse(iso) - now;
  const a = Math.abs(d);
  const text = a < 1000 ? "now" : a < 60000 ? `${Math.round(a / 1000)} s` : a < 3600000 ? `${Math.round(a / 60000)} min` : a < 172800000 ? `${Math.round(a / 3600000)} h` : `${Math.round(a / 86400000)} d`;
  if (text === "now") return "now";
  return d > 0 ? `in ${text}` : `${text} ago`;
}

/** A <time> element: the short UTC form, the relative form beside it. */
export function time(iso) {
  if (!iso) return h("span", { class: "muted" }, "–");
  return h("time", { datetime: iso, title: iso }, when(iso), " ", h("span", { class: "muted" }, relative(iso)));
}

export function badge(status) {
  return h("span", { class: `badge s-${String(status || "").toLowerCase()}` }, status || "–");
}

export function targetText(target) {
  if (!target || typeof target !== "object") return "";
  if (target.command !== undefined) return target.command;
  if (target.http) return `${target.http.method || "GET"} ${target.http.url}`;
  if (target.python) return target.python;
  if (target.queue) return `queue ${target.queue}`;
  const [kind] = Object.keys(target);
  return kind ? `${kind}: ${JSON.stringify(target[kind])}` : "";
}

// ---------------------------------------------------------------- charts (inline SVG)

function niceCeil(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

/**
 * A line chart of series over evenly spaced points; null values leave gaps.
 * series: [{name, cls, values}], labels: x-axis labels [{at: index, text}], fmt: y formatter.
 * The SVG is an image to assistive technology, named by ``title`` and described by ``desc``;
 * callers put the numbers in a table as well.
 */
export function lineChart({ id, title, desc, series, labels, fmt, width = 720, height = 220 }) {
  const pad = { l: 64, r: 12, t: 12, b: 28 };
  const n = Math.max(1, ...series.map((x) => x.values.length));
  const top = niceCeil(Math.max(0, ...series.flatMap((x) => x.values.filter((v) => v !== null))));
  const X = (i) => pad.l + (n === 1 ? 0 : (i * (width - pad.l - pad.r)) / (n - 1));
  const Y = (v) => pad.t + (height - pad.t - pad.b) * (1 - v / top);
  const titleId = `${id}-title`;
  const descId = `${id}-desc`;
  const grid = [0, 0.5, 1].map((f) => [
    s("line", { x1: pad.l, x2: width - pad.r, y1: Y(top * f), y2: Y(top * f), class: "grid" }),
    s("text", { x: pad.l - 6, y: Y(top * f) + 4, class: "axis", "text-anchor": "end" }, fmt(top * f)),
  ]);
  const xLabels = labels.map((l) => s("text", { x: X(l.at), y: height - 8, class: "axis", "text-anchor": l.anchor || "middle" }, l.text));
  const lines = series.map((x) => {
    let d = "";
    let pen = false;
    x.values.forEach((v, i) => {
      if (v === null || v === undefined) { pen = false; return; }
      d += `${pen ? "L" : "M"}${X(i).toFixed(1)},${Y(v).toFixed(1)}`;
      pen = true;
    });
    const dots = x.values.map((v, i) => (v === null || v === undefined ? null
      : s("circle", { cx: X(i).toFixed(1), cy: Y(v).toFixed(1), r: 2, class: `dot ${x.cls}` })));
    return s("g", { class: `series ${x.cls}` }, s("path", { d, class: `line ${x.cls}` }), dots);
  });
  return s("svg", { id, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": `${titleId} ${descId}`, class: "chart" },
    s("title", { id: titleId }, title), s("desc", { id: descId }, desc), grid, xLabels, lines);
}

/** Vertical bars over evenly spaced points (the herd preview's ticks per minute). */
export function barChart({ id, title, desc, values, labels, fmt, highlight, width = 720, height = 200 }) {
  const pad = { l: 64, r: 12, t: 12, b: 28 };
  const n = Math.max(1, values.length);
  const top = niceCeil(Math.max(0, ...values));
  const slot = (width - pad.l - pad.r) / n;
  const Y = (v) => pad.t + (height - pad.t - pad.b) * (1 - v / top);
  const bars = values.map((v, i) => s("rect", {
    x: (pad.l + i * slot + slot * 0.1).toFixed(1), y: Y(v).toFixed(1),
    width: Math.max(1, slot * 0.8).toFixed(1), height: Math.max(0, Y(0) - Y(v)).toFixed(1),
    class: highlight && highlight(v, i) ? "bar hot" : "bar",
  }, s("title", {}, `${labels.full ? labels.full(i) : i}: ${fmt(v)}`)));
  const grid = [0, 0.5, 1].map((f) => [
    s("line", { x1: pad.l, x2: width - pad.r, y1: Y(top * f), y2: Y(top * f), class: "grid" }),
    s("text", { x: pad.l - 6, y: Y(top * f) + 4, class: "axis", "text-anchor": "end" }, fmt(top * f)),
  ]);
  const xLabels = (labels.ticks || []).map((l) => s("text", { x: pad.l + l.at * slot + slot / 2, y: height - 8, class: "axis", "text-anchor": "middle" }, l.text));
  return s("svg", { id, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": `${id}-title ${id}-desc`, class: "chart" },
    s("title", { id: `${id}-title` }, title), s("desc", { id: `${id}-desc` }, desc), grid, xLabels, bars);
}

/** Horizontal bars with their numbers (queue depth by tier). */
export function hbars({ id, title, rows, width = 360 }) {
  const rowH = 28;
  const labelW = 80;
  const top = Math.max(1, ...rows.map((r) => r.value));
  const height = rows.length * rowH + 8;
  return s("svg", { id, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": `${id}-title`, class: "chart hbars" },
    s("title", { id: `${id}-title` }, `${title}: ${rows.map((r) => `${r.label} ${r.value}`).join(", ")}`),
    rows.map((r, i) => s("g", { class: `tier t-${r.label}` },
      s("text", { x: 0, y: i * rowH + 20, class: "axis" }, r.label),
      s("rect", { x: labelW, y: i * rowH + 6, height: 18, width: Math.max(r.value ? 2 : 0, ((width - labelW - 70) * r.value) / top).toFixed(1), class: "bar" }),
      s("text", { x: width - 4, y: i * rowH + 20, class: "axis value", "text-anchor": "end" }, count(r.value)))));
}

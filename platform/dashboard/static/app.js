// Gray dashboard: one page, hash routes, data from /api, charts drawn as SVG.
// Everything a run or trial names goes into the DOM as text, never as markup.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const COLORS = ["#2f6fde", "#e4572e", "#17a673", "#9b59b6", "#f0a202", "#00a6c8", "#d6336c", "#6c757d", "#8c564b", "#1f3b73"];
const state = { info: null, version: -1 };

// el builds an element: el("td", {class: "num"}, "text", child...).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}
function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (typeof v !== "number") return typeof v === "string" ? v : JSON.stringify(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3);
  return Number.isInteger(v) ? String(v) : v.toPrecision(5).replace(/\.?0+$/, "");
}
function fmtTime(s) {
  if (s === null || s === undefined) return "–";
  if (s < 60) return s.toFixed(1) + " s";
  if (s < 3600) return (s / 60).toFixed(1) + " min";
  return (s / 3600).toFixed(2) + " h";
}
function problem(msg) {
  const p = document.getElementById("problem");
  if (!msg) { p.hidden = true; p.textContent = ""; return; }
  p.hidden = false; p.textContent = msg;
}
async function api(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  if (!r.ok) throw new Error((await r.text()).trim() || r.statusText);
  const d = await r.json();
  if (d && typeof d.version === "number") state.version = d.version; // what the page shows
  return d;
}
function params() {
  const h = location.hash.replace(/^#\/?/, "");
  const [page, q] = h.split("?");
  return { page: page || "runs", q: new URLSearchParams(q || "") };
}
function regex(input) {
  const v = input.value.trim();
  if (!v) { input.classList.remove("bad"); return null; }
  try { const re = new RegExp(v); input.classList.remove("bad"); return re; } catch (e) { input.classList.add("bad"); return null; }
}
function status(s) { return el("span", { class: "st st-" + s }, s); }

// sortable makes a table's headers sort its rows: numbers as numbers,
// blanks last. rows() gives [{cells: [...td], key: [values]}].
function sortableTable(cols, rows, onSort, sort) {
  const tr = el("tr");
  cols.forEach((c, i) => {
    const th = el("th", { "data-col": i, class: sort && sort.col === i ? (sort.desc ? "desc" : "asc") : null }, c);
    th.addEventListener("click", () => onSort(i));
    tr.append(th);
  });
  const body = el("tbody");
  const sorted = rows.slice();
  if (sort && sort.col !== null) {
    sorted.sort((a, b) => {
      const x = a.key[sort.col], y = b.key[sort.col];
      const bx = x === null || x === undefined || x === "", by = y === null || y === undefined || y === "";
      if (bx || by) return bx === by ? 0 : bx ? 1 : -1;
      const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
      return sort.desc ? -c : c;
    });
  }
  for (const r of sorted) body.append(r.tr);
  return el("div", { class: "tablewrap" }, el("table", {}, el("thead", {}, tr), body));
}

// ---------- runs ----------
const runsView = {
  sel: new Set(), sort: { col: null, desc: false }, filter: "",
  async render(main) {
    const d = await api("/api/runs");
    this.data = d;
    main.replaceChildren();
    const input = el("input", { type: "text", id: "runfilter", placeholder: "regex on run names", size: 40, value: this.filter });
    const compare = el("button", { id: "compare" }, "Chart selected");
    compare.addEventListener("click", () => {
      if (this.sel.size) location.hash = "#/chart?" + [...this.sel].map(id => "run=" + encodeURIComponent(id)).join("&");
    });
    const all = el("button", {}, "Chart shown");
    all.addEventListener("click", () => {
      const ids = this.shown.map(r => r.id).slice(0, 1000);
      if (ids.length) location.hash = "#/chart?" + ids.map(id => "run=" + encodeURIComponent(id)).join("&");
    });
    const holder = el("div", { id: "runtable" });
    main.append(el("h2", {}, "Runs"), el("div", { class: "bar" }, el("label", {}, "Filter"), input, compare, all,
      el("span", { class: "muted", id: "runcount" })), holder);
    input.addEventListener("input", () => { this.filter = input.value; this.table(holder, input); });
    this.table(holder, input);
  },
  table(holder, input) {
    const re = regex(input);
    const metric = this.data.metric;
    this.shown = this.data.runs.filter(r => !re || re.test(r.id));
    document.getElementById("runcount").textContent = this.shown.length + " of " + this.data.runs.length + " runs";
    const rows = this.shown.map(r => {
      const box = el("input", { type: "checkbox", checked: this.sel.has(r.id) });
      box.addEventListener("change", () => { box.checked ? this.sel.add(r.id) : this.sel.delete(r.id); });
      const link = el("a", { href: "#/chart?run=" + encodeURIComponent(r.id), class: "runname" }, r.name);
      const tr = el("tr", { "data-run": r.id }, el("td", {}, box), el("td", {}, r.exp), el("td", {}, link,
        r.bad ? el("span", { class: "muted", title: "malformed lines in result.json were skipped" }, " (" + r.bad + " bad lines)") : null),
        el("td", {}, status(r.status)), el("td", { class: "num" }, fmt(r.iter)), el("td", { class: "num" }, fmt(r.timesteps)),
        el("td", { class: "num metric" }, fmt(r.metric)), el("td", { class: "num" }, fmtTime(r.elapsed)));
      return { tr, key: [null, r.exp, r.name, r.status, r.iter, r.timesteps, r.metric, r.elapsed] };
    });
    const onSort = i => { this.sort = { col: i, desc: this.sort.col === i ? !this.sort.desc : false }; this.table(holder, input); };
    holder.replaceChildren(sortableTable(["", "Experiment", "Run", "Status", "Iter", "Timesteps", metric, "Elapsed"], rows, onSort, this.sort));
  },
};

// ---------- charts ----------
// smooth is TensorBoard's smoothing: an exponential moving average whose
// start-up bias towards zero is divided out.
function smooth(ys, w) {
  if (!(w > 0)) return ys.slice();
  let last = 0, n = 0;
  return ys.map(y => {
    if (y === null || !Number.isFinite(y)) return y;
    last = last * w + (1 - w) * y; n++;
    return last / (1 - Math.pow(w, n));
  });
}
function ticks(lo, hi, n, log) {
  if (log) {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)) && out.length < 30; e++) { const v = Math.pow(10, e); if (v >= lo && v <= hi) out.push(v); }
    return out.length ? out : [lo, hi];
  }
  if (hi === lo) return [lo];
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= step0);
  if (!(step > 0) || !Number.isFinite(step)) return [lo, hi];
  const out = [], first = Math.ceil(lo / step);
  for (let i = 0; i <= n + 2; i++) {
    const v = (first + i) * step;
    if (v > hi + step * 1e-9) break;
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  }
  return out.length ? out : [lo, hi];
}
function drawChart(box, key, runs, o) {
  const W = 420, H = 220, L = 52, R = 10, T = 8, B = 26;
  const lines = [];
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  runs.forEach((r, ri) => {
    const ys = r.y[key];
    if (!ys || !r.x) return;
    const sm = smooth(ys, o.smooth);
    const pts = [];
    for (let i = 0; i < ys.length; i++) {
      const x = r.x[i], y = ys[i];
      if (x === null || y === null || !Number.isFinite(x) || !Number.isFinite(y) || (o.log && y <= 0)) continue;
      pts.push([x, y, sm[i]]);
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y, sm[i]); y1 = Math.max(y1, y, sm[i]);
    }
    lines.push({ run: r, ri, pts });
  });
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, "data-key": key });
  box.append(s);
  if (!lines.some(l => l.pts.length)) { s.append(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "muted" }, "no finite values")); return; }
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { const d = Math.abs(y0) * 0.1 || 1; y0 = o.log ? y0 / 2 : y0 - d; y1 = o.log ? y1 * 2 : y1 + d; }
  const fy = o.log ? v => Math.log10(v) : v => v;
  const sx = v => L + (v - x0) / (x1 - x0) * (W - L - R);
  const sy = v => T + (1 - (fy(v) - fy(y0)) / (fy(y1) - fy(y0))) * (H - T - B);
  const grid = svg("g", { class: "grid" }), axis = svg("g", { class: "axis" });
  for (const v of ticks(y0, y1, 4, o.log)) {
    grid.append(svg("line", { x1: L, x2: W - R, y1: sy(v), y2: sy(v) }));
    axis.append(svg("text", { x: L - 4, y: sy(v) + 3, "text-anchor": "end" }, fmt(v)));
  }
  for (const v of ticks(x0, x1, 4, false)) axis.append(svg("text", { x: sx(v), y: H - 8, "text-anchor": "middle" }, fmt(v)));
  axis.append(svg("path", { d: `M${L},${T}V${H - B}H${W - R}`, fill: "none" }));
  s.append(grid, axis);
  for (const l of lines) {
    if (!l.pts.length) continue;
    const c = COLORS[l.ri % COLORS.length];
    const path = i => "M" + l.pts.map(p => sx(p[0]).toFixed(1) + "," + sy(p[i]).toFixed(1)).join("L");
    if (o.smooth > 0) s.append(svg("path", { d: path(1), fill: "none", stroke: c, "stroke-opacity": 0.25, "stroke-width": 1 }));
    s.append(svg("path", { d: path(o.smooth > 0 ? 2 : 1), fill: "none", stroke: c, "stroke-width": 1.5, class: "series",
      "data-run": l.run.id, "data-points": l.pts.length, "data-last": l.pts[l.pts.length - 1][1] }));
  }
  // Hover: the nearest result of each run to the pointer's x.
  const cursor = svg("line", { y1: T, y2: H - B, stroke: "#999", "stroke-dasharray": "3,3", visibility: "hidden" });
  s.append(cursor);
  const tip = el("div", { class: "tip", hidden: true });
  box.append(tip);
  s.addEventListener("mousemove", ev => {
    const rect = s.getBoundingClientRect();
    const px = (ev.clientX - rect.left) / rect.width * W;
    const xv = x0 + (px - L) / (W - L - R) * (x1 - x0);
    const out = [o.xname + " ≈ " + fmt(xv)];
    for (const l of lines) {
      if (!l.pts.length) continue;
      let best = l.pts[0];
      for (const p of l.pts) if (Math.abs(p[0] - xv) < Math.abs(best[0] - xv)) best = p;
      out.push(l.run.name.slice(0, 40) + ": " + fmt(best[1]) + (o.smooth > 0 ? " (smoothed " + fmt(best[2]) + ")" : "") + " @ " + fmt(best[0]));
    }
    cursor.setAttribute("x1", px); cursor.setAttribute("x2", px); cursor.setAttribute("visibility", "visible");
    tip.textContent = out.join("\n"); tip.hidden = false;
    tip.style.left = Math.min(ev.clientX - box.getBoundingClientRect().left + 12, box.clientWidth - 200) + "px";
    tip.style.top = "28px";
  });
  s.addEventListener("mouseleave", () => { tip.hidden = true; cursor.setAttribute("visibility", "hidden"); });
}

const chartView = {
  opts: { x: "training_iteration", log: false, smooth: 0.6, tags: "" },
  async render(main, q, refresh) {
    const ids = q.getAll("run");
    if (!ids.length) { main.replaceChildren(el("p", {}, "No run chosen: pick runs on the Runs page.")); return; }
    const many = ids.length > 20;
    let keysRE = this.opts.tags;
    if (!keysRE && many) keysRE = "^" + state.info.metric.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "$";
    const qs = ids.map(id => "run=" + encodeURIComponent(id)).join("&") + "&x=" + encodeURIComponent(this.opts.x) + (keysRE ? "&keys=" + encodeURIComponent(keysRE) : "");
    const d = await api("/api/series?" + qs);
    if (!refresh || !this.built || this.built !== location.hash) {
      this.built = location.hash;
      main.replaceChildren();
      const title = ids.length === 1 ? d.runs[0].name : ids.length + " runs";
      main.append(el("h2", { id: "charttitle" }, title));
      if (ids.length === 1) {
        const info = await api("/api/run?id=" + encodeURIComponent(ids[0]));
        main.append(el("div", { class: "box" },
          el("div", {}, "Status ", el("span", { id: "runstatus" }, status(info.status)), " · ", el("span", { id: "runresults" }, info.results + " results"), info.bad ? " · " + info.bad + " malformed lines skipped" : "",
            " · ", el("a", { href: "/api/csv?run=" + encodeURIComponent(ids[0]), download: "", id: "csv" }, "download CSV")),
          el("div", { class: "muted" }, info.dir),
          el("details", {}, el("summary", {}, "config.json"), el("pre", { id: "config" }, info.config || "(none)"))));
      }
      const xs = el("select", { id: "xaxis" }, ...[["training_iteration", "iteration"], ["timesteps_total", "timesteps"], ["wall", "wall time (s)"], ["time_total_s", "training time (s)"]]
        .map(([v, t]) => el("option", { value: v, selected: v === this.opts.x }, t)));
      const ys = el("select", { id: "yscale" }, el("option", { value: "linear" }, "linear"), el("option", { value: "log", selected: this.opts.log }, "log"));
      const sm = el("input", { type: "range", id: "smooth", min: 0, max: 0.99, step: 0.01, value: this.opts.smooth });
      const smv = el("span", { id: "smoothval" }, String(this.opts.smooth));
      const tags = el("input", { type: "text", id: "tagfilter", placeholder: many ? "regex on names (default: the metric)" : "regex on names", value: this.opts.tags, size: 30 });
      xs.addEventListener("change", () => { this.opts.x = xs.value; this.render(main, q, true); });
      ys.addEventListener("change", () => { this.opts.log = ys.value === "log"; this.draw(); });
      sm.addEventListener("input", () => { this.opts.smooth = Number(sm.value); smv.textContent = sm.value; this.draw(); });
      tags.addEventListener("change", () => { this.opts.tags = tags.value; if (regex(tags) || !tags.value) this.render(main, q, true); });
      main.append(el("div", { class: "bar" }, el("label", {}, "x"), xs, el("label", {}, "y"), ys, el("label", {}, "smoothing"), sm, smv,
        el("label", {}, "names"), tags), el("div", { class: "legend", id: "legend" }), el("div", { class: "charts", id: "charts" }));
    }
    if (refresh && ids.length === 1 && document.getElementById("runstatus")) {
      const info = await api("/api/run?id=" + encodeURIComponent(ids[0]));
      document.getElementById("runstatus").replaceChildren(status(info.status));
      document.getElementById("runresults").textContent = info.results + " results";
    }
    this.data = d;
    const legend = document.getElementById("legend");
    legend.replaceChildren(...(d.runs.length > 1 && d.runs.length <= 30 ? d.runs.map((r, i) => el("span", {}, el("i", { style: null }), r.name)) : []));
    [...legend.querySelectorAll("i")].forEach((i, k) => i.setAttribute("class", "c" + (k % COLORS.length)));
    this.draw();
  },
  draw() {
    const d = this.data, holder = document.getElementById("charts");
    if (!d || !holder) return;
    const re = this.opts.tags ? (() => { try { return new RegExp(this.opts.tags); } catch (e) { return null; } })() : null;
    const keys = new Set();
    for (const r of d.runs) for (const k of Object.keys(r.y)) if (!re || re.test(k)) keys.add(k);
    const skip = new Set(["timestamp", "pid", "time_since_restore", "timesteps_since_restore", "iterations_since_restore"]);
    holder.replaceChildren();
    const xname = document.getElementById("xaxis").selectedOptions[0].textContent;
    for (const k of [...keys].filter(k => !skip.has(k)).sort()) {
      const box = el("div", { class: "chart", "data-key": k }, el("div", { class: "title", title: k }, k));
      holder.append(box);
      drawChart(box, k, d.runs, { log: this.opts.log, smooth: this.opts.smooth, xname });
    }
    if (!keys.size) holder.append(el("p", { class: "muted" }, "No scalar matches."));
  },
};

// ---------- sweeps ----------
const sweepsView = {
  async render(main) {
    const d = await api("/api/sweeps");
    const rows = d.sweeps.map(s => {
      const tr = el("tr", {}, el("td", {}, el("a", { href: "#/sweep?id=" + encodeURIComponent(s.id) }, s.name)),
        el("td", { class: "num" }, s.trials), el("td", {}, Object.entries(s.states).map(([k, v]) => k + " " + v).join(", ")),
        el("td", {}, s.metric + (s.mode ? " (" + s.mode + ")" : "")), el("td", {}, s.scheduler), el("td", {}, s.searcher));
      return { tr, key: [s.name, s.trials, "", s.metric, s.scheduler, s.searcher] };
    });
    main.replaceChildren(el("h2", {}, "Sweeps"), d.sweeps.length ? sortableTable(["Sweep", "Trials", "States", "Metric", "Scheduler", "Searcher"], rows, () => {}, null)
      : el("p", { class: "muted" }, "No sweep (experiment.json) under the log dir."));
  },
};

const sweepView = {
  sort: { col: null, desc: false }, filter: "",
  async render(main, q, refresh) {
    const d = await api("/api/sweep?id=" + encodeURIComponent(q.get("id")));
    this.d = d;
    if (!refresh || this.built !== location.hash) {
      this.built = location.hash;
      const input = el("input", { type: "text", id: "trialfilter", placeholder: "regex on any cell", size: 30, value: this.filter });
      input.addEventListener("input", () => { this.filter = input.value; this.table(); });
      main.replaceChildren(el("h2", {}, "Sweep ", d.name),
        el("div", { class: "muted" }, `${d.trials.length} trials · metric ${d.metric} ${d.mode ? "(" + d.mode + ")" : ""} · scheduler ${d.scheduler || "–"} · searcher ${d.searcher || "–"}` + (d.ended ? " · ended: " + d.ended : "")),
        el("div", { class: "box", id: "best" }), el("h3", {}, "Hyperparameters against the metric"), el("div", { class: "pc", id: "pc" }),
        el("h3", {}, "Trials"), el("div", { class: "bar" }, el("label", {}, "Filter"), input, el("span", { class: "muted", id: "trialcount" })),
        el("div", { id: "trials" }));
    }
    const best = document.getElementById("best");
    if (d.best) {
      const cp = d.best.checkpoint;
      best.replaceChildren(el("div", {}, "Best trial ", el("strong", { id: "besttrial" }, d.best.id), ": " + d.metric + " = ", el("strong", {}, fmt(d.best.metric)),
        " · " + Object.entries(d.best.params).map(([k, v]) => k + "=" + fmt(v)).join(", ")),
        cp ? el("div", {}, "checkpoint ", el("code", { id: "bestcheckpoint" }, cp)) : el("div", { class: "muted" }, "no checkpoint kept"),
        cp ? el("div", { class: "muted" }, "evaluate it: ", el("code", {}, "train rollout --checkpoint '" + cp.replace(/'/g, "'\\''") + "' --episodes 10")) : null);
    } else best.replaceChildren(el("span", { class: "muted" }, "No trial has reported " + d.metric + " yet."));
    this.table();
    parallel(document.getElementById("pc"), d);
  },
  table() {
    const d = this.d, input = document.getElementById("trialfilter");
    const re = regex(input);
    const cols = ["Trial", "Status", ...d.params, d.metric, "Iter", "Why stopped", "Checkpoint"];
    const rows = [];
    for (const t of d.trials) {
      const vals = [t.id, t.status, ...d.params.map(p => t.params[p]), t.metric, t.iter, t.reason, t.checkpoint];
      if (re && !vals.some(v => re.test(fmt(v)))) continue;
      const tr = el("tr", { "data-trial": t.id },
        el("td", {}, t.run ? el("a", { href: "#/chart?run=" + encodeURIComponent(t.run) }, t.id) : t.id), el("td", {}, status(t.status)),
        ...d.params.map(p => el("td", { class: typeof t.params[p] === "number" ? "num" : null }, fmt(t.params[p]))),
        el("td", { class: "num metric" }, fmt(t.metric)), el("td", { class: "num" }, fmt(t.iter)), el("td", {}, t.reason), el("td", {}, el("code", {}, t.checkpoint)));
      rows.push({ tr, key: vals.map(v => v === undefined ? null : v) });
    }
    document.getElementById("trialcount").textContent = rows.length + " of " + d.trials.length;
    const onSort = i => { this.sort = { col: i, desc: this.sort.col === i ? !this.sort.desc : false }; this.table(); };
    document.getElementById("trials").replaceChildren(sortableTable(cols, rows, onSort, this.sort));
  },
};

// parallel draws parallel coordinates: one axis per searched
// hyperparameter and one for the metric, a line per trial coloured by it.
function parallel(holder, d) {
  holder.replaceChildren();
  const dims = [...d.params, d.metric];
  const get = (t, k) => k === d.metric ? t.metric : t.params[k];
  const trials = d.trials.filter(t => t.metric !== null);
  if (!trials.length || dims.length < 2) { holder.append(el("p", { class: "muted" }, "Not enough reported results yet.")); return; }
  const W = Math.max(160 * dims.length, 1100), H = 300, T = 28, B = 20;
  const scales = dims.map(k => {
    const vs = trials.map(t => get(t, k));
    if (vs.every(v => typeof v === "number")) {
      let lo = Math.min(...vs), hi = Math.max(...vs);
      const log = lo > 0 && hi / lo > 100;
      if (lo === hi) { lo -= 1; hi += 1; }
      const f = log ? Math.log10 : v => v;
      return { k, pos: v => T + (1 - (f(v) - f(lo)) / (f(hi) - f(lo))) * (H - T - B), lo, hi };
    }
    const cats = [...new Set(vs.map(v => fmt(v)))].sort();
    return { k, pos: v => T + (cats.length === 1 ? 0.5 : cats.indexOf(fmt(v)) / (cats.length - 1)) * (H - T - B), cats };
  });
  const xs = i => 40 + i * (W - 80) / (dims.length - 1);
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, id: "pcsvg" });
  const ms = trials.map(t => t.metric), mlo = Math.min(...ms), mhi = Math.max(...ms);
  for (const t of trials) {
    let f = mhi === mlo ? 1 : (t.metric - mlo) / (mhi - mlo);
    if (d.mode === "min") f = 1 - f;
    const c = `hsl(${Math.round(220 - 200 * f)},70%,45%)`;
    const p = svg("path", { class: "tr", stroke: c, d: "M" + scales.map((sc, i) => xs(i).toFixed(1) + "," + sc.pos(get(t, sc.k)).toFixed(1)).join("L") },
      svg("title", {}, t.id + ": " + d.metric + " " + fmt(t.metric)));
    s.append(p);
  }
  scales.forEach((sc, i) => {
    const g = svg("g", { class: "axis" }, svg("line", { x1: xs(i), x2: xs(i), y1: T, y2: H - B }),
      svg("text", { x: xs(i), y: 12, "text-anchor": "middle" }, sc.k));
    if (sc.cats) sc.cats.forEach(c => g.append(svg("text", { x: xs(i) + 4, y: sc.pos(c) + 3 }, c)));
    else g.append(svg("text", { x: xs(i) + 4, y: T + 4 }, fmt(sc.hi)), svg("text", { x: xs(i) + 4, y: H - B }, fmt(sc.lo)));
    s.append(g);
  });
  holder.append(s);
}

// ---------- timeline ----------
const timelineView = {
  async render(main, q, refresh) {
    const d = await api("/api/timeline");
    const evs = d.events;
    if (!refresh || this.built !== location.hash) {
      this.built = location.hash;
      this.view = null;
      const zin = el("button", { id: "zoomin" }, "Zoom in"), zout = el("button", {}, "Zoom out"), reset = el("button", {}, "Reset");
      zin.addEventListener("click", () => this.zoom(0.5)); zout.addEventListener("click", () => this.zoom(2)); reset.addEventListener("click", () => { this.view = null; this.draw(); });
      main.replaceChildren(el("h2", {}, "Task timeline"), el("div", { class: "bar" }, zin, zout, reset,
        el("a", { href: "/api/timeline/trace", download: "trace.json" }, "Chrome trace (trace.json)"), el("span", { class: "muted", id: "tlcount" })),
        el("div", { class: "tl", id: "tl" }), el("div", { class: "legend", id: "tllegend" }));
    }
    this.evs = evs;
    this.draw();
  },
  zoom(f, at) {
    const v = this.view; if (!v) return;
    const mid = at === undefined ? (v[0] + v[1]) / 2 : at;
    this.view = [mid - (mid - v[0]) * f, mid + (v[1] - mid) * f];
    this.draw();
  },
  draw() {
    const holder = document.getElementById("tl"); if (!holder) return;
    const evs = this.evs || [];
    const workers = [...new Set(evs.map(e => e.worker))].sort((a, b) => a - b);
    document.getElementById("tlcount").textContent = evs.length + " tasks on " + workers.length + " workers";
    holder.replaceChildren();
    if (!evs.length) { holder.append(el("p", { class: "muted" }, "No task has finished yet.")); return; }
    const t0 = Math.min(...evs.map(e => e.start)), t1 = Math.max(...evs.map(e => e.end));
    if (!this.view) this.view = [t0, Math.max(t1, t0 + 1)];
    const [v0, v1] = this.view;
    const W = 1000, L = 80, RH = 22, H = workers.length * RH + 24;
    const sx = t => L + (t - v0) / (v1 - v0) * (W - L - 10);
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, id: "tlsvg" });
    const funcs = [...new Set(evs.map(e => e.func))].sort();
    s.append(svg("defs", {}, svg("clipPath", { id: "tlclip" }, svg("rect", { x: L, y: 0, width: W - L, height: H }))));
    const bars = svg("g", { "clip-path": "url(#tlclip)" });
    s.append(bars);
    workers.forEach((w, i) => {
      s.append(svg("text", { x: 4, y: i * RH + 15, class: "worker", "data-worker": w }, "worker " + w),
        svg("line", { x1: L, x2: W, y1: i * RH + RH, y2: i * RH + RH, stroke: "#eef0f4" }));
    });
    for (const e of evs) {
      if (e.end < v0 || e.start > v1) continue;
      const x = sx(e.start), w = Math.max(sx(e.end) - x, 0.8), row = workers.indexOf(e.worker);
      bars.append(svg("rect", { x: x.toFixed(2), y: row * RH + 3, width: w.toFixed(2), height: RH - 6, fill: COLORS[funcs.indexOf(e.func) % COLORS.length], class: "task", "data-worker": e.worker },
        svg("title", {}, `${e.func}\ntask ${e.id}\nworker ${e.worker}\n${((e.end - e.start) / 1000).toFixed(3)} ms`)));
    }
    for (const t of ticks(v0, v1, 6, false)) s.append(svg("text", { x: sx(t), y: H - 4, "text-anchor": "middle", class: "muted" }, ((t - t0) / 1000).toFixed(1) + " ms"));
    s.addEventListener("wheel", ev => {
      ev.preventDefault();
      const r = s.getBoundingClientRect(), px = (ev.clientX - r.left) / r.width * W;
      this.zoom(ev.deltaY < 0 ? 0.8 : 1.25, v0 + (px - L) / (W - L - 10) * (v1 - v0));
    }, { passive: false });
    let drag = null;
    s.addEventListener("mousedown", ev => { drag = { x: ev.clientX, v: this.view.slice() }; });
    s.addEventListener("mouseup", () => { drag = null; });
    s.addEventListener("mousemove", ev => {
      if (!drag) return;
      const r = s.getBoundingClientRect(), dt = (ev.clientX - drag.x) / r.width * W / (W - L - 10) * (drag.v[1] - drag.v[0]);
      this.view = [drag.v[0] - dt, drag.v[1] - dt];
      const keep = drag; this.draw(); drag = keep;
    });
    holder.append(s);
    document.getElementById("tllegend").replaceChildren(...funcs.slice(0, 30).map((f, i) => el("span", {}, el("i", { class: "c" + (i % COLORS.length) }), f)));
  },
};

// ---------- runtime ----------
const runtimeView = {
  taskPage: 0, actorPage: 0, errorPage: 0, taskState: "", limit: 50,
  async render(main, q, refresh) {
    const [sum, tasks, actors, errors] = await Promise.all([api("/api/runtime/summary"),
      api(`/api/runtime/tasks?offset=${this.taskPage * this.limit}&limit=${this.limit}&state=${encodeURIComponent(this.taskState)}`),
      api(`/api/runtime/actors?offset=${this.actorPage * this.limit}&limit=${this.limit}`),
      api(`/api/runtime/errors?offset=${this.errorPage * 20}&limit=20`)]);
    if (!refresh || this.built !== location.hash) {
      this.built = location.hash;
      const search = el("input", { type: "text", id: "idsearch", placeholder: "task or actor ID (prefix), object ID", size: 36 });
      const go = el("button", {}, "Find");
      const found = el("div", { id: "found" });
      const find = async () => {
        try {
          const r = await api("/api/runtime/search?id=" + encodeURIComponent(search.value));
          found.replaceChildren(table(["Kind", "ID", "Function / type", "State", "Worker"], [
            ...(r.tasks || []).map(t => ["task", t.id, t.func, t.state, t.worker]), ...(r.actors || []).map(a => ["actor", a.id, a.type, a.state, a.worker]),
            ...(r.object ? [["object", r.object.id, "created by task " + r.object.creator, r.object.failed ? "error: " + r.object.failed : r.object.size + " bytes" + (r.object.shared ? " (shared memory)" : ""), "–"]] : [])]));
        } catch (e) { found.replaceChildren(el("span", { class: "muted" }, e.message)); }
      };
      go.addEventListener("click", find); search.addEventListener("keydown", e => { if (e.key === "Enter") find(); });
      main.replaceChildren(el("h2", {}, "Runtime"), el("div", { class: "bar" }, search, go), found, el("div", { id: "rt" }));
    }
    const rt = document.getElementById("rt");
    const pager = (name, d, size) => {
      const prev = el("button", {}, "‹ prev"), next = el("button", {}, "next ›");
      prev.disabled = d.offset === 0; next.disabled = d.offset + size >= d.total;
      prev.addEventListener("click", () => { this[name]--; this.render(document.getElementById("main"), q, true); });
      next.addEventListener("click", () => { this[name]++; this.render(document.getElementById("main"), q, true); });
      return el("div", { class: "pager" }, prev, " ", `${d.total ? d.offset + 1 : 0}–${Math.min(d.offset + size, d.total)} of ${d.total} `, next);
    };
    const stateSel = el("select", { id: "taskstate" }, ...["", "RUNNING", "SENT", "QUEUED"].map(s => el("option", { value: s, selected: s === this.taskState }, s || "all states")));
    stateSel.addEventListener("change", () => { this.taskState = stateSel.value; this.taskPage = 0; this.render(document.getElementById("main"), q, true); });
    rt.replaceChildren(
      el("h3", {}, "Nodes"), table(["Node", "CPU used / total", "GPU used / total", "Objects", "Object store"], (sum.nodes || []).map(n => [n.name,
        fmt(n.total.CPU - n.available.CPU) + " / " + fmt(n.total.CPU), fmt(n.total.GPU - n.available.GPU) + " / " + fmt(n.total.GPU), n.objects,
        (n.store_used / 1048576).toFixed(1) + " / " + (n.store_capacity / 1048576).toFixed(0) + " MiB"])),
      el("h3", {}, `Workers (${sum.workers ? sum.workers.length : 0})`), table(["ID", "Name", "PID", "Actor", "Running", "Queued"], (sum.workers || []).map(w => [w.id, w.name, w.pid, w.actor, w.running || "idle", w.queued])),
      el("h3", {}, `Live tasks by function (${sum.tasks})`), table(["Function", "State", "Count"], (sum.task_groups || []).map(g => [g.func, g.state, g.count])),
      el("h3", {}, "Tasks"), el("div", { class: "bar" }, stateSel), table(["ID", "Function", "State", "Worker"], (tasks.items || []).map(t => [t.id, t.func, t.state, t.worker < 0 ? "–" : t.worker])), pager("taskPage", tasks, this.limit),
      el("h3", {}, `Actors (${sum.actors}: ${Object.entries(sum.actor_states).map(([k, v]) => k + " " + v).join(", ")})`),
      table(["ID", "Type", "State", "Worker", "Pending calls"], (actors.items || []).map(a => [a.id, a.type, a.state, a.worker < 0 ? "–" : a.worker, a.pending])), pager("actorPage", actors, this.limit),
      el("h3", {}, `Errors (${sum.errors})`), el("div", { id: "errors" }, ...(errors.items || []).map(e => el("div", { class: "box" },
        el("div", {}, el("strong", {}, e.function), " on " + e.worker + ": " + e.message), e.stack ? el("details", {}, el("summary", {}, "remote stack"), el("pre", {}, e.stack)) : null))),
      pager("errorPage", errors, 20));
  },
};
function table(cols, rows) {
  return el("div", { class: "tablewrap" }, el("table", {}, el("thead", {}, el("tr", {}, ...cols.map(c => el("th", {}, c)))),
    el("tbody", {}, ...rows.map(r => el("tr", {}, ...r.map(v => el("td", { class: typeof v === "number" ? "num" : null }, fmt(v))))))));
}

// ---------- routing and updates ----------
const views = { runs: runsView, chart: chartView, sweeps: sweepsView, sweep: sweepView, timeline: timelineView, runtime: runtimeView };
let busy = false, again = false;
async function show(refresh) {
  if (busy) { again = true; return; }
  busy = true;
  const { page, q } = params();
  const view = views[page] || runsView;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("on", a.dataset.page === page || (page === "chart" && a.dataset.page === "runs") || (page === "sweep" && a.dataset.page === "sweeps"));
  try {
    await view.render(document.getElementById("main"), q, refresh);
    problem(null);
    document.body.dataset.ready = page;
  } catch (e) {
    problem(e.message);
  } finally {
    busy = false;
    if (again) { again = false; show(true); }
  }
}
function live() {
  // Log-dir pages refresh on the server's update events; runtime pages poll.
  const src = new EventSource("/api/events");
  const dot = document.getElementById("live");
  src.addEventListener("update", ev => {
    dot.classList.remove("off");
    if (Number(ev.data) === state.version) return; // already shown
    const p = params().page;
    if (p !== "timeline" && p !== "runtime") show(true);
  });
  src.onerror = () => dot.classList.add("off");
  setInterval(() => { const p = params().page; if (p === "timeline" || p === "runtime") show(true); }, 2000);
}
window.addEventListener("hashchange", () => show(false));
window.addEventListener("DOMContentLoaded", async () => {
  try {
    state.info = await api("/api/info");
    document.getElementById("logdir").textContent = state.info.logdir;
    for (const a of document.querySelectorAll("#nav a.rt")) a.hidden = !state.info.runtime;
  } catch (e) { problem(e.message); return; }
  await show(false);
  live();
});

// Gray dashboard: scalar charts of one or more runs.
"use strict";

// smooth is TensorBoard's smoothing: an exponential moving average whose
// start-up bias towards zero is divided out. A constant series is left as
// it is (as TensorBoard does): the average would leave rounding noise that
// an auto-scaled axis blows up to full height.
function smooth(ys, w) {
  if (!(w > 0)) return ys.slice();
  let first = null, constant = true;
  for (const y of ys) {
    if (y === null || !Number.isFinite(y)) continue;
    if (first === null) first = y; else if (y !== first) { constant = false; break; }
  }
  if (constant) return ys.slice();
  let last = 0, n = 0;
  return ys.map(y => {
    if (y === null || !Number.isFinite(y)) return y;
    last = last * w + (1 - w) * y; n++;
    return last / (1 - Math.pow(w, n));
  });
}

// quantile of sorted values, q in [0, 1].
function quantile(sorted, q) {
  const i = (sorted.length - 1) * q, lo = Math.floor(i), hi = Math.ceil(i);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
}

let clipSeq = 0;

// drawChart draws key's series of every run into box. o: {log, smooth,
// xname, outliers, zoom: [x0, x1] or null, onZoom(range or null)}.
function drawChart(box, key, runs, o) {
  const W = 420, H = 240, L = 58, R = 10, T = 8, B = 36;
  const lines = [];
  let x0 = Infinity, x1 = -Infinity;
  const yvals = [];
  let shown = 0, total = 0;
  runs.forEach((r, ri) => {
    const s = r.series && r.series[key];
    if (!s) return;
    shown += s.x.length; total += s.n;
    const sm = smooth(s.y, o.smooth);
    const pts = [];
    for (let i = 0; i < s.x.length; i++) {
      const x = s.x[i], y = s.y[i];
      if (x === null || y === null || (o.log && y <= 0)) continue;
      if (o.zoom && (x < o.zoom[0] || x > o.zoom[1])) continue;
      pts.push([x, y, sm[i]]);
      x0 = Math.min(x0, x); x1 = Math.max(x1, x);
      yvals.push(y); if (o.smooth > 0) yvals.push(sm[i]);
    }
    lines.push({ run: r, ri, pts });
  });
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, "data-key": key });
  box.append(s);
  if (!yvals.length) { s.append(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "muted" }, "no finite values")); return; }
  if (o.zoom) { x0 = o.zoom[0]; x1 = o.zoom[1]; }
  yvals.sort((a, b) => a - b);
  let y0 = yvals[0], y1 = yvals[yvals.length - 1];
  if (o.outliers && yvals.length > 20) { y0 = quantile(yvals, 0.05); y1 = quantile(yvals, 0.95); }
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  // Equal up to rounding is equal: such a series gets a flat line in the
  // middle, and ticks that differ.
  if (y1 - y0 <= 1e-9 * Math.max(Math.abs(y0), Math.abs(y1))) {
    const mid = (y0 + y1) / 2, d = Math.abs(mid) * 0.1 || 1;
    y0 = o.log ? mid / 2 : mid - d; y1 = o.log ? mid * 2 : mid + d;
  }
  const fy = o.log ? v => Math.log10(v) : v => v;
  const sx = v => L + (v - x0) / (x1 - x0) * (W - L - R);
  const sy = v => T + (1 - (fy(v) - fy(y0)) / (fy(y1) - fy(y0))) * (H - T - B);
  const grid = svg("g", { class: "grid" }), axis = svg("g", { class: "axis" });
  for (const v of ticks(y0, y1, 4, o.log)) {
    grid.append(svg("line", { x1: L, x2: W - R, y1: sy(v), y2: sy(v) }));
    axis.append(svg("text", { x: L - 4, y: sy(v) + 3, "text-anchor": "end", class: "ytick" }, fmt(v)));
  }
  for (const v of ticks(x0, x1, 4, false)) axis.append(svg("text", { x: sx(v), y: H - B + 13, "text-anchor": "middle", class: "xtick" }, fmt(v)));
  axis.append(svg("path", { d: `M${L},${T}V${H - B}H${W - R}`, fill: "none" }));
  const ylabel = key.slice(key.lastIndexOf("/") + 1) + (o.log ? " (log)" : "");
  axis.append(svg("text", { x: L + (W - L - R) / 2, y: H - 3, "text-anchor": "middle", class: "xtitle" }, o.xname),
    svg("text", { x: -(T + (H - T - B) / 2), y: 11, transform: "rotate(-90)", "text-anchor": "middle", class: "ytitle" }, ylabel.length > 28 ? ylabel.slice(0, 27) + "…" : ylabel));
  const clip = "clip" + (++clipSeq);
  s.append(svg("defs", {}, svg("clipPath", { id: clip }, svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B }))), grid, axis);
  const plot = svg("g", { "clip-path": `url(#${clip})` });
  s.append(plot);
  for (const l of lines) {
    if (!l.pts.length) continue;
    const c = COLORS[l.ri % COLORS.length];
    const path = i => "M" + l.pts.map(p => sx(p[0]).toFixed(1) + "," + sy(p[i]).toFixed(1)).join("L");
    if (o.smooth > 0) plot.append(svg("path", { d: path(1), fill: "none", stroke: c, "stroke-opacity": 0.25, "stroke-width": 1 }));
    plot.append(svg("path", { d: path(o.smooth > 0 ? 2 : 1), fill: "none", stroke: c, "stroke-width": 1.5, class: "series",
      "data-run": l.run.id, "data-points": l.pts.length, "data-last": l.pts[l.pts.length - 1][1] }));
  }
  if (shown < total) box.append(el("div", { class: "muted ds" }, `${shown} of ${total} points (downsampled; full data: "full resolution" or the CSV)`));
  // Hover: the nearest result of each run to the pointer's x. Drag: zoom
  // to the dragged x range; shift-drag: pan; double-click: reset.
  const cursor = svg("line", { y1: T, y2: H - B, stroke: "#999", "stroke-dasharray": "3,3", visibility: "hidden" });
  const band = svg("rect", { y: T, height: H - T - B, class: "band", visibility: "hidden" });
  s.append(cursor, band);
  const tip = el("div", { class: "tip", hidden: true });
  box.append(tip);
  const toX = ev => { const rect = s.getBoundingClientRect(); return (ev.clientX - rect.left) / rect.width * W; };
  const value = px => x0 + (px - L) / (W - L - R) * (x1 - x0);
  let drag = null;
  s.addEventListener("mousedown", ev => { ev.preventDefault(); drag = { px: toX(ev), pan: ev.shiftKey }; });
  s.addEventListener("mouseup", ev => {
    if (!drag) return;
    const px = toX(ev), d = drag; drag = null; band.setAttribute("visibility", "hidden");
    if (Math.abs(px - d.px) < 4) return;
    if (d.pan) { const dv = value(d.px) - value(px); o.onZoom([x0 + dv, x1 + dv]); } else o.onZoom([value(Math.min(px, d.px)), value(Math.max(px, d.px))]);
  });
  s.addEventListener("dblclick", () => o.onZoom(null));
  s.addEventListener("mousemove", ev => {
    const px = toX(ev);
    if (drag && !drag.pan) { band.setAttribute("x", Math.min(px, drag.px)); band.setAttribute("width", Math.abs(px - drag.px)); band.setAttribute("visibility", "visible"); }
    const xv = value(px);
    const out = [o.xname + " ≈ " + fmt(xv)];
    for (const l of lines) {
      if (!l.pts.length) continue;
      let best = l.pts[0];
      for (const p of l.pts) if (Math.abs(p[0] - xv) < Math.abs(best[0] - xv)) best = p;
      out.push(l.run.name.slice(0, 40) + ": " + fmt(best[1]) + (o.smooth > 0 ? " (smoothed " + fmt(best[2]) + ")" : "") + " @ " + fmt(best[0]));
    }
    cursor.setAttribute("x1", px); cursor.setAttribute("x2", px); cursor.setAttribute("visibility", "visible");
    tip.textContent = out.join("\n"); tip.hidden = false;
    // Keep the tip inside the chart: right of the pointer when it fits,
    // else left of it, never past the chart's edges (a tip hanging out
    // of the right-hand chart would widen the page).
    const at = ev.clientX - box.getBoundingClientRect().left, tw = tip.offsetWidth, bw = box.clientWidth;
    tip.style.left = Math.max(0, at + 12 + tw <= bw ? at + 12 : Math.min(at - 12 - tw, bw - tw)) + "px";
    tip.style.top = "28px";
  });
  s.addEventListener("mouseleave", () => { tip.hidden = true; drag = null; band.setAttribute("visibility", "hidden"); cursor.setAttribute("visibility", "hidden"); });
}

// groupOf is a key's tag group: what comes before its last "/".
function groupOf(k) { const i = k.lastIndexOf("/"); return i < 0 ? "" : k.slice(0, i + 1); }

// chartsOpen is how many charts the page draws before it leaves further
// groups closed and long groups behind a "show more" button.
const chartsOpen = 60;

const chartView = {
  opts: { x: "training_iteration", log: false, smooth: 0.6, tags: "", outliers: false, full: false },
  zoom: {}, groups: {}, more: {},
  async render(main, q, refresh) {
    const ids = q.getAll("run");
    if (!ids.length) { main.replaceChildren(el("p", {}, "No run chosen: pick runs on the Runs page.")); return; }
    const many = ids.length > 20;
    let keysRE = this.opts.tags;
    if (!keysRE && many) keysRE = "^" + (await state.infoReady).metric.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "$";
    const qs = ids.map(id => "run=" + encodeURIComponent(id)).join("&") + "&x=" + encodeURIComponent(this.opts.x) +
      (keysRE ? "&keys=" + encodeURIComponent(keysRE) : "") + (this.opts.full ? "&points=0" : "");
    const d = await api("/api/series?" + qs);
    this.opts.x = d.x; // runs of other tools are drawn over their steps
    if (!refresh || !this.built || this.built !== location.hash) {
      if (this.built !== location.hash) { this.zoom = {}; this.groups = {}; this.more = {}; }
      this.built = location.hash;
      main.replaceChildren();
      main.append(el("h2", { id: "charttitle" }, ids.length === 1 ? d.runs[0].name : ids.length + " runs"));
      if (ids.length === 1) main.append(await this.runBox(ids[0]));
      main.append(this.controls(main, q), el("div", { id: "cut" }), el("div", { class: "legend", id: "legend" }), el("div", { id: "charts" }));
    }
    if (refresh && ids.length === 1 && document.getElementById("runstatus")) {
      const info = await api("/api/run?id=" + encodeURIComponent(ids[0]));
      document.getElementById("runstatus").replaceChildren(status(info.status));
      document.getElementById("runresults").textContent = info.results + " results";
    }
    this.data = d;
    const notes = [];
    if (d.cut) notes.push(`${d.cut.series} series left out: ${d.cut.reason}.`);
    for (const r of d.runs) if (r.keys_dropped) notes.push(`${r.name}: ${r.keys_dropped} result keys past the first 1000 are not kept (download the CSV for every key).`);
    document.getElementById("cut").replaceChildren(...notes.map(n => el("p", { class: "note" }, n)));
    const legend = document.getElementById("legend");
    legend.replaceChildren(...(d.runs.length > 1 && d.runs.length <= 30 ? d.runs.map((r, i) => el("span", {}, el("i", { class: "c" + (i % COLORS.length) }), r.name)) : []));
    this.draw();
  },
  async runBox(id) {
    const info = await api("/api/run?id=" + encodeURIComponent(id));
    return el("div", { class: "box" },
      el("div", {}, "Status ", el("span", { id: "runstatus" }, status(info.status)), " · ", el("span", { id: "runresults" }, info.results + " results"), info.bad ? " · " + info.bad + " malformed lines skipped" : "",
        " · ", el("a", { href: "/api/csv?run=" + encodeURIComponent(id), download: "", id: "csv" }, "download CSV"),
        " · ", el("a", { href: "#/logs?run=" + encodeURIComponent(id), id: "logslink" }, "logs")),
      el("div", { class: "muted" }, info.dir),
      el("details", {}, el("summary", {}, "config.json"), el("pre", { id: "config" }, info.config || "(none)")));
  },
  controls(main, q) {
    const xs = el("select", { id: "xaxis" }, ...[["training_iteration", "iteration"], ["step", "step (event files)"], ["timesteps_total", "timesteps"], ["wall", "wall time (s)"], ["time_total_s", "training time (s)"]]
      .map(([v, t]) => el("option", { value: v, selected: v === this.opts.x }, t)));
    const ys = el("select", { id: "yscale" }, el("option", { value: "linear" }, "linear"), el("option", { value: "log", selected: this.opts.log }, "log"));
    const sm = el("input", { type: "range", id: "smooth", min: 0, max: 0.99, step: 0.01, value: this.opts.smooth });
    const smv = el("span", { id: "smoothval" }, String(this.opts.smooth));
    const tags = el("input", { type: "text", id: "tagfilter", placeholder: q.getAll("run").length > 20 ? "regex on names (default: the metric)" : "regex on names", value: this.opts.tags, size: 30 });
    const out = el("input", { type: "checkbox", id: "outliers", checked: this.opts.outliers });
    const full = el("input", { type: "checkbox", id: "fullres", checked: this.opts.full });
    const reset = el("button", { id: "resetzoom" }, "Reset zoom");
    xs.addEventListener("change", () => { this.opts.x = xs.value; this.zoom = {}; this.render(main, q, true); });
    ys.addEventListener("change", () => { this.opts.log = ys.value === "log"; this.draw(); });
    sm.addEventListener("input", () => { this.opts.smooth = Number(sm.value); smv.textContent = sm.value; this.draw(); });
    tags.addEventListener("change", () => { this.opts.tags = tags.value; if (regex(tags) || !tags.value) this.render(main, q, true); });
    out.addEventListener("change", () => { this.opts.outliers = out.checked; this.draw(); });
    full.addEventListener("change", () => { this.opts.full = full.checked; this.render(main, q, true); });
    reset.addEventListener("click", () => { this.zoom = {}; this.draw(); });
    return el("div", { class: "bar" }, el("label", {}, "x"), xs, el("label", {}, "y"), ys, el("label", {}, "smoothing"), sm, smv,
      el("label", {}, "names"), tags, el("label", {}, out, " ignore outliers"), el("label", {}, full, " full resolution"), reset,
      el("span", { class: "muted" }, "drag: zoom · shift-drag: pan · double-click: reset"));
  },
  // draw lays the charts out by tag group; closed groups and the charts
  // past chartsOpen are drawn only when asked for.
  draw() {
    const d = this.data, holder = document.getElementById("charts");
    if (!d || !holder) return;
    const re = this.opts.tags ? (() => { try { return new RegExp(this.opts.tags); } catch (e) { return null; } })() : null;
    const keys = new Set();
    for (const r of d.runs) for (const k of Object.keys(r.series)) if (!re || re.test(k)) keys.add(k);
    const skip = new Set(["timestamp", "pid", "time_since_restore", "timesteps_since_restore", "iterations_since_restore"]);
    const byGroup = new Map();
    for (const k of [...keys].filter(k => !skip.has(k)).sort()) {
      const g = groupOf(k);
      if (!byGroup.has(g)) byGroup.set(g, []);
      byGroup.get(g).push(k);
    }
    const groups = [...byGroup.keys()].sort((a, b) => a === "" ? -1 : b === "" ? 1 : a.localeCompare(b));
    holder.replaceChildren();
    let drawn = 0;
    for (const g of groups) {
      const gkeys = byGroup.get(g);
      const open = this.groups[g] !== undefined ? this.groups[g] : drawn < chartsOpen;
      const det = el("details", { class: "group", "data-group": g, open }, el("summary", {}, (g || "(top level)") + " · " + gkeys.length));
      const grid = el("div", { class: "charts" });
      det.append(grid);
      holder.append(det);
      const fill = () => {
        grid.replaceChildren();
        const limit = this.more[g] ? gkeys.length : Math.max(chartsOpen - drawn, 24);
        for (const k of gkeys.slice(0, limit)) this.drawOne(grid, k);
        if (gkeys.length > limit) {
          const more = el("button", { class: "more" }, `show ${gkeys.length - limit} more charts`);
          more.addEventListener("click", () => { this.more[g] = true; fill(); });
          grid.append(more);
        }
        return Math.min(limit, gkeys.length);
      };
      if (open) drawn += fill();
      det.addEventListener("toggle", () => { this.groups[g] = det.open; if (det.open && !grid.childElementCount) fill(); });
    }
    if (!keys.size) holder.append(el("p", { class: "muted" }, "No scalar matches."));
  },
  drawOne(grid, k, box) {
    const fresh = el("div", { class: "chart", "data-key": k }, el("div", { class: "title", title: k }, k));
    if (box) box.replaceWith(fresh); else grid.append(fresh);
    const xname = document.getElementById("xaxis").selectedOptions[0].textContent;
    drawChart(fresh, k, this.data.runs, {
      log: this.opts.log, smooth: this.opts.smooth, xname, outliers: this.opts.outliers, zoom: this.zoom[k] || null,
      onZoom: z => { if (z) this.zoom[k] = z; else delete this.zoom[k]; this.drawOne(grid, k, fresh); },
    });
  },
};

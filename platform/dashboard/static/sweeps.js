// Gray dashboard: the Sweeps list, a sweep's trials and its parallel
// coordinates.
"use strict";

const sweepsView = {
  sort: { col: null, desc: false },
  async render(main) {
    const d = await api("/api/sweeps");
    this.d = d;
    main.replaceChildren(el("h2", {}, "Sweeps"), d.sweeps.length ? el("div", { id: "sweeptable" }) : el("p", { class: "muted" }, "No sweep (experiment.json) under the log dir."));
    if (d.sweeps.length) this.table();
  },
  table() {
    const rows = this.d.sweeps.map(s => {
      const tr = el("tr", {}, el("td", {}, el("a", { href: "#/sweep?id=" + encodeURIComponent(s.id) }, s.name)),
        el("td", { class: "num" }, s.trials), el("td", {}, Object.entries(s.states).map(([k, v]) => k + " " + v).join(", ")),
        el("td", {}, s.metric + (s.mode ? " (" + s.mode + ")" : "")), el("td", {}, s.scheduler), el("td", {}, s.searcher));
      return { tr, key: [s.name, s.trials, Object.keys(s.states).sort().join(","), s.metric, s.scheduler, s.searcher] };
    });
    const onSort = i => { this.sort = { col: i, desc: this.sort.col === i ? !this.sort.desc : false }; this.table(); };
    sortableTable(document.getElementById("sweeptable"), ["Sweep", "Trials", "States", "Metric", "Scheduler", "Searcher"], rows, onSort, this.sort);
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
      const make = () => el("tr", { "data-trial": t.id },
        el("td", {}, t.run ? el("a", { href: "#/chart?run=" + encodeURIComponent(t.run) }, t.id) : t.id), el("td", {}, status(t.status)),
        ...d.params.map(p => el("td", { class: typeof t.params[p] === "number" ? "num" : null }, fmt(t.params[p]))),
        el("td", { class: "num metric" }, fmt(t.metric)), el("td", { class: "num" }, fmt(t.iter)), el("td", {}, t.reason), el("td", {}, el("code", {}, t.checkpoint)));
      rows.push({ make, key: vals.map(v => v === undefined ? null : v) });
    }
    document.getElementById("trialcount").textContent = rows.length + " of " + d.trials.length;
    const onSort = i => { this.sort = { col: i, desc: this.sort.col === i ? !this.sort.desc : false }; this.table(); };
    sortableTable(document.getElementById("trials"), cols, rows, onSort, this.sort);
  },
};

// parallel draws parallel coordinates: one axis per searched
// hyperparameter and one for the metric, a line per trial coloured by it.
// A numeric axis spanning more than two decades is logarithmic, and its
// title says so. Labels of the first and last axes lean inwards so that
// none is cut at the edges.
function parallel(holder, d) {
  holder.replaceChildren();
  const dims = [...d.params, d.metric];
  const get = (t, k) => k === d.metric ? t.metric : t.params[k];
  const trials = d.trials.filter(t => t.metric !== null);
  if (!trials.length || dims.length < 2) { holder.append(el("p", { class: "muted" }, "Not enough reported results yet.")); return; }
  const W = Math.max(160 * dims.length, 1100), H = 300, T = 28, B = 20, M = 60;
  const scales = dims.map(k => {
    const vs = trials.map(t => get(t, k));
    if (vs.every(v => typeof v === "number")) {
      let lo = Math.min(...vs), hi = Math.max(...vs);
      const log = lo > 0 && hi / lo > 100;
      if (lo === hi) { lo -= 1; hi += 1; }
      const f = log ? Math.log10 : v => v;
      return { k, pos: v => T + (1 - (f(v) - f(lo)) / (f(hi) - f(lo))) * (H - T - B), lo, hi, log };
    }
    const cats = [...new Set(vs.map(v => fmt(v)))].sort();
    return { k, pos: v => T + (cats.length === 1 ? 0.5 : cats.indexOf(fmt(v)) / (cats.length - 1)) * (H - T - B), cats };
  });
  const xs = i => M + i * (W - 2 * M) / (dims.length - 1);
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
    const last = i === scales.length - 1, first = i === 0;
    const anchor = first ? "start" : last ? "end" : "middle", lx = last ? xs(i) - 4 : xs(i) + 4, la = last ? "end" : "start";
    const g = svg("g", { class: "axis", "data-dim": sc.k }, svg("line", { x1: xs(i), x2: xs(i), y1: T, y2: H - B }),
      svg("text", { x: first ? xs(i) - 8 : last ? xs(i) + 8 : xs(i), y: 12, "text-anchor": anchor, class: "dimtitle" }, sc.k + (sc.log ? " (log scale)" : "")));
    if (sc.cats) sc.cats.forEach(c => g.append(svg("text", { x: lx, y: sc.pos(c) + 3, "text-anchor": la }, c)));
    else g.append(svg("text", { x: lx, y: T + 4, "text-anchor": la }, fmt(sc.hi)), svg("text", { x: lx, y: H - B, "text-anchor": la }, fmt(sc.lo)));
    s.append(g);
  });
  holder.append(s);
}


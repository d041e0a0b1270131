// Gray dashboard: the task timeline of a live session.
"use strict";

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
    // Ticks at round milliseconds since the first task (not round
    // microseconds since the epoch, which read 2720.1 ms).
    for (const ms of ticks((v0 - t0) / 1000, (v1 - t0) / 1000, 6, false)) {
      s.append(svg("text", { x: sx(t0 + ms * 1000), y: H - 4, "text-anchor": "middle", class: "muted tltick" }, fmt(ms) + " ms"));
    }
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


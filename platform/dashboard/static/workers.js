// Gray dashboard: what the runtime page does with one worker or actor —
// its live log, its goroutine dump, ending an actor — and the nodes' CPU
// and memory over the last hour.
"use strict";

const workerTools = {
  // logLink leads to the worker's log page.
  logLink(w) { return el("a", { href: "#/workerlogs?worker=" + encodeURIComponent(w.id), class: "wlog" }, "log"); },
  // stacksButton shows the worker's goroutine dump in #stacks.
  stacksButton(w) {
    const b = el("button", { class: "stacks", "data-worker": w.id }, "stacks");
    b.addEventListener("click", async () => {
      const out = document.getElementById("stacks");
      out.dataset.state = "loading";
      out.replaceChildren(el("span", { class: "muted" }, `asking worker ${w.id} for its goroutines…`));
      const r = await fetch("/api/runtime/stacks?worker=" + encodeURIComponent(w.id), { credentials: "same-origin" });
      const text = await r.text();
      out.replaceChildren(el("h3", {}, `Goroutines of worker ${w.id} (pid ${w.pid})`, " ", el("button", { onclick: () => { out.replaceChildren(); out.dataset.state = ""; } }, "close")),
        r.ok ? el("pre", { class: "log", id: "stackstext" }, text) : el("p", { class: "note" }, text.trim()));
      out.dataset.state = r.ok ? "shown" : "failed";
    });
    return b;
  },
  // killButton ends an actor, after the user confirms, with a POST (the
  // server takes changes from its own page only).
  killButton(a) {
    if (a.state === "DEAD") return "–";
    const b = el("button", { class: "kill", "data-actor": a.id }, "kill");
    // The first click asks; the page's refreshes keep the question.
    const ask = () => { b.classList.add("confirm"); b.textContent = "kill: sure?"; };
    if (this.confirming === a.id) ask();
    b.addEventListener("click", async () => {
      if (this.confirming !== a.id) { this.confirming = a.id; ask(); return; }
      this.confirming = null;
      b.disabled = true;
      const r = await fetch("/api/runtime/kill?actor=" + encodeURIComponent(a.id), { method: "POST", credentials: "same-origin" });
      const note = document.getElementById("killnote");
      note.textContent = r.ok ? `actor ${a.id} (${a.type}) killed` : (await r.text()).trim();
      note.dataset.state = r.ok ? "killed" : "failed";
    });
    return b;
  },
  // history draws each node's CPU busy share and memory in use (both in
  // percent) over the samples of the last hour.
  history(h) {
    const box = el("div", { id: "history" });
    for (const n of h.nodes || []) {
      const s = n.samples;
      const W = 640, H = 160, L = 40, R = 10, T = 10, B = 24;
      const g = svg("svg", { width: W, height: H, class: "hist", "data-node": n.name, "data-samples": s.length });
      if (s.length >= 1) {
        const t1 = s[s.length - 1].t, t0 = Math.min(s[0].t, t1 - 60000);
        const x = t => L + (W - L - R) * (t - t0) / Math.max(t1 - t0, 1), y = v => T + (H - T - B) * (1 - v / 100);
        for (const v of [0, 50, 100]) g.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }), svg("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end", class: "ytick" }, v + "%"));
        g.append(svg("text", { x: L, y: H - 6, class: "xtick" }, `${((t1 - t0) / 60000).toFixed(1)} min ago`), svg("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "xtick" }, "now"));
        // One sample is drawn as a short dash ending now, not an invisible point.
        const line = (f, cls) => svg("path", { class: cls, d: s.map((p, i) => (i ? "L" : "M") + x(p.t).toFixed(1) + "," + y(f(p)).toFixed(1)).join("") + (s.length === 1 ? "h-4" : "") });
        g.append(line(p => 100 * p.cpu, "cpu"), line(p => 100 * p.mem_used / p.mem_total, "mem"));
      }
      const last = s[s.length - 1];
      box.append(el("div", { class: "box" }, el("strong", {}, n.name), " · ", el("span", { class: "cpu" }, "CPU busy"), " and ", el("span", { class: "mem" }, "memory in use"),
        last ? ` · now ${(100 * last.cpu).toFixed(0)}% CPU, ${(last.mem_used / 1073741824).toFixed(1)} of ${(last.mem_total / 1073741824).toFixed(1)} GiB` : " · first sample pending", el("div", {}, g)));
    }
    if (!(h.nodes || []).length) box.append(el("p", { class: "muted" }, "No samples yet (one every " + (h.every_ms / 1000) + " s)."));
    return box;
  },
};

// workerLogsView is one worker's log files (standard output and error),
// the end of the chosen one, refreshed with the runtime page.
const workerLogsView = {
  file: "",
  async render(main, q, refresh) {
    const id = q.get("worker") || "";
    const d = await api("/api/runtime/workerlogs");
    const files = d.files.filter(f => f.name.startsWith("worker-" + id + "."));
    if (!refresh || this.built !== location.hash) {
      this.built = location.hash;
      if (!files.some(f => f.name === this.file)) this.file = (files.find(f => f.name.endsWith(".err")) || files[0] || { name: "" }).name;
      main.replaceChildren(el("h2", {}, "Log of worker " + id, " ", el("a", { href: "#/runtime" }, "(runtime)")),
        el("div", { class: "bar" }, el("label", {}, "file"), el("span", { id: "wlogfiles" }), el("span", { class: "muted", id: "wloginfo" })),
        el("pre", { id: "wlogtext", class: "log" }));
    }
    const list = document.getElementById("wlogfiles");
    if (!files.length) {
      list.replaceChildren(el("span", { class: "muted" }, d.dir ? "this worker has no log files" : "workers write to the driver's output here (no worker log folder)"));
      return;
    }
    const sel = el("select", { id: "wlogfile" }, ...files.map(f => el("option", { value: f.name, selected: f.name === this.file }, `${f.name} (${(f.size / 1024).toFixed(1)} KiB)`)));
    sel.addEventListener("change", () => { this.file = sel.value; this.show(); });
    list.replaceChildren(sel);
    await this.show();
  },
  async show() {
    const pre = document.getElementById("wlogtext");
    if (!pre || !this.file) return;
    const r = await fetch("/api/runtime/workerlog?file=" + encodeURIComponent(this.file), { credentials: "same-origin" });
    const text = await r.text();
    if (!r.ok) { problem(text.trim()); return; }
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    if (pre.textContent !== text) pre.textContent = text;
    const size = Number(r.headers.get("X-Log-Size")), off = Number(r.headers.get("X-Log-Offset"));
    document.getElementById("wloginfo").textContent = off > 0 ? `last ${fmt(size - off)} of ${fmt(size)} bytes` : `${fmt(size)} bytes`;
    pre.dataset.size = size;
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  },
};

// Gray dashboard: the cluster view (gray dashboard --cluster): every
// driver's nodes, jobs, actors and tasks as the cluster's Redis holds them,
// the same rows as `gray list`, with a filter box. Loaded after app.js: it
// adds itself to app.js's views and polls while shown.
"use strict";

const clusterView = {
  kind: "tasks", filter: "",
  columns: {
    nodes: ["node_id", "ip", "is_head", "state", "resources_total", "object_store_used_bytes", "workers", "death_reason"],
    jobs: ["job_id", "driver", "state", "tasks_submitted", "tasks_finished", "tasks_failed", "started_at"],
    actors: ["actor_id", "job_id", "class_name", "node_id", "state", "restarts", "death_reason"],
    tasks: ["task_id", "job_id", "name", "type", "node_id", "state", "error_message", "submitted_at"],
  },
  async render(main, q, refresh) {
    if (q.get("kind")) this.kind = q.get("kind");
    if (!refresh || this.built !== location.hash || !document.getElementById("cl-rows")) {
      this.built = location.hash;
      const kinds = el("div", { class: "bar", id: "cl-kinds" }, ...["nodes", "jobs", "actors", "tasks"].map(k => {
        const b = el("button", { "data-kind": k, class: k === this.kind ? "on" : null }, k);
        // Each kind has its own keys: a new kind starts unfiltered.
        b.addEventListener("click", () => { this.kind = k; this.filter = ""; this.built = null; this.render(main, new URLSearchParams(), false); });
        return b;
      }));
      const box = el("input", { type: "text", id: "cl-filter", size: 48, value: this.filter,
        placeholder: "key=value … (e.g. state=failed job_id=…), as gray list --filter" });
      box.addEventListener("keydown", e => { if (e.key === "Enter") { this.filter = box.value; this.render(main, new URLSearchParams(), true); } });
      const apply = el("button", { id: "cl-apply" }, "Filter");
      apply.addEventListener("click", () => { this.filter = box.value; this.render(main, new URLSearchParams(), true); });
      main.replaceChildren(el("h2", {}, "Cluster"), kinds, el("div", { class: "bar" }, box, apply),
        el("div", { id: "cl-notes" }), el("div", { id: "cl-rows" }));
    }
    for (const b of document.querySelectorAll("#cl-kinds button")) b.classList.toggle("on", b.dataset.kind === this.kind);
    const qs = this.filter.trim().split(/\s+/).filter(Boolean).map(f => "filter=" + encodeURIComponent(f)).join("&");
    const rows = document.getElementById("cl-rows"), notes = document.getElementById("cl-notes");
    let d;
    try {
      d = await api(`/api/cluster/${this.kind}?limit=500${qs ? "&" + qs : ""}`);
    } catch (e) {
      // A bad filter is the user's to fix, shown beside the box.
      notes.replaceChildren(el("div", { class: "box", id: "cl-error" }, e.message));
      rows.replaceChildren();
      return;
    }
    const cols = this.columns[this.kind];
    const cell = v => v === null || v === undefined || v === "" ? "–" :
      typeof v === "object" ? Object.entries(v).map(([k, x]) => k + "=" + x).join(",") : v;
    notes.replaceChildren(...d.notes.map(n => el("div", { class: "muted" }, n)),
      el("div", { class: "muted", id: "cl-count" }, `${d.rows.length} of ${d.matched} ${this.kind}`));
    rows.replaceChildren(table(cols, d.rows.map(r => cols.map(c => cell(r[c])))));
    if (this.kind === "nodes") {
      // Each node's CPU and memory over the last hour, as its heartbeats
      // left them in the cluster's Redis.
      const h = await api("/api/cluster/history");
      const charts = workerTools.history(h);
      charts.id = "cl-history";
      rows.append(el("h3", {}, "CPU and memory, last hour"), charts);
    }
    rows.dataset.kind = this.kind;
    rows.dataset.count = String(d.rows.length);
  },
};
views.cluster = clusterView;
window.addEventListener("DOMContentLoaded", async () => {
  try {
    const info = await api("/api/cluster/info");
    document.getElementById("nav-cluster").hidden = !info.cluster;
  } catch (e) { /* an older server: no cluster view */ }
  setInterval(() => { if (params().page === "cluster" && !document.activeElement?.matches?.("#cl-filter")) show(true); }, 2000);
});

// Gray dashboard: the runtime page of a live session.
"use strict";

const runtimeView = {
  taskPage: 0, actorPage: 0, errorPage: 0, taskState: "", limit: 50,
  async render(main, q, refresh) {
    const [sum, tasks, actors, errors, hist] = await Promise.all([api("/api/runtime/summary"),
      api(`/api/runtime/tasks?offset=${this.taskPage * this.limit}&limit=${this.limit}&state=${encodeURIComponent(this.taskState)}`),
      api(`/api/runtime/actors?offset=${this.actorPage * this.limit}&limit=${this.limit}`),
      api(`/api/runtime/errors?offset=${this.errorPage * 20}&limit=20`), api("/api/runtime/history")]);
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
      main.replaceChildren(el("h2", {}, "Runtime"), el("div", { class: "bar" }, search, go), found, el("div", { id: "stacks" }), el("p", { id: "killnote", class: "note" }), el("div", { id: "rt" }));
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
        (n.store_used / 1048576).toFixed(1) + " / " + (n.store_capacity / 1048576).toFixed(0) + " MiB"])), workerTools.history(hist),
      el("h3", {}, `Workers (${sum.workers ? sum.workers.length : 0})`), table(["ID", "Name", "PID", "Actor", "Running", "Queued", "Log", "Goroutines"], (sum.workers || []).map(w => [w.id, w.name, w.pid, w.actor, w.running || "idle", w.queued, workerTools.logLink(w), workerTools.stacksButton(w)])),
      el("h3", {}, `Live tasks by function (${sum.tasks})`), table(["Function", "State", "Count"], (sum.task_groups || []).map(g => [g.func, g.state, g.count])),
      el("h3", {}, "Tasks"), el("div", { class: "bar" }, stateSel), table(["ID", "Function", "State", "Worker"], (tasks.items || []).map(t => [t.id, t.func, t.state, t.worker < 0 ? "–" : t.worker])), pager("taskPage", tasks, this.limit),
      el("h3", {}, `Actors (${sum.actors}: ${Object.entries(sum.actor_states).map(([k, v]) => k + " " + v).join(", ")})`),
      table(["ID", "Type", "State", "Worker", "Pending calls", "Direct callers", ""], (actors.items || []).map(a => [a.id, a.type, a.state, a.worker < 0 ? "–" : a.worker, a.pending, a.direct_callers || 0, workerTools.killButton(a)])), pager("actorPage", actors, this.limit),
      el("h3", {}, `Errors (${sum.errors})`), el("div", { id: "errors" }, ...(errors.items || []).map(e => el("div", { class: "box" },
        el("div", {}, el("strong", {}, e.function), " on " + e.worker + ": " + e.message), e.stack ? el("details", {}, el("summary", {}, "remote stack"), el("pre", {}, e.stack)) : null))),
      pager("errorPage", errors, 20));
  },
};

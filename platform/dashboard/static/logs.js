// Gray dashboard: a run's logs folder (one file per worker process).
"use strict";

const logsView = {
  file: "",
  async render(main, q, refresh) {
    const id = q.get("run") || "";
    const d = await api("/api/logs?run=" + encodeURIComponent(id));
    if (!refresh || this.built !== location.hash) {
      this.built = location.hash;
      if (!d.files.some(f => f.name === this.file)) this.file = d.files.length ? d.files[0].name : "";
      main.replaceChildren(el("h2", {}, "Logs of ", el("a", { href: "#/chart?run=" + encodeURIComponent(id) }, id)),
        el("div", { class: "bar" }, el("label", {}, "file"), el("span", { id: "logfiles" }), el("button", { id: "logreload" }, "Reload"),
          el("span", { class: "muted", id: "loginfo" })),
        el("pre", { id: "logtext", class: "log" }));
      document.getElementById("logreload").addEventListener("click", () => this.show(id));
    }
    const list = document.getElementById("logfiles");
    if (!d.files.length) {
      list.replaceChildren(el("span", { class: "muted" }, "this run has no logs/ folder, or it is empty"));
      document.getElementById("logtext").textContent = "";
      return;
    }
    const sel = el("select", { id: "logfile" }, ...d.files.map(f => el("option", { value: f.name, selected: f.name === this.file }, `${f.name} (${(f.size / 1024).toFixed(1)} KiB)`)));
    sel.addEventListener("change", () => { this.file = sel.value; this.show(id); });
    list.replaceChildren(sel);
    await this.show(id);
  },
  // show loads the end of the chosen file, keeping the view at the bottom
  // when it was there (a live tail), else where the reader left it.
  async show(id) {
    const pre = document.getElementById("logtext");
    if (!pre || !this.file) return;
    const r = await fetch("/api/log?run=" + encodeURIComponent(id) + "&file=" + encodeURIComponent(this.file), { credentials: "same-origin" });
    const text = await r.text();
    if (!r.ok) { problem(text.trim()); return; }
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = text;
    const size = Number(r.headers.get("X-Log-Size")), off = Number(r.headers.get("X-Log-Offset"));
    document.getElementById("loginfo").textContent = off > 0 ? `last ${fmt(size - off)} of ${fmt(size)} bytes` : `${fmt(size)} bytes`;
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  },
};

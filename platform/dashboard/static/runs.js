// Gray dashboard: the Runs page.
"use strict";

const runsView = {
  sel: new Set(), sort: { col: null, desc: false }, filter: "",
  async render(main, q, refresh) {
    const d = await api("/api/runs");
    this.data = d;
    const holder = document.getElementById("runtable");
    if (refresh && holder && this.built === location.hash) {
      // A live update: new rows only. The filter box keeps its focus and
      // what is being typed; the table keeps its scroll.
      this.table(holder, document.getElementById("runfilter"));
      return;
    }
    this.built = location.hash;
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
    const table = el("div", { id: "runtable" });
    main.append(el("h2", {}, "Runs"), el("div", { class: "bar" }, el("label", {}, "Filter"), input, compare, all,
      el("span", { class: "muted", id: "runcount" })), table);
    input.addEventListener("input", () => { this.filter = input.value; this.table(table, input); });
    this.table(table, input);
  },
  table(holder, input) {
    const re = regex(input);
    const metric = this.data.metric;
    this.shown = this.data.runs.filter(r => !re || re.test(r.id));
    document.getElementById("runcount").textContent = this.shown.length + " of " + this.data.runs.length + " runs";
    const rows = this.shown.map(r => ({ key: [null, r.exp, r.name, r.status, r.iter, r.timesteps, r.metric, r.elapsed], make: () => {
      const box = el("input", { type: "checkbox", checked: this.sel.has(r.id) });
      box.addEventListener("change", () => { box.checked ? this.sel.add(r.id) : this.sel.delete(r.id); });
      const link = el("a", { href: "#/chart?run=" + encodeURIComponent(r.id), class: "runname" }, r.name);
      return el("tr", { "data-run": r.id }, el("td", {}, box), el("td", {}, r.exp), el("td", {}, link,
        r.bad ? el("span", { class: "muted bad", title: "malformed lines in result.json were skipped" }, " (" + r.bad + " bad lines)") : null),
        el("td", {}, status(r.status)), el("td", { class: "num" }, fmt(r.iter)), el("td", { class: "num" }, fmt(r.timesteps)),
        el("td", { class: "num metric" }, fmt(r.metric)), el("td", { class: "num" }, fmtTime(r.elapsed)));
    } }));
    const onSort = i => { this.sort = { col: i, desc: this.sort.col === i ? !this.sort.desc : false }; this.table(holder, input); };
    sortableTable(holder, ["", "Experiment", "Run", "Status", "Iter", "Timesteps", metric, "Elapsed"], rows, onSort, this.sort);
  },
};

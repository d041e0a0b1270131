// Gray dashboard, shared helpers: DOM building, number formats, the API
// client, tables and axis ticks. Loaded first; the other scripts use these.
// Everything a run or trial names goes into the DOM as text, never as markup.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const COLORS = ["#2f6fde", "#e4572e", "#17a673", "#9b59b6", "#f0a202", "#00a6c8", "#d6336c", "#6c757d", "#8c564b", "#1f3b73"];
const state = { info: null, infoReady: null, version: -1 };

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
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3).replace(/\.?0+e/, "e");
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
async function api(path, init) {
  const r = await fetch(path, Object.assign({ credentials: "same-origin" }, init || {}));
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

// A long table draws what fills its box first, then tableChunk more rows
// each time it is scrolled to within scrollAhead px of its end: laying out
// rows nobody sees took most of a long list's time to its first frame.
const tableChunk = 200, scrollAhead = 300;
// firstRows is how many rows fill a table's box (at most 70% of the
// window's height, app.css) and twice the scroll margin below it, at rows
// of at least 20 px (13 px text, 1.4 line height, 8 px padding).
function firstRows() { return Math.ceil((window.innerHeight * 0.7 + 2 * scrollAhead) / 20); }

// sortableTable puts a table whose headers sort its rows (numbers as
// numbers, blanks last) into holder. rows: [{tr or make(), key: [values]}]
// (make builds the row when it is first drawn). When
// holder already has one, its scroll box is kept, with at least as many
// rows drawn as before, and only the rows change: a live update does not
// move what the user is looking at.
function sortableTable(holder, cols, rows, onSort, sort) {
  const tr = el("tr");
  cols.forEach((c, i) => {
    const th = el("th", { "data-col": i, class: sort && sort.col === i ? (sort.desc ? "desc" : "asc") : null }, c);
    th.addEventListener("click", () => onSort(i));
    tr.append(th);
  });
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
  let wrap = holder.querySelector(":scope > .tablewrap");
  if (!wrap) {
    wrap = el("div", { class: "tablewrap" });
    holder.replaceChildren(wrap);
    wrap.addEventListener("scroll", () => { if (wrap.scrollTop + wrap.clientHeight > wrap.scrollHeight - scrollAhead) wrap.more(tableChunk); });
  }
  const body = el("tbody");
  let shown = 0;
  const note = el("div", { class: "muted more" });
  const more = n => {
    if (shown >= sorted.length) return;
    const next = Math.min(sorted.length, shown + n);
    body.append(...sorted.slice(shown, next).map(r => r.tr || (r.tr = r.make())));
    shown = next;
    note.textContent = shown < sorted.length ? `${shown} of ${sorted.length} rows drawn: scroll for more` : "";
    wrap.shown = shown;
  };
  more(Math.max(wrap.shown || 0, firstRows()));
  wrap.more = more;
  wrap.replaceChildren(el("table", {}, el("thead", {}, tr), body), note);
}
function table(cols, rows) {
  return el("div", { class: "tablewrap" }, el("table", {}, el("thead", {}, el("tr", {}, ...cols.map(c => el("th", {}, c)))),
    el("tbody", {}, ...rows.map(r => el("tr", {}, ...r.map(v => v instanceof Node ? el("td", {}, v) : el("td", { class: typeof v === "number" ? "num" : null }, fmt(v))))))));
}

// niceStep is the round step (1, 2 or 5 times a power of ten) that cuts
// [lo, hi] into about n parts.
function niceStep(lo, hi, n) {
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  return [1, 2, 5, 10].map(m => m * mag).find(s => s >= step0 * (1 - 1e-9));
}
// ticks picks axis labels: round numbers on a linear axis; on a log axis
// the powers of ten, or 1, 2 and 5 times them when the range spans less
// than a few decades (18–466 gets 20, 50, 100, 200).
function ticks(lo, hi, n, log) {
  if (log) {
    const out = [], e0 = Math.floor(Math.log10(lo)), e1 = Math.ceil(Math.log10(hi));
    for (const ms of e1 - e0 > 3 ? [[1]] : [[1, 2, 5], [1, 2, 3, 5, 7]]) {
      out.length = 0;
      for (let e = e0; e <= e1 && out.length < 30; e++) for (const m of ms) { const v = m * Math.pow(10, e); if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v); }
      if (out.length >= 3) break;
    }
    return out.length >= 2 ? out : ticks(lo, hi, n, false);
  }
  if (hi === lo) return [lo];
  const step = niceStep(lo, hi, n);
  if (!(step > 0) || !Number.isFinite(step)) return [lo, hi];
  const out = [], first = Math.ceil(lo / step - 1e-9);
  for (let i = 0; i <= n + 2; i++) {
    const v = (first + i) * step;
    if (v > hi + step * 1e-9) break;
    out.push(Math.abs(v) < step * 1e-9 ? 0 : Number(v.toPrecision(12)));
  }
  return out.length ? out : [lo, hi];
}

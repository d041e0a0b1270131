// Gray dashboard: routing between pages and live updates. Loaded last.
"use strict";

const views = { runs: runsView, chart: chartView, sweeps: sweepsView, sweep: sweepView, logs: logsView, timeline: timelineView, runtime: runtimeView, workerlogs: workerLogsView };
let busy = false, again = false;
async function show(refresh) {
  if (busy) { again = true; return; }
  busy = true;
  const { page, q } = params();
  const view = views[page] || runsView;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("on", a.dataset.page === page || ((page === "chart" || page === "logs") && a.dataset.page === "runs") || (page === "sweep" && a.dataset.page === "sweeps") || (page === "workerlogs" && a.dataset.page === "runtime"));
  try {
    await view.render(document.getElementById("main"), q, refresh);
    problem(null);
    // The markers tests and scripts wait on: the page drawn, and the
    // data version it shows.
    document.body.dataset.ready = page;
    document.body.dataset.version = state.version;
    // When the page was first drawn, by its own clock (ms from navigation):
    // the benchmarks read it.
    if (!window.grayFirstDrawn) window.grayFirstDrawn = performance.now();
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
    if (p !== "timeline" && p !== "runtime" && p !== "workerlogs") show(true);
  });
  src.onerror = () => dot.classList.add("off");
  setInterval(() => { const p = params().page; if (p === "timeline" || p === "runtime" || p === "workerlogs") show(true); }, 2000);
}
window.addEventListener("hashchange", () => show(false));
window.addEventListener("DOMContentLoaded", async () => {
  // The page asks for its own data beside the server's info, not after
  // it: views that need the info await state.infoReady.
  state.infoReady = api("/api/info");
  const drawn = show(false);
  try {
    state.info = await state.infoReady;
    document.getElementById("logdir").textContent = state.info.logdir;
    for (const a of document.querySelectorAll("#nav a.rt")) a.hidden = !state.info.runtime;
  } catch (e) { problem(e.message); return; }
  await drawn;
  live();
});

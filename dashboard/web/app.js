// The dashboard page: polls the JSON API (README, "Dashboard") and draws a
// selected trial's learning curves with uPlot (common.js). No build step.
"use strict";

// The token: from ?token= (then kept for this tab and dropped from the
// address bar), else from an earlier visit of this tab.
const token = (() => {
  const params = new URLSearchParams(location.search);
  const given = params.get("token");
  if (given) {
    sessionStorage.setItem("dtrain-token", given);
    history.replaceState(null, "", location.pathname);
    return given;
  }
  return sessionStorage.getItem("dtrain-token") || "";
})();

const state = { experiment: null, trial: null, reports: [], since: 0, lastSeq: 0, charts: [] };

async function api(path) {
  const r = await fetch(path, { headers: { Authorization: "Bearer " + token } });
  if (r.status === 401) throw new Error("401: open the URL with ?token=… printed when the dashboard started");
  if (!r.ok) throw new Error(r.status + ": " + (await r.text()));
  return r.json();
}

async function refreshCluster() {
  const c = await api("/api/v1/cluster");
  document.getElementById("slots").textContent =
    `${c.nodes.length} nodes, slots ${c.slots.used}/${c.slots.total}, GPUs ${c.gpus.used}/${c.gpus.total}`;
  fill("nodes", c.nodes, [["index"], ["host"], ["address"], ["pid"],
    [(n) => `${n.slots_used}/${n.cpu_slots}`], [(n) => `${n.gpus_used}/${n.gpus}`]]);
  document.getElementById("trainers").textContent = c.trainers.length
    ? "Trainers: " + c.trainers.map((t) => `${t.id} (${t.replicas} replicas)`).join(", ")
    : "No trainer holds slots.";
}

async function refreshExperiments() {
  const e = await api("/api/v1/experiments");
  fill("experiments", e.experiments, [["id"], ["name"], ["kind"], ["state"],
    [(x) => `${x.metric} (${x.minimize ? "min" : "max"})`], ["trials"], ["best"],
    [(x) => new Date(x.created_at * 1000).toLocaleString()]], selectExperiment, state.experiment);
  if (state.experiment === null && e.experiments.length)
    await selectExperiment(e.experiments[e.experiments.length - 1]);
}

async function selectExperiment(e) {
  state.experiment = e.id;
  await refreshTrials();
}

async function refreshTrials() {
  if (state.experiment === null) return;
  const t = await api(`/api/v1/experiments/${state.experiment}/trials`);
  document.getElementById("trials-of").textContent = `of experiment ${t.experiment.id} (${t.experiment.name})`;
  fill("trials", t.trials, trialColumns, selectTrial, state.trial);
  if (state.trial === null && t.trials.length) selectTrial(t.trials[0]);
}

function selectTrial(t) {
  if (state.trial !== t.id) {
    state.trial = t.id;
    state.reports = [];
    state.since = 0;
    state.lastSeq = 0;
  }
  refreshCurves().catch(showError);
}

// Fetches only the epochs after the newest one shown (?since=), then redraws.
async function refreshCurves() {
  if (state.trial === null) return;
  const m = await api(`/api/v1/trials/${state.trial}/metrics?since=${state.since}`);
  if (m.id !== state.trial) return;  // another trial was selected meanwhile
  let added = 0;
  for (const r of m.reports) {
    if (r.seq <= state.lastSeq) continue;  // an overlapping poll already added it
    state.reports.push(r);
    state.lastSeq = r.seq;
    state.since = Math.max(state.since, r.epoch);
    added++;
  }
  if (!added && state.charts.length) return;
  document.getElementById("curves-of").textContent = `of trial ${state.trial}`;
  draw();
}

// Two charts of the selected trial: losses, and every other metric
// (accuracies, ...; not lr).
function draw() {
  for (const c of state.charts) c.destroy();
  state.charts = [];
  const names = metricNames(state.reports);
  const groups = [
    ["loss", names.filter((n) => n.includes("loss"))],
    ["other metrics", names.filter((n) => !n.includes("loss") && n !== "lr")],
  ];
  const host = document.getElementById("charts");
  host.replaceChildren();
  for (const [title, series] of groups) {
    if (!series.length) continue;
    const chart = plotCurves(host, title, series.map((n) => ({ label: n, points: pointsOf(state.reports, n) })));
    if (chart) state.charts.push(chart);
  }
}

function showError(e) {
  const s = document.getElementById("status");
  s.textContent = String(e.message || e);
  s.className = "error";
}

async function tick() {
  try {
    await refreshCluster();
    await refreshExperiments();
    await refreshTrials();
    await refreshCurves();
    const s = document.getElementById("status");
    s.textContent = "updated " + new Date().toLocaleTimeString();
    s.className = "";
  } catch (e) {
    showError(e);
  }
}

tick();
setInterval(tick, 2000);

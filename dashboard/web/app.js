// The dashboard page: polls the JSON API (README, "Dashboard") and draws a
// selected trial's learning curves with uPlot. No build step.
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

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (cls) td.className = cls;
  row.appendChild(td);
}

function fmt(x) {
  return typeof x === "number" ? (Number.isInteger(x) ? x : x.toPrecision(4)) : x;
}

function fill(id, items, columns, onClick, selected) {
  const body = document.querySelector("#" + id + " tbody");
  body.replaceChildren();
  for (const item of items) {
    const row = document.createElement("tr");
    for (const [key, cls] of columns) cell(row, fmt(typeof key === "function" ? key(item) : item[key]), cls);
    if (onClick) {
      row.className = "clickable" + (selected === item.id ? " selected" : "");
      row.onclick = () => onClick(item);
    }
    body.appendChild(row);
  }
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
  fill("trials", t.trials, [["id"], ["state"], ["epochs"], ["best"], ["last"], ["restarts"],
    [(x) => JSON.stringify(x.hyperparameters), "hp"]], selectTrial, state.trial);
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

// Two charts: losses, and every other metric (accuracies, the operator's);
// the trainer's speed figures (thousands of samples/s) and lr would flatten
// them, and /metrics shows those.
const speed = new Set(["lr", "samples_per_second", "step_seconds", "allreduce_seconds", "restarts"]);
function draw() {
  for (const c of state.charts) c.destroy();
  state.charts = [];
  const names = new Set();
  for (const r of state.reports) for (const k of Object.keys(r.metrics)) names.add(k);
  const groups = [
    ["loss", [...names].filter((n) => n.includes("loss"))],
    ["other metrics", [...names].filter((n) => !n.includes("loss") && !speed.has(n))],
  ];
  const epochs = state.reports.map((r) => r.epoch);
  const colors = ["#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b"];
  const host = document.getElementById("charts");
  host.replaceChildren();
  for (const [title, series] of groups) {
    if (!series.length || !epochs.length) continue;
    const data = [epochs, ...series.map((n) => state.reports.map((r) => r.metrics[n] ?? null))];
    const opts = {
      title, width: 560, height: 300,
      scales: { x: { time: false } },
      axes: [{ label: "epoch" }, {}],
      series: [{ label: "epoch" },
        ...series.map((n, i) => ({ label: n, stroke: colors[i % colors.length], points: { show: true } }))],
    };
    const div = document.createElement("div");
    host.appendChild(div);
    state.charts.push(new uPlot(opts, data, div));
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

// The dashboard page: polls the JSON API (docs/dashboard.md) every 2 s and
// fills the cluster, experiments and trials tables; the selected trials'
// curves and a sweep's scatter are drawn by charts.js, the node logs by
// logs.js, a trial's checkpoints and failures by details.js, experiments
// compared by compare.js, a multi-objective sweep's Pareto set by pareto.js; cells and charts are common.js's. No build step.
//
// Stable hooks for people and the browser test (tests/browser): rows carry
// data-node-address, data-experiment-id, data-trial-id and data-state (lower case);
// node rows data-liveness; headers that sort carry data-sort; chart <div>s
// carry data-chart and data-points; window.dtrainDashboard.curvePoints(id)
// is the number of reports the page holds for a trial.
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

const state = {
  experiment: null,   // the selected experiment's row
  trialRows: [],      // its trials, as the API gave them
  selected: new Map(), // trial id -> {reports, lastSeq}, in selection order
  focus: null,        // the trial clicked last: its checkpoints, failures and logs are shown
  cluster: null,      // the last GET /api/v1/cluster
  sort: { experiments: { key: "id", desc: true }, trials: { key: "id", desc: false } },
  curveCharts: [],
  scatterCharts: [],
  scatterKey: "",
  importanceKey: "",  // the ended trials the importance table was computed from
};

// A path segment: ids go into URLs encoded.
const enc = encodeURIComponent;

// GET `path` as JSON. An error carries the HTTP status (e.status) and the
// API's message.
async function api(path) {
  const r = await fetch(path, { headers: { Authorization: "Bearer " + token } });
  if (r.status === 401) throw new Error("401: open the URL with ?token=… printed when the dashboard started");
  if (!r.ok) {
    const text = await r.text();
    let message = text;
    try { message = JSON.parse(text).error || text; } catch (_) { /* not JSON: as it is */ }
    const e = new Error(r.status + ": " + message);
    e.status = r.status;
    throw e;
  }
  return r.json();
}

// States as data-state holds them: trials are stored as the tuner names
// them (RUNNING), experiments in lower case (running).
function lower(s) {
  return String(s || "").toLowerCase();
}

// Sorts a copy of `items` by `key` (a field name or "hp:NAME"); numbers
// numerically, anything else as text, absent values last.
function sorted(items, { key, desc }) {
  const value = (item) => (key.startsWith("hp:") ? (item.hyperparameters || {})[key.slice(3)] : item[key]);
  const out = [...items];
  out.sort((a, b) => {
    const x = value(a), y = value(b);
    const absent = (v) => v === null || v === undefined;
    if (absent(x) || absent(y)) return absent(x) - absent(y);
    const nx = Number(x), ny = Number(y);
    const order = !Number.isNaN(nx) && !Number.isNaN(ny) ? nx - ny : String(x).localeCompare(String(y));
    return desc ? -order : order;
  });
  return out;
}

// The header row of table `id`: [label, sort key] pairs; clicking a header
// sorts by it (again: the other way round).
function header(id, columns) {
  const row = document.createElement("tr");
  const sort = state.sort[id];
  for (const [label, key] of columns) {
    const th = document.createElement("th");
    th.textContent = label;
    if (key) {
      th.dataset.sort = key;
      th.className = "sortable" + (sort && sort.key === key ? (sort.desc ? " desc" : " asc") : "");
      th.onclick = () => {
        state.sort[id] = { key, desc: sort.key === key ? !sort.desc : false };
        render();
      };
    }
    row.appendChild(th);
  }
  document.querySelector(`#${id} thead`).replaceChildren(row);
}

// ---- cluster ----

// "alive, heard 2 s ago" (a node the head polls every 2 s stays near that).
function liveness(n) {
  const heard = typeof n.last_heard_seconds === "number"
    ? `, heard ${Math.round(n.last_heard_seconds)} s ago` : "";
  const lost = n.lost_at ? `, lost ${new Date(n.lost_at * 1000).toLocaleTimeString()}` : "";
  return (n.state || "alive") + heard + lost;
}

async function refreshCluster() {
  const c = await api("/api/v1/cluster");
  state.cluster = c;
  const lost = c.lost || [];
  document.getElementById("slots").textContent =
    `${c.nodes.length} nodes${lost.length ? ` (${lost.length} lost)` : ""}, ` +
    `slots ${c.slots.used}/${c.slots.total}, GPUs ${c.gpus.used}/${c.gpus.total}`;
  const body = document.querySelector("#nodes tbody");
  body.replaceChildren();
  for (const n of c.nodes) {
    const row = document.createElement("tr");
    row.dataset.nodeIndex = n.index;
    row.dataset.nodeAddress = n.address;
    row.dataset.liveness = n.state || "alive";
    for (const v of [n.index, n.host, n.address, n.pid]) cell(row, v);
    cell(row, `${n.slots_used}/${n.cpu_slots}`, "slots");
    cell(row, `${n.gpus_used}/${n.gpus}`, "gpus");
    cell(row, liveness(n), "liveness " + (n.state || "alive"));
    body.appendChild(row);
  }
  // The nodes the head no longer places on: greyed, without an index (the
  // usable nodes' positions are the indices `dtrain logs --node` takes).
  for (const n of lost) {
    const row = document.createElement("tr");
    row.className = "lost";
    row.dataset.nodeAddress = n.address;
    row.dataset.liveness = n.state;
    for (const v of ["", n.host, n.address, n.pid, "", ""]) cell(row, v);
    cell(row, liveness(n), "liveness " + n.state);
    body.appendChild(row);
  }
  const list = document.getElementById("trainers");
  list.replaceChildren();
  for (const t of c.trainers) {
    const li = document.createElement("li");
    li.dataset.trainer = t.id;
    li.textContent = t.replicas === null ? t.id
      : `${t.id}: ${t.replicas} replica${t.replicas === 1 ? "" : "s"}`;
    list.appendChild(li);
  }
  document.getElementById("no-trainers").hidden = c.trainers.length > 0;
}

// ---- experiments and trials ----

let experimentRows = [];

async function refreshExperiments() {
  experimentRows = (await api("/api/v1/experiments")).experiments;
  // An experiment deleted meanwhile: dropped from the selection quietly.
  if (state.experiment !== null && !experimentRows.some((e) => e.id === state.experiment.id))
    dropExperiment();
  if (state.experiment === null && experimentRows.length) {
    // The newest experiment, running ones first.
    const running = experimentRows.filter((e) => lower(e.state) === "running");
    const pick = (running.length ? running : experimentRows).reduce((a, b) => (b.id > a.id ? b : a));
    selectExperiment(pick);
  }
}

// Forgets everything of the selected experiment's trials: the selection,
// the focused trial (its checkpoints, failures, and logs if they showed it)
// and the charts' keys.
function resetTrials() {
  state.trialRows = [];
  state.selected.clear();
  state.focus = null;
  state.scatterKey = "";
  state.importanceKey = "";
  trialDetails.reset();
  nodeLogs.trialGone();
}

function selectExperiment(e) {
  if (state.experiment && state.experiment.id === e.id) return;
  state.experiment = e;
  resetTrials();
  render();
  // Its trials now rather than at the next poll.
  refreshTrials().then(render).then(refreshCurves).catch(showError);
}

function dropExperiment() {
  state.experiment = null;
  resetTrials();
}

async function refreshTrials() {
  const e = state.experiment;
  if (e === null) return;
  let t;
  try {
    t = await api(`/api/v1/experiments/${enc(e.id)}/trials`);
  } catch (err) {
    // Deleted between two polls: the next experiments poll picks another.
    if (err.status === 404 && state.experiment === e) { dropExperiment(); return; }
    throw err;
  }
  if (state.experiment === null || t.experiment.id !== state.experiment.id) return;
  state.experiment = t.experiment;
  state.trialRows = t.trials;
  if (!state.selected.size && t.trials.length) {
    const running = t.trials.find((x) => lower(x.state) === "running");
    select((running || t.trials[0]).id, false);
  }
}

// Keys of the hyperparameters whose values differ between the trials (a
// sweep's searched ones), and of those that are the same everywhere.
function hyperparameterKeys(trials) {
  const values = new Map();
  for (const t of trials)
    for (const [k, v] of Object.entries(t.hyperparameters || {})) {
      if (!values.has(k)) values.set(k, new Set());
      values.get(k).add(JSON.stringify(v));
    }
  const varying = [], fixed = [];
  for (const [k, vs] of values) (vs.size > 1 || trials.length === 1 ? varying : fixed).push(k);
  return { varying: varying.sort(), fixed: fixed.sort() };
}

function select(id, additive) {
  if (!additive) {
    for (const k of [...state.selected.keys()]) if (k !== id) state.selected.delete(k);
  }
  if (additive && state.selected.has(id) && state.selected.size > 1) state.selected.delete(id);
  else if (!state.selected.has(id)) state.selected.set(id, { reports: [], lastSeq: 0 });
  state.focus = state.selected.has(id) ? id : [...state.selected.keys()].pop() || null;
  render();
  refreshCurves().catch(showError);
  trialDetails.refresh(focusedTrial()).catch(showError);
}

// The focused trial's row (null if none).
function focusedTrial() {
  return state.trialRows.find((t) => t.id === state.focus) || null;
}

function renderExperiments() {
  header("experiments", [["", null], ["id", "id"], ["name", "name"], ["kind", "kind"], ["state", "state"],
    ["metric", "metric"], ["trials", "trials"], ["best", "best"], ["created", "created_at"]]);
  const body = document.querySelector("#experiments tbody");
  body.replaceChildren();
  for (const e of sorted(experimentRows, state.sort.experiments)) {
    const row = document.createElement("tr");
    row.dataset.experimentId = e.id;
    row.dataset.state = lower(e.state);
    row.className = "clickable" + (state.experiment && state.experiment.id === e.id ? " selected" : "");
    row.onclick = () => selectExperiment(e);
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "compare-experiment";
    box.title = "compare this experiment with the others ticked";
    box.checked = experimentCompare.isChosen(e.id);
    box.onclick = (ev) => {
      ev.stopPropagation();
      experimentCompare.toggle(e.id);
      experimentCompare.refresh(experimentRows).catch(showError);
    };
    row.appendChild(document.createElement("td")).appendChild(box);
    for (const v of [e.id, e.name, e.kind, e.state, `${e.metric} (${e.minimize ? "min" : "max"})`,
      e.trials, e.best, new Date(e.created_at * 1000).toLocaleString()]) cell(row, v);
    body.appendChild(row);
  }
}

function renderTrials() {
  const e = state.experiment;
  document.getElementById("trials-of").textContent = e ? `of experiment ${e.id} (${e.name}, ${e.metric})` : "";
  const { varying, fixed } = hyperparameterKeys(state.trialRows);
  header("trials", [["", null], ["id", "id"], ["state", "state"], ["epochs", "epochs"],
    [`best ${e ? e.metric : ""}`, "best"], ["last", "last"], ["restarts", "restarts"],
    ...varying.map((k) => [k, "hp:" + k]), ...(fixed.length ? [["other hyperparameters", null]] : [])]);
  const body = document.querySelector("#trials tbody");
  body.replaceChildren();
  for (const t of sorted(state.trialRows, state.sort.trials)) {
    const row = document.createElement("tr");
    row.dataset.trialId = t.id;
    row.dataset.state = lower(t.state);
    row.className = "clickable" + (state.selected.has(t.id) ? " selected" : "");
    row.title = "click: show this trial's curves; the box (or ctrl-click): overlay several";
    row.onclick = (ev) => select(t.id, ev.ctrlKey || ev.metaKey);
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "select-trial";
    box.checked = state.selected.has(t.id);
    box.onclick = (ev) => { ev.stopPropagation(); select(t.id, true); };
    row.appendChild(document.createElement("td")).appendChild(box);
    for (const v of [t.id, t.state, t.epochs, t.best, t.last, t.restarts]) cell(row, v);
    for (const k of varying) cell(row, (t.hyperparameters || {})[k], "hp");
    if (fixed.length) cell(row, fixed.map((k) => `${k}=${fmt((t.hyperparameters || {})[k])}`).join(" "), "hp");
    body.appendChild(row);
  }
  renderScatter(varying);
}

// ---- charts ----

// Fetches each selected trial's reports after the newest one it holds
// (?after_seq=: by report, not epoch, since a restarted or PBT trial
// reports an epoch again), then redraws when any arrived.
async function refreshCurves() {
  let added = 0;
  for (const [id, t] of [...state.selected]) {
    let m;
    try {
      m = await api(`/api/v1/trials/${enc(id)}/metrics?after_seq=${t.lastSeq}`);
    } catch (err) {
      if (err.status === 404) continue;  // its experiment was deleted: the next poll drops it
      throw err;
    }
    if (state.selected.get(id) !== t) continue;  // deselected meanwhile
    for (const r of m.reports) {
      if (r.seq <= t.lastSeq) continue;  // an overlapping poll already added it
      t.reports.push(r);
      t.lastSeq = r.seq;
      added++;
    }
  }
  const shown = [...state.selected.keys()].join(" ");
  const host = document.getElementById("charts");
  if (!added && host.dataset.trials === shown) return;
  host.dataset.trials = shown;
  document.getElementById("curves-of").textContent = state.selected.size > 1
    ? `of trials ${shown.replaceAll(" ", ", ")}` : state.selected.size ? `of trial ${shown}` : "";
  drawCurves(host, state.curveCharts, state.selected);
}

// The sweep view: a chosen hyperparameter (those that vary) against the
// trials' best metric; hidden for a single-trial experiment.
function renderScatter(varying) {
  const section = document.getElementById("sweep");
  const trials = state.trialRows;
  section.hidden = trials.length < 2 || !varying.length;
  if (section.hidden) return;
  const choice = document.getElementById("scatter-param");
  const options = [...choice.options].map((o) => o.value).join(",");
  if (options !== varying.join(",")) {
    const keep = choice.value;
    choice.replaceChildren(...varying.map((k) => new Option(k, k)));
    choice.value = varying.includes(keep) ? keep : varying[0];
  }
  const key = JSON.stringify([choice.value, trials.map((t) => [t.id, t.best])]);
  if (key === state.scatterKey) return;
  state.scatterKey = key;
  drawScatter(document.getElementById("scatter"), state.scatterCharts, trials, choice.value,
    state.experiment.metric);
}

// Which hyperparameters matter (GET .../importance with the fast method,
// cheap enough for a polled page): asked again only when a trial of the
// selected sweep ended.
async function refreshImportance() {
  const e = state.experiment;
  const section = document.getElementById("importance-section");
  if (e === null || e.kind !== "tune") {
    section.hidden = true;
    return;
  }
  const key = JSON.stringify([e.id, state.trialRows.filter((t) => t.end_how).map((t) => t.id)]);
  if (key === state.importanceKey) return;
  const doc = await api(`/api/v1/experiments/${enc(e.id)}/importance?method=fast`);
  if (state.experiment === null || state.experiment.id !== e.id) return;
  state.importanceKey = key;
  section.hidden = false;
  showImportance("importance", "importance-note", doc);
}

function render() {
  renderExperiments();
  renderTrials();
  nodeLogs.renderChoices(state.cluster, focusedTrial());
}

// ---- the loop ----

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
    render();
    await refreshCurves();
    await refreshImportance();
    await trialDetails.refresh(focusedTrial());
    await experimentCompare.refresh(experimentRows);
    await paretoView.refresh(state.experiment, state.trialRows);
    const s = document.getElementById("status");
    s.textContent = "updated " + new Date().toLocaleTimeString();
    s.className = "";
  } catch (e) {
    showError(e);
  }
  // The next poll 2 s after this one ended, never on top of it: a slow head
  // must not pile up requests behind the server's workers.
  setTimeout(tick, 2000);
}

// For tests and the console: what the page holds, without reading canvases.
window.dtrainDashboard = {
  curvePoints: (id) => (state.selected.has(id) ? state.selected.get(id).reports.length : 0),
  selectedTrials: () => [...state.selected.keys()],
};

document.getElementById("scatter-param").onchange = () => renderScatter(
  hyperparameterKeys(state.trialRows).varying);
tick();

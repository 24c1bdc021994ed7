// What the dashboard page (app.js, charts.js, logs.js, details.js) and
// `dtrain report`'s page (report.js) share: table cells and rows from the
// API's JSON documents, and uPlot charts of learning curves. Plain script,
// no build step: defines globals. Text goes in with textContent only.
"use strict";

// A value as a cell shows it: "" for none, numbers to 4 significant digits.
function fmt(x) {
  if (x === null || x === undefined) return "";
  return typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toPrecision(4)) : String(x);
}

// Appends a <td> with `text` (formatted) to `row`; returns it.
function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = fmt(text);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

// Fills table `id`'s body with one row per item; columns are [key or
// function, class]. With onClick, rows are clickable and `selected` (an id)
// is marked.
function fill(id, items, columns, onClick, selected) {
  const body = document.querySelector("#" + id + " tbody");
  body.replaceChildren();
  for (const item of items) {
    const row = document.createElement("tr");
    for (const [key, cls] of columns) cell(row, typeof key === "function" ? key(item) : item[key], cls);
    if (onClick) {
      row.className = "clickable" + (selected === item.id ? " selected" : "");
      row.onclick = () => onClick(item);
    }
    body.appendChild(row);
  }
}

// The trial table's columns (GET /api/v1/experiments/{id}/trials).
const trialColumns = [["id"], ["state"], ["epochs"], ["best"], ["last"], ["restarts"],
  [(x) => JSON.stringify(x.hyperparameters), "hp"]];

// Fills table `tableId` with the hyperparameters ranked by importance (the
// document of GET /api/v1/experiments/{id}/importance, or a report's
// "importance"), each with a bar; `noteId` says over which trials, or why
// there is no ranking ({"error": ...}).
function showImportance(tableId, noteId, doc) {
  const note = document.getElementById(noteId);
  const params = doc && doc.parameters ? doc.parameters : [];
  fill(tableId, params.map((p, i) => ({ ...p, rank: i + 1 })), [["rank"], ["name"], ["importance"],
    [() => "", "bar"]], null, null);
  document.querySelectorAll("#" + tableId + " tbody td.bar").forEach((td, i) => {
    const bar = document.createElement("div");
    bar.className = "importance-bar";
    bar.style.width = Math.round(params[i].importance * 200) + "px";
    td.appendChild(bar);
  });
  note.className = doc && doc.error ? "note error" : "note";
  note.textContent = !doc ? "" : doc.error ? doc.error
    : `${doc.method} over ${doc.trials_used} completed trials of ${doc.trials_total}, ` +
      `by their last ${doc.metric}; the shares sum to 1.`;
}

// ---- charts (uPlot) ----

const COLORS = ["#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b",
  "#6d4c41", "#3949ab", "#c0ca33", "#d81b60"];

// Epochs are whole: no tick at 1.25.
const EPOCH_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];

// Numbers as uPlot wants them: NaN, infinities and absent values as null.
function finiteOrNull(x) {
  return typeof x === "number" && Number.isFinite(x) ? x : null;
}

// Tick labels with as many decimals as the tick spacing needs (uPlot's
// default keeps three, so a loss between 0.0833 and 0.0835 reads
// "0.083 0.083 0.083").
function tickLabels(u, ticks) {
  const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) : 0;
  // The fewest decimals that write the step as a whole number of units.
  let digits = step > 0 ? 0 : 3;
  while (step > 0 && digits < 12) {
    const units = step * 10 ** digits;
    if (units >= 0.999999 && Math.abs(units - Math.round(units)) <= 1e-6 * units) break;
    digits++;
  }
  return ticks.map((v) => (v === null ? "" : v.toFixed(digits)));
}

// Log-axis labels (uPlot passes null for the ticks it leaves unlabelled).
function decadeLabels(u, ticks) {
  return ticks.map((v) => (v === null ? "" : String(Number(v.toPrecision(2)))));
}

// A y axis wide enough for its longest tick label.
function axisSize(u, values) {
  const longest = values ? Math.max(0, ...values.map((v) => String(v).length)) : 4;
  return 24 + 7 * longest;
}

// The number of non-null y values in uPlot data.
function pointCount(data) {
  let points = 0;
  for (const ys of data.slice(1)) for (const y of ys) if (y !== null) points++;
  return points;
}

// Shows `specs` ([opts, data] per chart) in `host`, where `charts` holds the
// uPlot objects shown now. Charts of the same titles and series get the new
// data in place (no flicker while a trial trains); otherwise all are built
// anew. Each chart's <div> carries data-chart (its title) and data-points
// (its non-null y values) for tests and people.
function showCharts(host, charts, specs) {
  const shape = (title, labels) => JSON.stringify([title, labels]);
  const same = specs.length > 0 && charts.length === specs.length && specs.every(([opts], i) =>
    shape(opts.title, opts.series.map((x) => x.label)) ===
    shape(charts[i].root.parentNode.dataset.chart, charts[i].series.map((x) => x.label)));
  if (same) {
    specs.forEach(([, data], i) => {
      charts[i].setData(data);
      charts[i].root.parentNode.dataset.points = String(pointCount(data));
    });
    return;
  }
  for (const c of charts) c.destroy();
  charts.length = 0;
  host.replaceChildren();
  for (const [opts, data] of specs) {
    const div = document.createElement("div");
    div.className = "chart";
    div.dataset.chart = opts.title;
    div.dataset.points = String(pointCount(data));
    host.appendChild(div);
    charts.push(new uPlot(opts, data, div));
  }
}

// A learning-curve chart for showCharts: `series` is [{label, points:
// [[epoch, value], ...], color (optional)}], drawn on the union of their epochs (gaps are
// null, lines span them). A series with one epoch twice (a restarted
// trial) keeps the later value.
function curveChart(title, series) {
  const epochs = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const at = new Map(epochs.map((e, i) => [e, i]));
  const columns = series.map((s) => {
    const ys = new Array(epochs.length).fill(null);
    for (const [e, y] of s.points) ys[at.get(e)] = finiteOrNull(y);
    return ys;
  });
  return [{
    title, width: 560, height: 300,
    scales: { x: { time: false } },
    axes: [{ label: "epoch", incrs: EPOCH_STEPS }, { values: tickLabels, size: axisSize }],
    series: [{ label: "epoch" }, ...series.map((s, i) =>
      ({ label: s.label, stroke: s.color || COLORS[i % COLORS.length], points: { show: true }, spanGaps: true }))],
  }, [epochs, ...columns]];
}

// Every metric name in a list of reports (GET /api/v1/trials/{key}/metrics).
function metricNames(reports) {
  const names = new Set();
  for (const r of reports) for (const k of Object.keys(r.metrics)) names.add(k);
  return [...names];
}

// A report's value of `name` at each epoch: the series' points.
function pointsOf(reports, name) {
  return reports.filter((r) => r.metrics[name] !== undefined && r.metrics[name] !== null)
    .map((r) => [r.epoch, r.metrics[name]]);
}

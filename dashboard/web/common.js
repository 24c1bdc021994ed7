// What the dashboard page (app.js) and `dtrain report`'s page (report.js)
// share: tables filled from the API's JSON documents and uPlot charts of
// learning curves. Plain script, no build step: defines globals.
"use strict";

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (cls) td.className = cls;
  row.appendChild(td);
}

function fmt(x) {
  return typeof x === "number" ? (Number.isInteger(x) ? x : x.toPrecision(4)) : x;
}

// Fills table `id`'s body with one row per item; columns are [key or
// function, class]. With onClick, rows are clickable and `selected` (an id)
// is marked.
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

// The trial table's columns (GET /api/v1/experiments/{id}/trials).
const trialColumns = [["id"], ["state"], ["epochs"], ["best"], ["last"], ["restarts"],
  [(x) => JSON.stringify(x.hyperparameters), "hp"]];

const chartColors = ["#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b",
  "#6d4c41", "#3949ab", "#c0ca33", "#d81b60"];

// Every metric name in a list of reports (GET /api/v1/trials/{key}/metrics).
function metricNames(reports) {
  const names = new Set();
  for (const r of reports) for (const k of Object.keys(r.metrics)) names.add(k);
  return [...names];
}

// One uPlot chart in `host` titled `title`: each series is {label, points:
// [[epoch, value], ...]}, on the union of their epochs (gaps are null).
// Returns the chart, or null when there is nothing to draw.
function plotCurves(host, title, series) {
  const epochs = [...new Set(series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  if (!epochs.length) return null;
  const at = new Map(epochs.map((e, i) => [e, i]));
  const data = [epochs, ...series.map((s) => {
    const ys = new Array(epochs.length).fill(null);
    for (const [e, y] of s.points) ys[at.get(e)] = y;
    return ys;
  })];
  const opts = {
    title, width: 560, height: 300,
    scales: { x: { time: false } },
    axes: [{ label: "epoch" }, {}],
    series: [{ label: "epoch" }, ...series.map((s, i) => ({
      label: s.label, stroke: chartColors[i % chartColors.length], points: { show: true }, spanGaps: true,
    }))],
  };
  const div = document.createElement("div");
  div.className = "chart";
  host.appendChild(div);
  return new uPlot(opts, data, div);
}

// A report's value of `name` at each epoch: the series' points.
function pointsOf(reports, name) {
  return reports.filter((r) => r.metrics[name] !== undefined && r.metrics[name] !== null)
    .map((r) => [r.epoch, r.metrics[name]]);
}

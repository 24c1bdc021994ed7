// The dashboard's charts (uPlot): learning curves of one trial or several
// overlaid, and a sweep's scatter of a hyperparameter against the metric.
// Plain script, no build step; app.js calls drawCurves and drawScatter.
"use strict";

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

// Curves of the trials in `trials` (a Map id -> {reports}), shown in
// `host`. One trial: a chart of its losses and one of its other metrics.
// Several: one chart per metric, one line per trial (epochs aligned).
// The trainer's speed figures (thousands of samples/s) and lr would flatten
// the learning curves; /metrics shows those.
const NOT_CURVES = new Set(["lr", "samples_per_second", "step_seconds", "allreduce_seconds",
  "restarts"]);

function drawCurves(host, charts, trials) {
  const names = new Set();
  const epochSet = new Set();
  for (const t of trials.values())
    for (const r of t.reports) {
      epochSet.add(r.epoch);
      for (const k of Object.keys(r.metrics)) if (!NOT_CURVES.has(k)) names.add(k);
    }
  const epochs = [...epochSet].sort((a, b) => a - b);
  const valueAt = (t, name) => {
    const byEpoch = new Map(t.reports.map((r) => [r.epoch, r.metrics[name]]));
    return epochs.map((e) => finiteOrNull(byEpoch.get(e)));
  };
  const chart = (title, labels, columns) => [{
    title, width: 560, height: 300,
    scales: { x: { time: false } },
    axes: [{ label: "epoch", incrs: EPOCH_STEPS }, { values: tickLabels, size: axisSize }],
    series: [{ label: "epoch" }, ...labels.map((label, i) =>
      ({ label, stroke: COLORS[i % COLORS.length], points: { show: true }, spanGaps: true }))],
  }, [epochs, ...columns]];
  const specs = [];
  if (epochs.length && trials.size === 1) {
    const [t] = trials.values();
    const losses = [...names].filter((n) => n.includes("loss"));
    const others = [...names].filter((n) => !n.includes("loss"));
    for (const [title, group] of [["loss", losses], ["other metrics", others]])
      if (group.length) specs.push(chart(title, group, group.map((n) => valueAt(t, n))));
  } else if (epochs.length) {
    const ids = [...trials.keys()];
    for (const name of [...names].sort())
      specs.push(chart(name, ids, ids.map((id) => valueAt(trials.get(id), name))));
  }
  showCharts(host, charts, specs);
}

// An x range 5% wider than the data on each side (whole decades on a log
// axis, half a category on a categorical one).
function padded(log, categorical) {
  return (u, min, max) => {
    if (min === null || max === null) return [0, 1];
    if (log) return uPlot.rangeLog(min, max, 10, true);  // whole decades: uPlot's log ticks need them
    if (categorical) return [min - 0.5, max + 0.5];
    const pad = min === max ? Math.abs(min) * 0.1 || 1 : (max - min) * 0.05;
    return [min - pad, max + pad];
  };
}

// A hyperparameter's values as numbers: numeric ones as they are (numbers
// or numeric text), categorical ones as indices into `categories`.
function hyperparameterAxis(trials, param) {
  const raw = trials.map((t) => (t.hyperparameters || {})[param]);
  const numeric = raw.every((v) => v !== undefined && v !== null && v !== "" && !Number.isNaN(Number(v)));
  if (numeric) return { values: raw.map(Number), categories: null };
  const categories = [...new Set(raw.map(String))].sort();
  return { values: raw.map((v) => categories.indexOf(String(v))), categories };
}

// A scatter of `param` (x) against each trial's best metric (y), one point
// per trial with a best value; log x when the values span two decades.
function drawScatter(host, charts, trials, param, metric) {
  if (!param) return showCharts(host, charts, []);
  const { values, categories } = hyperparameterAxis(trials, param);
  const pairs = [];
  trials.forEach((t, i) => {
    const y = finiteOrNull(t.best);
    if (y !== null && Number.isFinite(values[i])) pairs.push([values[i], y, t.id]);
  });
  host.dataset.trials = pairs.map((p) => p[2]).join(" ");
  if (!pairs.length) return showCharts(host, charts, []);  // no trial has a metric yet
  pairs.sort((a, b) => a[0] - b[0]);
  const xs = pairs.map((p) => p[0]);
  const positive = xs.length > 1 && xs.every((x) => x > 0);
  const log = !categories && positive && Math.max(...xs) / Math.min(...xs) >= 100;
  const xAxis = { label: param };
  if (categories) {
    xAxis.values = (u, ticks) => ticks.map((v) => (Number.isInteger(v) ? categories[v] ?? "" : ""));
    xAxis.incrs = [1];
  } else {
    xAxis.values = log ? decadeLabels : tickLabels;
  }
  const opts = {
    title: `${metric} (best) by ${param}`, width: 560, height: 300,
    // Some room beyond the extreme points, so none sits on the frame.
    scales: { x: { time: false, distr: log ? 3 : 1, range: padded(log, categories !== null) } },
    axes: [xAxis, { label: metric, values: tickLabels, size: axisSize }],
    series: [{ label: param }, {
      label: metric, stroke: COLORS[0], fill: COLORS[0],
      paths: () => null, points: { show: true, size: 9 },
    }],
  };
  // Built anew each time: the axes (log or not, categories) may change.
  showCharts(host, charts, []);
  showCharts(host, charts, [[opts, [xs, pairs.map((p) => p[1])]]]);
}

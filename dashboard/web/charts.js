// The dashboard's charts (uPlot): learning curves of one trial or several
// overlaid, and a sweep's scatter of a hyperparameter against the metric.
// Plain script, no build step; app.js calls drawCurves and drawScatter;
// the chart helpers they use are common.js's (shared with `dtrain report`).
"use strict";

// Curves of the trials in `trials` (a Map id -> {reports}), shown in
// `host`. One trial: a chart of its losses and one of its other metrics.
// Several: one chart per metric, one line per trial (epochs aligned).
// The trainer's speed figures (thousands of samples/s) and lr would flatten
// the learning curves; /metrics shows those.
const NOT_CURVES = new Set(["lr", "samples_per_second", "step_seconds", "allreduce_seconds",
  "restarts"]);

function drawCurves(host, charts, trials) {
  const names = new Set();
  for (const t of trials.values())
    for (const n of metricNames(t.reports)) if (!NOT_CURVES.has(n)) names.add(n);
  const specs = [];
  if (trials.size === 1) {
    const [t] = trials.values();
    const losses = [...names].filter((n) => n.includes("loss"));
    const others = [...names].filter((n) => !n.includes("loss"));
    for (const [title, group] of [["loss", losses], ["other metrics", others]])
      if (group.length) specs.push(curveChart(title, group.map((n) => ({ label: n, points: pointsOf(t.reports, n) }))));
  } else {
    for (const name of [...names].sort())
      specs.push(curveChart(name, [...trials].map(([id, t]) => ({ label: id, points: pointsOf(t.reports, name) }))));
  }
  showCharts(host, charts, specs.filter(([, data]) => data[0].length));
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

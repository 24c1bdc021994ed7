// The page of `dtrain report`: draws the experiment embedded in the page
// (the element #dtrain-data: the dashboard API's documents) with the
// dashboard's own tables and charts (common.js). Fetches nothing.
"use strict";

(function report() {
  const data = JSON.parse(document.getElementById("dtrain-data").textContent);
  const e = data.trials.experiment;
  const trials = data.trials.trials;
  document.title = `dtrain report: experiment ${e.id} (${e.name})`;
  document.getElementById("title").textContent = `experiment ${e.id}: ${e.name}`;
  const counts = {};
  for (const t of trials) counts[t.state] = (counts[t.state] || 0) + 1;
  document.getElementById("summary").textContent =
    `${e.kind}, ${e.state}; metric ${e.metric} (${e.minimize ? "min" : "max"}); ${trials.length} trials (` +
    Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(", ") + `); created ` +
    new Date(e.created_at * 1000).toLocaleString() + (e.message ? `; ${e.message}` : "");
  fill("trials", trials, trialColumns, null, null);

  // One chart per metric, every trial a series; a metric's validation
  // chart beside its training one.
  const reports = new Map(data.metrics.map((m) => [m.id, m.reports]));
  const names = new Set();
  for (const m of data.metrics) for (const n of metricNames(m.reports)) names.add(n);
  const base = (n) => n.replace(/^validation_/, "");
  const ordered = [...names].sort((a, b) => base(a).localeCompare(base(b)) || a.localeCompare(b));
  const host = document.getElementById("charts");
  const specs = [];
  for (const name of ordered) {
    const series = trials.map((t) => ({ label: t.trial, points: pointsOf(reports.get(t.id) || [], name) }))
      .filter((s) => s.points.length);
    if (series.length) specs.push(curveChart(name, series));
  }
  showCharts(host, [], specs);
  if (!specs.length) host.textContent = "No metrics were reported.";

  document.getElementById("importance-of").textContent = "(fANOVA, as Optuna's)";
  showImportance("importance", "importance-note", data.importance);

  const best = trials.find((t) => t.id === data.best_trial);
  document.getElementById("best-of").textContent = `by ${e.metric} (${e.minimize ? "min" : "max"})`;
  document.getElementById("best").textContent = best
    ? `trial ${best.trial}: ${e.metric} ${fmt(best.best)}, ${best.epochs} epochs, ${best.state}`
    : "No trial has a value of the metric.";
  document.getElementById("best-hyperparameters").textContent =
    best ? JSON.stringify(best.hyperparameters, null, 2) : "";
  document.getElementById("configuration").textContent = data.configuration;
  document.getElementById("generated").textContent =
    "Written by dtrain report at " + new Date(data.generated_at * 1000).toLocaleString() +
    " from " + data.source + ".";
})();

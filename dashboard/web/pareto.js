// A multi-objective sweep's Pareto set: the selected experiment's trials
// in the plane of its first two objectives (GET /api/v1/experiments/{id}/
// pareto), the Pareto set drawn apart and joined. Hidden for an experiment
// of one objective, or whose stored configuration names none (the API
// then says why in "error"). app.js calls paretoView.refresh(experiment, trialRows)
// on each poll. Plain script, no build step; uses api() and enc() from
// app.js, showCharts(), finiteOrNull(), tickLabels, axisSize and COLORS from
// common.js.
"use strict";

const paretoView = (() => {
  const charts = [];
  let shownKey = "";

  function draw(doc) {
    const [a, b] = doc.objectives;
    const points = doc.trials.filter((t) => finiteOrNull(t.values[0]) !== null && finiteOrNull(t.values[1]) !== null);
    points.sort((p, q) => p.values[0] - q.values[0]);
    const host = document.getElementById("pareto-chart");
    const front = points.filter((p) => p.pareto);
    host.dataset.trials = String(points.length);
    host.dataset.pareto = front.map((p) => p.id).join(" ");
    const xs = points.map((p) => p.values[0]);
    const all = points.map((p) => (p.pareto ? null : p.values[1]));
    const best = points.map((p) => (p.pareto ? p.values[1] : null));
    const label = (o) => `${o.metric} (${o.minimize ? "min" : "max"})`;
    const opts = {
      title: `Pareto set: ${a.metric} against ${b.metric}`, width: 560, height: 320,
      scales: { x: { time: false } },
      axes: [{ label: label(a), values: tickLabels }, { label: label(b), values: tickLabels, size: axisSize }],
      series: [{ label: a.metric },
        { label: "other trials", stroke: "#999", paths: () => null, points: { show: true, size: 6 } },
        { label: "Pareto set", stroke: COLORS[0], points: { show: true, size: 9 }, spanGaps: true }],
    };
    showCharts(host, charts, []);
    if (points.length) showCharts(host, charts, [[opts, [xs, all, best]]]);
    document.getElementById("pareto-of").textContent =
      `${front.length} of ${points.length} trials; ` + doc.objectives.map(label).join(", ");
  }

  async function refresh(experiment, trialRows) {
    const section = document.getElementById("pareto-section");
    if (experiment === null || experiment.kind !== "tune") {
      section.hidden = true;
      return;
    }
    // Asked again when a trial ended or the experiment changed.
    const key = JSON.stringify([experiment.id, trialRows.filter((t) => t.end_how).map((t) => t.id)]);
    if (key === shownKey) return;
    const doc = await api(`/api/v1/experiments/${enc(experiment.id)}/pareto`);
    shownKey = key;
    section.hidden = doc.objectives.length < 2;
    if (!section.hidden) draw(doc);
  }

  return { refresh };
})();

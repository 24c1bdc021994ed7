// Experiments compared: the experiments ticked in the experiments table
// (two or more) side by side in a table (best value, best trial, its
// hyperparameters) and their best trials' learning curves overlaid in one
// chart of the first ticked experiment's metric, a colour per experiment.
// app.js calls experimentCompare.refresh(experimentRows) on each poll and
// asks isChosen/toggle for the table's boxes. Plain script, no build step;
// uses api(), enc() and lower() from app.js, cell(), fmt(), curveChart(),
// pointsOf(), showCharts() and COLORS from common.js.
"use strict";

const experimentCompare = (() => {
  const TOP = 5;              // best trials drawn per experiment
  const chosen = [];          // experiment ids, in the order they were ticked
  const charts = [];
  const curves = new Map();   // trial key -> {reports, lastSeq, ended}
  let shownKey = "";

  function isChosen(id) { return chosen.includes(id); }

  function toggle(id) {
    const at = chosen.indexOf(id);
    if (at >= 0) chosen.splice(at, 1);
    else chosen.push(id);
  }

  // The trials of an experiment with a best value, best first by its
  // direction, at most TOP.
  function bestTrials(e, trials) {
    const valued = trials.filter((t) => typeof t.best === "number" && Number.isFinite(t.best));
    valued.sort((a, b) => (e.minimize ? a.best - b.best : b.best - a.best));
    return valued.slice(0, TOP);
  }

  // New reports of `key` since the last read; none once its trial ended
  // and was read after that.
  async function readCurve(key, ended) {
    let c = curves.get(key);
    if (!c) curves.set(key, (c = { reports: [], lastSeq: 0, ended: false }));
    if (c.ended) return 0;
    const m = await api(`/api/v1/trials/${enc(key)}/metrics?after_seq=${c.lastSeq}`);
    let added = 0;
    for (const r of m.reports) {
      if (r.seq <= c.lastSeq) continue;
      c.reports.push(r);
      c.lastSeq = r.seq;
      added++;
    }
    c.ended = ended;
    return added;
  }

  function showTable(rows) {
    const body = document.querySelector("#compare-table tbody");
    body.replaceChildren();
    for (const { e, best, count } of rows) {
      const row = document.createElement("tr");
      row.dataset.experimentId = e.id;
      const hp = best ? Object.entries(best.hyperparameters || {}).map(([k, v]) => `${k}=${fmt(v)}`).join(" ") : "";
      for (const v of [e.id, e.name, `${e.metric} (${e.minimize ? "min" : "max"})`, count,
        best ? best.best : null, best ? best.trial || best.id : "", hp]) cell(row, v);
      body.appendChild(row);
    }
  }

  async function refresh(experimentRows) {
    // Experiments deleted meanwhile leave the comparison.
    for (let i = chosen.length - 1; i >= 0; i--)
      if (!experimentRows.some((e) => e.id === chosen[i])) chosen.splice(i, 1);
    const section = document.getElementById("compare");
    section.hidden = chosen.length < 2;
    if (section.hidden) return;
    const rows = [];
    for (const id of chosen) {
      const t = await api(`/api/v1/experiments/${enc(id)}/trials`);
      rows.push({ e: t.experiment, trials: bestTrials(t.experiment, t.trials), count: t.trials.length });
    }
    let added = 0;
    for (const { trials } of rows)
      for (const t of trials) added += await readCurve(t.id, lower(t.state) !== "running");
    const metric = rows[0].e.metric;
    const others = rows.filter((r) => r.e.metric !== metric).map((r) => r.e.id);
    document.getElementById("compare-of").textContent =
      `experiments ${chosen.join(", ")}: the best ${TOP} trials of each, ${metric}` +
      (others.length ? ` (experiments ${others.join(", ")} report other metrics)` : "");
    showTable(rows.map((r) => ({ e: r.e, best: r.trials[0] || null, count: r.count })));
    const key = JSON.stringify(rows.map((r) => r.trials.map((t) => t.id)));
    if (!added && key === shownKey) return;
    shownKey = key;
    const series = [];
    rows.forEach(({ e, trials }, i) => {
      for (const t of trials)
        series.push({ label: `${e.id}/${t.trial || t.id}`, color: COLORS[i % COLORS.length],
          points: pointsOf(curves.get(t.id).reports, metric) });
    });
    const host = document.getElementById("compare-charts");
    host.dataset.experiments = chosen.join(" ");
    host.dataset.series = String(series.length);
    showCharts(host, charts, series.length ? [curveChart(`${metric}: experiments ${chosen.join(", ")}`, series)] : []);
  }

  return { isChosen, toggle, refresh };
})();

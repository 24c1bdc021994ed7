// The log view: a node's log, or the logs of the nodes holding a trial's
// replicas, read through GET /api/v1/nodes/{index}/log
// (docs/dashboard.md), as `dtrain logs` reads them: the tail first, then from
// `next` every second while "follow" is ticked. A search box keeps the
// lines that contain its text (any case) and marks it. Log text goes in
// with textContent only. Plain script, no build step; uses api() and enc()
// from app.js. app.js calls nodeLogs.renderChoices(cluster, trial) after
// each poll and nodeLogs.trialGone() when the experiment changes.
"use strict";

const nodeLogs = (() => {
  const TAIL_BYTES = 64 << 10;   // the first read: this much of the end
  const KEEP_LINES = 2000;       // held (and shown at most)
  const CHUNKS_PER_POLL = 8;     // a log growing fast catches up over polls
  const POLL_MS = 1000;

  // What is shown: key (the <select>'s value), nodes [{address, label,
  // next (null: the tail first), partial}], trainers (a trial's trainer
  // ids), lines [{prefix, text}], reading (a poll is under way).
  let view = null;
  let timer = null;

  const el = (id) => document.getElementById(id);

  function say(text, isError) {
    const s = el("log-status");
    s.textContent = text;
    s.className = isError ? "error" : "";
  }

  // Whether trainer `id` runs store trial `trial`: the rule of `dtrain logs
  // --trial` (actors/driver/dtrain/driver/node_logs.hpp, trainer_runs_trial): a
  // sweep's trainer is "<experiment name>-<trial>-<host>-<pid>-<n>".
  function runsTrial(id, trial) {
    return trial !== "" && ("-" + id + "-").includes("-" + trial + "-");
  }

  // The trainers (ids) running `trial` (a trials row) and the addresses of
  // the nodes holding their replicas.
  function trialPlacement(cluster, trial) {
    const trainers = [], addresses = [];
    if (!cluster || !trial) return { trainers, addresses };
    for (const t of cluster.trainers) {
      if (!runsTrial(t.id, trial.trial)) continue;
      trainers.push(t.id);
      for (const i of t.nodes || []) {
        const n = cluster.nodes[i];
        if (n && !addresses.includes(n.address)) addresses.push(n.address);
      }
    }
    return { trainers, addresses };
  }

  function nodeLabel(n) {
    return `node ${n.index} (${n.host}, ${n.address})`;
  }

  // The <select>'s options: none, each usable node, and the focused trial
  // while a trainer runs it.
  function renderChoices(cluster, trial) {
    const choice = el("log-source");
    const options = [["", "—"]];
    if (cluster) for (const n of cluster.nodes) options.push(["node:" + n.address, nodeLabel(n)]);
    const placed = trialPlacement(cluster, trial);
    if (trial && placed.addresses.length)
      options.push(["trial:" + trial.id, `trial ${trial.id} (${placed.addresses.length} node` +
        `${placed.addresses.length === 1 ? "" : "s"})`]);
    // The view stays on its source while that is gone (a node lost, a trial
    // ended): it says so and keeps what it read.
    if (view && !options.some(([key]) => key === view.key)) options.push([view.key, view.title + " (gone)"]);
    const shape = JSON.stringify(options);
    if (choice.dataset.shape !== shape) {
      choice.dataset.shape = shape;
      choice.replaceChildren(...options.map(([key, label]) => new Option(label, key)));
    }
    choice.value = view ? view.key : "";
  }

  function open(key) {
    close();
    if (!key) return;
    const cluster = state.cluster;
    if (key.startsWith("node:")) {
      const address = key.slice(5);
      const n = cluster && cluster.nodes.find((x) => x.address === address);
      if (!n) return;
      view = { key, title: nodeLabel(n), trainers: [], lines: [],
        nodes: [{ address, label: `node ${n.index}`, next: null, partial: "" }] };
    } else {
      const trial = focusedTrial();
      const placed = trialPlacement(cluster, trial);
      if (!trial || !placed.addresses.length) return;
      view = { key, title: `trial ${trial.id}`, trainers: placed.trainers, lines: [],
        nodes: placed.addresses.map((address) => ({ address, label: "", next: null, partial: "" })) };
      for (const n of view.nodes) {
        const at = cluster.nodes.findIndex((x) => x.address === n.address);
        n.label = `node ${at}`;
      }
    }
    el("log-trainer-only").parentNode.hidden = !view.trainers.length;
    el("log-of").textContent = "of " + view.title;
    poll();
  }

  function close() {
    if (timer) clearTimeout(timer);
    timer = null;
    view = null;
    el("log").replaceChildren();
    el("log").dataset.lines = "0";
    el("log-of").textContent = "";
    el("log-trainer-only").parentNode.hidden = true;
    say("", false);
  }

  // Appends the complete lines of `text` to the view (after what `n` had
  // begun), keeping an unfinished last line for later.
  function take(n, text, prefix) {
    const parts = (n.partial + text).split("\n");
    n.partial = parts.pop();
    for (const line of parts) view.lines.push({ prefix, text: line });
    if (view.lines.length > KEEP_LINES) view.lines.splice(0, view.lines.length - KEEP_LINES);
  }

  // One node: its tail first, then what came since, a few chunks at most.
  async function readNode(v, n, prefix) {
    // Positions shift when an earlier node is lost: found by address each time.
    const index = state.cluster ? state.cluster.nodes.findIndex((x) => x.address === n.address) : -1;
    if (index < 0) throw new Error(`${n.label} (${n.address}) is no longer in the cluster`);
    for (let i = 0; i < CHUNKS_PER_POLL; i++) {
      const offset = n.next === null ? -TAIL_BYTES : n.next;
      const c = await api(`/api/v1/nodes/${enc(index)}/log?offset=${offset}&max=${TAIL_BYTES}`);
      if (view !== v) return;
      if (n.next !== null && c.size < n.next) {  // truncated or replaced: from its tail anew
        n.next = null;
        n.partial = "";
        continue;
      }
      let text = c.text;
      if (n.next === null && c.offset > 0) text = text.slice(text.indexOf("\n") + 1);  // a cut first line
      n.next = c.next;
      v.path = c.path;
      take(n, text, prefix);
      if (c.next >= c.size || !c.text.length) return;
    }
  }

  async function poll() {
    timer = null;
    const v = view;
    if (!v || v.reading) return;
    v.reading = true;
    try {
      for (const n of v.nodes) await readNode(v, n, v.nodes.length > 1 ? `[${n.label}] ` : "");
      if (view === v) say(v.nodes.length === 1 && v.path ? v.path : "", false);
    } catch (e) {
      if (view === v) say(String(e.message || e), true);
    } finally {
      v.reading = false;
    }
    if (view !== v) return;
    render();
    if (el("log-follow").checked) timer = setTimeout(poll, POLL_MS);
  }

  // The held lines that pass the filters, the search text marked.
  function render() {
    const pre = el("log");
    if (!view) return;
    const needle = el("log-search").value;
    const lower = needle.toLowerCase();
    const trainerOnly = el("log-trainer-only").checked && view.trainers.length;
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    const shown = [];
    for (const { prefix, text } of view.lines) {
      if (trainerOnly && !view.trainers.some((t) => text.includes(t))) continue;
      if (lower && !text.toLowerCase().includes(lower)) continue;
      const div = document.createElement("div");
      div.className = "log-line";
      if (prefix) div.append(prefix);
      let from = 0;
      const l = text.toLowerCase();
      for (let at = lower ? l.indexOf(lower) : -1; at >= 0; at = l.indexOf(lower, from)) {
        div.append(text.slice(from, at));
        const mark = document.createElement("mark");
        mark.textContent = text.slice(at, at + needle.length);
        div.appendChild(mark);
        from = at + needle.length;
      }
      div.append(text.slice(from));
      shown.push(div);
    }
    pre.replaceChildren(...shown);
    pre.dataset.lines = String(shown.length);
    if (atBottom || shown.length < 50) pre.scrollTop = pre.scrollHeight;
  }

  // The experiment changed: a trial's logs are no longer the ones chosen.
  function trialGone() {
    if (view && view.key.startsWith("trial:")) close();
  }

  el("log-source").onchange = (ev) => open(ev.target.value);
  el("log-search").oninput = render;
  el("log-trainer-only").onchange = render;
  el("log-follow").onchange = () => { if (el("log-follow").checked && view && !timer) poll(); };

  return { renderChoices, trialGone, open, lines: () => (view ? view.lines.length : 0) };
})();

// The focused trial's checkpoints and its failures and restarts, from
// GET /api/v1/trials/{id}/checkpoints and /events (docs/dashboard.md).
// app.js calls trialDetails.refresh(trial) on each poll and
// trialDetails.reset() when the experiment changes. Plain script, no build
// step; uses api(), enc() and state from app.js, cell() and fmt() from common.js.
"use strict";

const trialDetails = (() => {
  let shownFor = null;     // the trial id the tables hold
  let finishedFor = null;  // a trial that had ended when last read: nothing more to fetch

  function time(t) {
    return typeof t === "number" && t > 0 ? new Date(t * 1000).toLocaleString() : "";
  }

  // The document at trials/{id}/{what}, or null when there is no such
  // trial (its experiment was deleted meanwhile).
  async function optional(id, what) {
    try {
      return await api(`/api/v1/trials/${enc(id)}/${what}`);
    } catch (e) {
      if (e.status !== 404) throw e;
      return null;
    }
  }

  function note(id, text) {
    const p = document.getElementById(id);
    p.textContent = text;
    p.hidden = !text;
  }

  function showCheckpoints(doc) {
    const rows = doc ? doc.checkpoints : [];
    const body = document.querySelector("#checkpoints tbody");
    body.replaceChildren();
    for (const c of rows) {
      const row = document.createElement("tr");
      row.dataset.epoch = c.epoch;
      if (!c.valid) row.className = "invalid";
      for (const v of [c.epoch, c.metric, c.valid ? "yes" : "no", time(c.time), c.path]) cell(row, v);
      body.appendChild(row);
    }
    note("checkpoints-note", doc && !rows.length ? "No checkpoint was written yet." : "");
  }

  function showEvents(doc) {
    const events = doc ? doc.events : [];
    const list = document.getElementById("events");
    list.replaceChildren();
    for (const ev of events) {
      const li = document.createElement("li");
      li.dataset.kind = ev.kind;
      li.className = "event " + String(ev.kind).replace(/[^a-z_]/gi, "");
      const when = document.createElement("span");
      when.className = "when";
      when.textContent = `${time(ev.time)}, epoch ${fmt(ev.epoch)}: `;
      const what = document.createElement("b");
      what.textContent = ev.kind;
      li.append(when, what, document.createTextNode(ev.message ? " — " + ev.message : ""));
      list.appendChild(li);
    }
    note("events-note", doc && !events.length ? "No failure or restart." : "");
  }

  async function refresh(trial) {
    const section = document.getElementById("details");
    section.hidden = trial === null;
    if (trial === null) { shownFor = finishedFor = null; return; }
    document.getElementById("details-of").textContent = `of trial ${trial.id} (${trial.state})`;
    const running = /running|pending|created/.test(String(trial.state).toLowerCase());
    if (running && finishedFor === trial.id) finishedFor = null;  // resumed: read it again
    if (finishedFor === trial.id) return;
    const [checkpoints, events] = [await optional(trial.id, "checkpoints"), await optional(trial.id, "events")];
    if (state.focus !== trial.id) return;  // another trial was focused meanwhile
    shownFor = trial.id;
    showCheckpoints(checkpoints);
    showEvents(events);
    finishedFor = running ? null : trial.id;
  }

  function reset() {
    shownFor = finishedFor = null;
    document.getElementById("details").hidden = true;
    document.querySelector("#checkpoints tbody").replaceChildren();
    document.getElementById("events").replaceChildren();
  }

  return { refresh, reset, shown: () => shownFor };
})();

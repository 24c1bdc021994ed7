// The focused trial's checkpoints and its failures and restarts, from
// GET /api/v1/trials/{id}/checkpoints and /events (README, "Dashboard").
// A head without those routes answers 404 "no such path": then the view
// says so and the page stops asking it (one 404 per route, not one per
// poll). app.js calls trialDetails.refresh(trial) on each poll and
// trialDetails.reset() when the experiment changes. Plain script, no build
// step; uses api(), enc() and state from app.js, cell() and fmt() from common.js.
"use strict";

const trialDetails = (() => {
  // Routes this head does not serve (404 "no such path"): not asked again.
  const absent = new Set();
  let shownFor = null;     // the trial id the tables hold
  let finishedFor = null;  // a trial that had ended when last read: nothing more to fetch

  function time(t) {
    return typeof t === "number" && t > 0 ? new Date(t * 1000).toLocaleString() : "";
  }

  // The document at trials/{id}/{what}, or null when the head has no such
  // route (or no such trial); a 404 of the route itself is remembered.
  async function optional(id, what) {
    if (absent.has(what)) return null;
    try {
      return await api(`/api/v1/trials/${enc(id)}/${what}`);
    } catch (e) {
      if (e.status !== 404) throw e;
      if (/no such path/.test(e.message)) absent.add(what);
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
    document.getElementById("checkpoints").hidden = absent.has("checkpoints");
    note("checkpoints-note", absent.has("checkpoints") ? "This head does not list checkpoints."
      : doc && !rows.length ? "No checkpoint was written yet." : "");
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
    note("events-note", absent.has("events") ? "This head does not list failures and restarts."
      : doc && !events.length ? "No failure or restart." : "");
  }

  async function refresh(trial) {
    const section = document.getElementById("details");
    section.hidden = trial === null;
    if (trial === null) { shownFor = finishedFor = null; return; }
    document.getElementById("details-of").textContent = `of trial ${trial.id} (${trial.state})`;
    if (finishedFor === trial.id) return;
    const [checkpoints, events] = [await optional(trial.id, "checkpoints"), await optional(trial.id, "events")];
    if (state.focus !== trial.id) return;  // another trial was focused meanwhile
    shownFor = trial.id;
    showCheckpoints(checkpoints);
    showEvents(events);
    const running = /running|pending|created/.test(String(trial.state).toLowerCase());
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

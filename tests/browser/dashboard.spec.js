// The dashboard in a real browser: Debian's Chromium, headless, driven by
// playwright-core (tools/browser, installed by tools/install-deps.sh).
// Started by the dashboard_browser suite (tests/dashboard/dashboard_browser_test.cpp)
// against a head with a node and a sweep running, and an earlier sweep in
// its store; it asserts what a person
// would look for and exits 0, or prints why not and exits 1.
//
// Environment:
//   DTRAIN_DASHBOARD_URL  the page with ?token=
//   DTRAIN_NODE_ADDRESS   the node the cluster view must list
//   DTRAIN_NODE_LOG_TEXT  text of a line of that node's log
//   DTRAIN_SCREENSHOT     where to write the PNG
//   DTRAIN_CHROMIUM       the browser (default /usr/bin/chromium)
//   DTRAIN_BROWSER_PID_FILE  where to write Chromium's pid (optional)
// NODE_PATH points at tools/browser/node_modules.
"use strict";

const fs = require("fs");
const { chromium } = require("playwright-core");

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

function check(ok, what) {
  if (!ok) throw new Error("FAILED: " + what);
  console.log("ok: " + what);
}

// The cluster view lists the node, with its 2 slots, alive, and the sweep's trainers.
async function checkCluster(page, nodeAddress) {
  const nodeRow = page.locator(`#nodes tbody tr[data-node-address="${nodeAddress}"]`);
  await nodeRow.waitFor();
  check(/\/2$/.test(await nodeRow.locator("td.slots").innerText()),
    `the cluster view lists node ${nodeAddress} with 2 slots`);
  const liveness = await nodeRow.locator("td.liveness").innerText();
  check(/^alive, heard \d+ s ago$/.test(liveness) && (await nodeRow.getAttribute("data-liveness")) === "alive",
    `its liveness column says "${liveness}"`);
  await page.locator("#trainers li[data-trainer]").first().waitFor();
  check(true, "the cluster view lists the sweep's trainers");
}

// The trial table fills; a running trial's curve gains points while it
// trains (two reads of what the page holds, and its chart draws them).
async function checkTrialsAndCurves(page) {
  await page.waitForFunction(() => document.querySelectorAll("#trials tbody tr[data-trial-id]").length >= 2);
  const trials = await page.locator("#trials tbody tr[data-trial-id]").count();
  check(trials >= 2, `the trial table lists ${trials} trials`);

  const running = page.locator('#trials tbody tr[data-state="running"]').first();
  await running.waitFor();
  const id = await running.getAttribute("data-trial-id");
  await running.locator("td").nth(1).click();
  const points = () => page.evaluate((t) => window.dtrainDashboard.curvePoints(t), id);
  await page.waitForFunction((t) => window.dtrainDashboard.curvePoints(t) >= 1, id);
  const first = await points();
  await page.waitForFunction(([t, n]) => window.dtrainDashboard.curvePoints(t) > n, [id, first],
    { timeout: 90000 });
  const second = await points();
  check(second > first, `trial ${id}'s curve grew from ${first} to ${second} epochs while it ran`);
  const drawn = await page.locator("#charts .chart[data-points]").first().getAttribute("data-points");
  check(Number(drawn) > 0, `its chart draws ${drawn} points`);
}

// The sweep's scatter, two trials overlaid, and a header click that sorts.
async function checkSweepOverlayAndSort(page) {
  await page.waitForFunction(() => {
    const chart = document.querySelector("#sweep:not([hidden]) #scatter .chart");
    return chart && Number(chart.dataset.points) >= 1;
  });
  check(true, `the sweep view plots ${await page.locator("#scatter-param").inputValue()} against the metric`);

  // (A click re-renders the table, so no .check(): it would look at the old box.)
  for (const n of [0, 1]) {
    const box = page.locator("#trials tbody tr[data-trial-id] input.select-trial").nth(n);
    if (!(await box.isChecked())) await box.click();
  }
  await page.waitForFunction(() => window.dtrainDashboard.selectedTrials().length >= 2);
  await page.waitForFunction(() => (document.getElementById("charts").dataset.trials || "").split(" ").length >= 2);
  check(true, "two trials overlaid in the curves");

  await page.locator('#trials th[data-sort="id"]').click();
  const ids = await page.locator("#trials tbody tr[data-trial-id]").evaluateAll(
    (rows) => rows.map((r) => r.dataset.trialId));
  check(ids.join() === [...ids].sort().reverse().join(), "a header click sorts the trials (id, descending)");
}

// The log view: the node's log shows its lines (the tail, read through the
// head), and the search box keeps only the lines with its text, marked.
async function checkLogs(page, nodeAddress, logText) {
  await page.locator("#log-source").selectOption(`node:${nodeAddress}`);
  const line = page.locator("#log .log-line", { hasText: logText }).first();
  await line.waitFor({ timeout: 30000 });
  const lines = Number(await page.locator("#log").getAttribute("data-lines"));
  check(lines >= 1, `the log view shows ${lines} lines of node ${nodeAddress}'s log, "${logText}" among them`);
  await page.locator("#log-search").fill(logText);
  const shown = await page.locator("#log .log-line").evaluateAll((ls) => ls.map((l) => l.textContent));
  const marked = await page.locator("#log .log-line mark").count();
  check(shown.length >= 1 && shown.length <= lines && shown.every((l) => l.includes(logText)) && marked >= shown.length,
    `the search box keeps the ${shown.length} lines with "${logText}", marked`);
  await page.locator("#log-search").fill("");
}

// The focused trial's checkpoints and failures view is shown, and lists
// the checkpoints its trial wrote (one per epoch) as it trains.
async function checkDetails(page) {
  await page.locator("#details:not([hidden])").waitFor();
  const of = await page.locator("#details-of").innerText();
  check(/^of trial \d+-/.test(of), `the checkpoints and failures view shows ${of}`);
  await page.locator("#checkpoints tbody tr").first().waitFor();
  const epochs = await page.locator("#checkpoints tbody tr").evaluateAll((rs) => rs.map((r) => r.dataset.epoch));
  check(epochs.length >= 1 && epochs.every((e) => Number(e) >= 1), `the checkpoints view lists epochs ${epochs}`);
}

// Two experiments ticked: the comparison shows a row for each and one
// chart with the best trials of both overlaid (the stored sweep's two and
// the running sweep's trials with a value), coloured by experiment.
async function checkCompare(page) {
  const boxes = page.locator("#experiments tbody tr[data-experiment-id] input.compare-experiment");
  await page.waitForFunction(() => document.querySelectorAll("#experiments tbody tr[data-experiment-id]").length >= 2);
  for (const n of [0, 1]) {
    const box = boxes.nth(n);
    if (!(await box.isChecked())) await box.click();
  }
  await page.locator("#compare:not([hidden])").waitFor();
  await page.waitForFunction(() => document.querySelectorAll("#compare-table tbody tr[data-experiment-id]").length === 2);
  await page.waitForFunction(() => {
    const chart = document.querySelector("#compare-charts .chart");
    const host = document.getElementById("compare-charts");
    return chart && Number(chart.dataset.points) >= 3 && Number(host.dataset.series) >= 3;
  }, null, { timeout: 90000 });
  const series = await page.locator("#compare-charts").getAttribute("data-series");
  const points = await page.locator("#compare-charts .chart").first().getAttribute("data-points");
  const ids = await page.locator("#compare-table tbody tr").evaluateAll((rs) => rs.map((r) => r.dataset.experimentId));
  const counts = await page.locator("#compare-table tbody tr").evaluateAll((rs) => rs.map((r) => Number(r.cells[3].textContent)));
  check(ids.length === 2 && ids[0] !== ids[1] && counts.every((n) => n >= 2),
    `experiments ${ids.join(" and ")} (${counts.join(" and ")} trials) compared: ${series} best trials' curves overlaid, ${points} points`);
}

// The importance section of the selected sweep: a ranking once two trials
// completed, until then the reason (fewer than two completed trials).
async function checkImportance(page) {
  await page.locator("#importance-section:not([hidden])").waitFor();
  await page.waitForFunction(() => document.getElementById("importance-note").textContent !== "");
  const note = await page.locator("#importance-note").innerText();
  const rows = await page.locator("#importance tbody tr").count();
  check(/completed trials/.test(note) && (rows > 0 || /needs at least 2/.test(note)),
    `the importance section shows ${rows} ranked hyperparameters: ${note}`);
}

// The earlier two-objective sweep clicked: its Pareto set is drawn, three
// of its four trials (the fourth is dominated).
async function checkPareto(page) {
  const earlier = page.locator("#experiments tbody tr[data-experiment-id]", { hasText: "earlier-sweep" });
  await earlier.locator("td").nth(2).click();
  await page.locator("#pareto-section:not([hidden])").waitFor();
  await page.waitForFunction(() => Number(document.getElementById("pareto-chart").dataset.trials) === 4);
  const front = (await page.locator("#pareto-chart").getAttribute("data-pareto")).split(" ");
  check(front.length === 3 && !front.some((k) => k.endsWith("-00004")),
    `the two-objective sweep's Pareto set is drawn: ${front.join(", ")} of 4 trials`);
}

async function main() {
  const url = env("DTRAIN_DASHBOARD_URL");
  const nodeAddress = env("DTRAIN_NODE_ADDRESS");
  const logText = env("DTRAIN_NODE_LOG_TEXT");
  const screenshot = env("DTRAIN_SCREENSHOT");
  const args = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"];
  // Chromium's sandbox refuses to start as root.
  if (process.getuid && process.getuid() === 0) args.push("--no-sandbox");
  // A browser server rather than launch(): its process() gives Chromium's
  // pid, which the C++ side kills (with its process group) should this
  // script die before closing it.
  const server = await chromium.launchServer({
    executablePath: process.env.DTRAIN_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args,
    timeout: 60000,
  });
  if (process.env.DTRAIN_BROWSER_PID_FILE)
    fs.writeFileSync(process.env.DTRAIN_BROWSER_PID_FILE, String(server.process().pid) + "\n");
  const browser = await chromium.connect(server.wsEndpoint());
  const problems = [];
  let page = null;
  try {
    page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
    page.setDefaultTimeout(60000);
    page.on("console", (m) => { if (m.type() === "error") problems.push("console: " + m.text()); });
    page.on("pageerror", (e) => problems.push("pageerror: " + e.message));
    await page.goto(url);
    await checkCluster(page, nodeAddress);
    await checkTrialsAndCurves(page);
    await checkDetails(page);
    await checkLogs(page, nodeAddress, logText);
    await checkSweepOverlayAndSort(page);
    await checkCompare(page);
    await checkImportance(page);
    await checkPareto(page);
    await page.waitForTimeout(2500);  // one more poll, so the picture is current
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log("screenshot: " + screenshot);
    check(problems.length === 0, "no console errors" + (problems.length ? ": " + problems.join(" | ") : ""));
  } catch (e) {
    // The page as it was when a check failed, for the person reading why.
    if (page) await page.screenshot({ path: screenshot, fullPage: true }).catch(() => {});
    throw e;
  } finally {
    await browser.close();
    await server.close();
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(String(e && e.stack ? e.stack : e));
  process.exit(1);
});

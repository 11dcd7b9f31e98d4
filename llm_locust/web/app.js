/* llm-locust live page: polls llm/stats every 2 s, keeps the server's history client-side,
   fills the tiles and tables, redraws the charts. */
"use strict";

const MAX_POINTS = 450;
const COLORS = { p50: "#4fc3f7", p95: "#ffb74d", p99: "#e57373", tokens: "#81c784", users: "#ba68c8", inflight: "#4fc3f7" };
const LATENCIES = ["ttft", "tpot", "itl", "e2e"];
const points = [];
let lastT = null;
const charts = {};

function ms(v) { return v === null || v === undefined ? null : v * 1000; }
function setText(id, text) { const el = document.getElementById(id); if (el) el.textContent = text; }

function fillTable(id, rows) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren(...rows.map((cells) => {
    const tr = document.createElement("tr");
    for (const c of cells) { const td = document.createElement("td"); td.textContent = c; tr.appendChild(td); }
    return tr;
  }));
}

/* While a test runs the tiles show the last 30 s; once it has ended, the whole run from its
   summary (a trailing window would only decay towards 0 after the stop). */
function renderTiles(run, snap, result) {
  const recent = snap.recent;
  if (result) {
    setText("rate-scope", `whole run, measured requests (as summary.json), ${formatNumber(result.duration)} s`);
    setText("v-tokens-per-s", formatNumber(result.output_throughput));
    setText("v-requests-per-s", formatNumber(result.request_throughput));
    setText("v-completed", String(result.completed));
    setText("v-failed", String(result.failed));
    for (const name of LATENCIES) {
      const key = `median_${name === "e2e" ? "e2el" : name}_ms`;
      setText(`v-${name}-p50`, formatNumber(result[key]));
    }
  } else {
    setText("rate-scope", "last 30 s of finished requests");
    setText("v-tokens-per-s", formatNumber(recent.output_tokens_per_s));
    setText("v-requests-per-s", formatNumber(recent.requests_per_s));
    setText("v-completed", String(snap.totals.completed));
    setText("v-failed", String(snap.totals.failed));
    for (const name of LATENCIES) setText(`v-${name}-p50`, formatNumber(ms(recent.latency[name].p50)));
  }
  setText("v-users", String(run.users));
  setText("v-in-flight", String(run.in_flight));
}

/* The answer once a test has ended: the SLO verdict, the capacity sentence, each stage. */
function renderAnswer(result) {
  const box = document.getElementById("answer");
  box.hidden = !result;
  if (!result) return;
  const verdict = document.getElementById("verdict");
  verdict.textContent = result.slo_passed === null ? "No SLO" : `SLO: ${result.slo_passed ? "PASS" : "FAIL"}`;
  verdict.className = result.slo_passed === null ? "" : (result.slo_passed ? "pass" : "fail");
  let text = result.capacity || "";
  if (result.interrupted_by) text += ` (interrupted by ${result.interrupted_by})`;
  setText("capacity", text);
  fillTable("stages", result.stages.map((s) => [s.label, s.verdict || "-", s.completed,
    formatNumber(s.request_throughput), formatNumber(s.p95_ttft_ms), s.invalid_reason || ""]));
}

function render(data) {
  const run = data.run, snap = data.snapshot;
  setText("model", run.model || "-");
  setText("target", run.target || "-");
  setText("run-id", run.run_id || "-");
  setText("state", run.state || "-");
  setText("stage", run.stage >= 0 ? `${run.stage}${run.stage_label ? " (" + run.stage_label + ")" : ""}` : "-");
  renderTiles(run, snap, data.result);
  renderAnswer(data.result);
  const errs = Object.keys(snap.errors);
  fillTable("errors", errs.length ? errs.map((k) => [k, snap.errors[k], snap.recent.errors[k] || 0]) : [["none", 0, 0]]);
  fillTable("overall", LATENCIES.map((name) => {
    const s = snap.latency[name];
    return [name.toUpperCase(), formatNumber(ms(s.p50)), formatNumber(ms(s.p95)), formatNumber(ms(s.p99)),
      formatNumber(ms(s.mean)), s.count];
  }));
  setText("updated", "updated " + new Date(snap.time * 1000).toTimeString().slice(0, 8));
}

function drawCharts() {
  const times = points.map((p) => p.t);
  for (const name of LATENCIES) {
    const q = (i) => points.map((p) => (p[name] ? ms(p[name][i]) : null));
    charts[name].draw(times, [
      { label: "p50", color: COLORS.p50, values: q(0) },
      { label: "p95", color: COLORS.p95, values: q(1) },
      { label: "p99", color: COLORS.p99, values: q(2) },
    ]);
  }
  charts.tokens.draw(times, [{ label: "tokens/s", color: COLORS.tokens, values: points.map((p) => p.tokens_per_s) }]);
  charts.load.draw(times, [
    { label: "users", color: COLORS.users, values: points.map((p) => p.users) },
    { label: "in flight", color: COLORS.inflight, values: points.map((p) => p.in_flight) },
  ]);
}

async function poll() {
  try {
    const url = "llm/stats" + (lastT === null ? "" : `?since=${lastT}`);
    const response = await fetch(url, { cache: "no-store" });
    if (response.ok) {
      const data = await response.json();
      for (const p of data.history) points.push(p);
      if (points.length > MAX_POINTS) points.splice(0, points.length - MAX_POINTS);
      if (points.length) lastT = points[points.length - 1].t;
      render(data);
      drawCharts();
    }
  } catch (err) {
    setText("updated", "not reachable: " + err);
  }
  setTimeout(poll, 2000);
}

window.addEventListener("load", () => {
  for (const id of [...LATENCIES, "tokens", "load"]) charts[id] = new LineChart(document.getElementById(`c-${id}`));
  window.addEventListener("resize", drawCharts);
  poll();
});

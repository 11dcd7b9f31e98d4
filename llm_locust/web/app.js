/* llm-locust live page: polls llm/stats every 2 s, keeps the server's history client-side,
   fills the tiles and tables, and hands the charts to Apache ECharts (the same vendored
   library as report.html): hover values, axis titles, stage starts and SLO thresholds. */
"use strict";

const MAX_POINTS = 450;
const COLORS = { p50: "#4fc3f7", p95: "#ffb74d", p99: "#e57373", tokens: "#81c784", users: "#ba68c8", inflight: "#4fc3f7" };
const LATENCIES = ["ttft", "tpot", "itl", "e2e"];
const TITLES = { ttft: "Time to first token", tpot: "Time per output token", itl: "Inter-token latency", e2e: "End-to-end latency" };
const points = [];
let lastT = null;
let test = null;  // the server's test number: a new test starts its series, tiles and verdict anew
let marks = { slo: [], stages: [] };
const charts = {};

function ms(v) { return v === null || v === undefined ? null : v * 1000; }

function formatNumber(v) {
  if (v === null || v === undefined || !isFinite(v)) return "-";
  const a = Math.abs(v);
  if (Number.isInteger(v) && a < 1e4) return String(v);
  if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  return v.toFixed(2);
}
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
    const span = result.measured_span;
    const of = span && span.excluded_s > 0 ? ` measured of ${formatNumber(span.test_seconds)} s` : "";
    setText("rate-scope", `whole run, measured requests (as summary.json), ${formatNumber(result.duration)} s${of}`);
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
  const judged = result.slo_verdict || (result.slo_passed ? "pass" : "fail");
  verdict.textContent = result.slo_passed === null ? "No SLO"
    : judged === "inconclusive" ? `SLO: INCONCLUSIVE (point estimate ${result.slo_passed ? "PASS" : "FAIL"})`
    : `SLO: ${judged.toUpperCase()}`;
  if (result.slo_passed !== null && result.slo_reason) verdict.textContent += `: ${result.slo_reason}`;
  verdict.className = result.slo_passed === null ? "" : judged;
  let text = result.capacity || "";
  if (result.interrupted_by) text += ` (interrupted by ${result.interrupted_by})`;
  setText("capacity", text);
  fillTable("stages", result.stages.map((s) => [s.label, s.verdict || "-", s.completed,
    formatNumber(s.request_throughput), formatNumber(s.p95_ttft_ms), s.invalid_reason || s.why || ""]));
}

/* A capacity search: a row per judged step as the search decides it, and its answer once it stopped;
   against a sped-up target in deployment time, as the note above the table says. */
function renderSearch(search) {
  const box = document.getElementById("search");
  box.hidden = !search;
  if (!search) return;
  setText("search-running", search.running ? `running ${search.running}` : "stopped");
  setText("search-clock", search.clock ? search.clock.note : "");  // a sped-up target: deployment time
  fillTable("probes", search.probes.map((p, i) => [i + 1, p.label, formatNumber(p.request_throughput),
    formatNumber(p.ttft_p95_s), formatNumber(p.e2e_p95_s),
    p.success === null ? "-" : (p.success * 100).toFixed(2) + " %", p.verdict, p.term || "",
    `${p.runs_on} / ${p.extensions}`, p.reason || ""]));
  const a = search.answer;  // as it forms: from the first judged step, final once the search stopped
  setText("search-answer", a ? `${a.final ? "" : "so far: "}highest pass: ${a.highest_pass || "none"}; `
    + `lowest fail: ${a.lowest_fail || "none"}`
    + `${a.upper && a.upper !== a.lowest_fail ? "; lowest not shown to pass: " + a.upper : ""}`
    + (a.final ? `; stopped: ${a.stop}` : " (the search goes on)") : "");
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
  renderSearch(data.search);
  const errs = Object.keys(snap.errors);
  fillTable("errors", errs.length ? errs.map((k) => [k, snap.errors[k], snap.recent.errors[k] || 0]) : [["none", 0, 0]]);
  fillTable("overall", LATENCIES.map((name) => {
    const s = snap.latency[name];
    return [name.toUpperCase(), formatNumber(ms(s.p50)), formatNumber(ms(s.p95)), formatNumber(ms(s.p99)),
      formatNumber(ms(s.mean)), s.count];
  }));
  setText("updated", "updated " + new Date(snap.time * 1000).toTimeString().slice(0, 8));
}

/* Vertical dotted lines where each stage started; dashed red lines at the SLO thresholds
   of this latency (any statistic: the label says which). */
function markLines(name) {
  const data = marks.stages.map((st) => ({ xAxis: st.t * 1000, name: st.label,
    lineStyle: { color: "#8b95a5", type: "dotted" }, label: { formatter: "{b}", color: "#8b95a5", position: "insideEndTop" } }));
  for (const line of marks.slo) {
    if (line.metric === name) data.push({ yAxis: line.threshold * 1000, name: line.objective,
      lineStyle: { color: "#e57373", type: "dashed" }, label: { formatter: "SLO {b}", color: "#e57373", position: "insideEndTop" } });
  }
  return { symbol: "none", silent: true, data };
}

function roundUp(v) {
  const step = Math.pow(10, Math.floor(Math.log10(v)) - 1);
  return Math.ceil(v / step - 1e-9) * step;
}

/* The y axis reaches the highest SLO threshold of the chart, so its line is always in view. */
function chartOption(title, unit, series, name) {
  const top = Math.max(0, ...marks.slo.filter((l) => l.metric === name).map((l) => l.threshold * 1000));
  return {
    backgroundColor: "transparent",
    animation: false,
    title: { text: title, left: 8, top: 4, textStyle: { fontSize: 13, color: "#e6e9ee" } },
    tooltip: { trigger: "axis", valueFormatter: (v) => `${formatNumber(v)} ${unit}` },
    legend: { right: 8, top: 4, textStyle: { color: "#8b95a5" } },
    grid: { left: 60, right: 20, top: 36, bottom: 40 },
    xAxis: { type: "time", name: "time", nameLocation: "middle", nameGap: 26 },
    yAxis: { type: "value", name: unit, nameLocation: "middle", nameGap: 44, min: 0,
      axisLabel: { formatter: (v) => formatNumber(v) }, max: top > 0 ? (v) => roundUp(Math.max(v.max, top * 1.1)) : null },
    series: series.map((s) => ({ type: "line", showSymbol: false, connectNulls: false, ...s })),
  };
}

function drawCharts() {
  const at = (p, v) => [p.t * 1000, v];
  for (const name of LATENCIES) {
    const q = (i) => points.map((p) => at(p, p[name] ? ms(p[name][i]) : null));
    charts[name].setOption(chartOption(`${TITLES[name]} (last 30 s)`, "ms", [
      { name: "p50", data: q(0), itemStyle: { color: COLORS.p50 } },
      { name: "p95", data: q(1), itemStyle: { color: COLORS.p95 }, markLine: markLines(name) },
      { name: "p99", data: q(2), itemStyle: { color: COLORS.p99 } },
    ], name), true);
  }
  charts.tokens.setOption(chartOption("Output tokens/s", "tok/s", [
    { name: "tokens/s", data: points.map((p) => at(p, p.tokens_per_s)), itemStyle: { color: COLORS.tokens }, markLine: markLines("tokens") },
  ]), true);
  charts.load.setOption(chartOption("Users and requests in flight", "requests", [
    { name: "users", data: points.map((p) => at(p, p.users)), itemStyle: { color: COLORS.users }, markLine: markLines("load") },
    { name: "in flight", data: points.map((p) => at(p, p.in_flight)), itemStyle: { color: COLORS.inflight } },
  ]), true);
  recordState();
}

/* What ECharts holds, for tests and the curious: series, points and marks per chart. */
function recordState() {
  const state = {};
  for (const [id, chart] of Object.entries(charts)) {
    const series = chart.getOption().series;
    state[id] = { series: series.length, points: series.reduce((n, s) => n + s.data.filter((d) => d[1] !== null).length, 0),
      marks: series.reduce((n, s) => n.concat(((s.markLine || {}).data || []).map((m) => m.name)), []) };
  }
  document.body.dataset.charts = JSON.stringify(state);
}

async function poll() {
  try {
    const url = "llm/stats" + (lastT === null ? "" : `?since=${lastT}`);
    const response = await fetch(url, { cache: "no-store" });
    if (response.ok) {
      const data = await response.json();
      if (test !== null && data.run.test !== test) points.length = 0;  // the server cleared its history too
      test = data.run.test;
      for (const p of data.history) points.push(p);
      marks = data.marks || marks;
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
  for (const id of [...LATENCIES, "tokens", "load"]) charts[id] = echarts.init(document.getElementById(`c-${id}`), "dark");
  window.addEventListener("resize", () => Object.values(charts).forEach((c) => c.resize()));
  poll();
});

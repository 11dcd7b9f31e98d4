/* llm-locust report.html: hands each chart's option to ECharts and records what it drew.
   Inlined into the page by llm_locust/report/html.py (the page loads nothing). */
"use strict";
(function () {
  const errors = [];
  const errorBox = document.getElementById("js-errors");
  const note = (msg) => { errors.push(String(msg)); errorBox.textContent = JSON.stringify(errors); };
  window.addEventListener("error", (e) => note(e.message));
  const consoleError = console.error;
  console.error = function (...args) { note(args.join(" ")); consoleError.apply(console, args); };

  // [x, low, high, flags]: flags 1 = no lower bound (dashed down to the axis), 2 = no upper
  // bound (a dashed stub pointing up from the lower bound: too few requests to bound it)
  function errorbar(params, api) {
    const x = api.value(0), flags = api.value(3) || 0, box = params.coordSys;
    const low = flags & 1 ? [api.coord([x, api.value(2)])[0], box.y + box.height] : api.coord([x, api.value(1)]);
    const high = flags & 2 ? [low[0], Math.max(box.y, low[1] - 36)] : api.coord([x, api.value(2)]);
    const style = { stroke: api.visual("color"), lineWidth: 1.5 };
    const dashed = { ...style, lineDash: [4, 3] };
    const cap = (p) => ({ type: "line", shape: { x1: p[0] - 5, y1: p[1], x2: p[0] + 5, y2: p[1] }, style });
    const kids = [{ type: "line", shape: { x1: low[0], y1: low[1], x2: high[0], y2: high[1] }, style: flags ? dashed : style }];
    if (!(flags & 1)) kids.push(cap(low));
    if (!(flags & 2)) kids.push(cap(high));
    return { type: "group", children: kids };
  }

  const data = JSON.parse(document.getElementById("report-data").textContent);
  const state = {};
  const charts = [];
  for (const el of document.querySelectorAll(".chart")) {
    const option = data.charts[el.dataset.key];
    for (const s of option.series) if (s.renderItem === "errorbar") s.renderItem = errorbar;
    const chart = echarts.init(el, null, { renderer: "canvas" });
    chart.setOption(option);
    charts.push(chart);
    const series = chart.getOption().series.map((s) => ({ name: s.name, type: s.type, points: (s.data || []).length, data: s.data }));
    let drawn = null;
    try { drawn = chart.getZr().storage.getDisplayList().length; } catch (e) { drawn = null; }
    el.dataset.series = String(series.length);
    el.dataset.points = String(series.reduce((n, s) => n + s.points, 0));
    state[el.dataset.key] = { title: option.title.text, series, drawn };
  }
  const box = document.getElementById("echarts-state");
  box.textContent = JSON.stringify(state);
  // what the page fetched besides itself: nothing, when it is self-contained
  box.dataset.resources = JSON.stringify(performance.getEntriesByType("resource").map((e) => e.name));
  window.addEventListener("resize", () => charts.forEach((c) => c.resize()));
})();

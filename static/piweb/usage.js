// Usage charts (uPlot, vendored in static/vendor/uplot/): the session page's context
// chart and the dashboard's stacked daily bars. No inline script: each chart's data
// comes from a json_script element named by the container's data-source attribute.
(function () {
  "use strict";

  // Colours come from the theme's tokens (static/piweb/tokens.css), read when a chart is
  // drawn; the charts are drawn again when the theme changes.
  function token(name) {
    return getComputedStyle(document.documentElement).getPropertyValue("--" + name).trim();
  }
  function palette() {
    var colours = [];
    for (var i = 1; i <= 9; i++) colours.push(token("chart-" + i));
    return colours;
  }
  function axis(extra) {
    var grid = token("chart-grid");
    var base = { stroke: token("chart-axis"), grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    for (var k in extra) base[k] = extra[k];
    return base;
  }

  function readData(el) {
    var node = document.getElementById(el.dataset.source);
    return node ? JSON.parse(node.textContent) : null;
  }

  function fmtTokens(v) {
    if (v == null) return "–";
    var a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(1) + "B";
    if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (a >= 1e3) return (v / 1e3).toFixed(1) + "k";
    return String(Math.round(v));
  }

  function fmtCost(v) {
    if (v == null) return "–";
    if (v === 0) return "$0";
    return "$" + (Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(4));
  }

  function width(el) { return Math.max(320, el.clientWidth || 640); }

  function column(n) { var a = new Array(n); for (var i = 0; i < n; i++) a[i] = null; return a; }

  function markers() { return function () { return null; }; }

  function contextChart(el, data) {
    var seen = {};
    function note(item) { seen[item.index] = true; }
    data.points.forEach(note);
    data.compactions.forEach(note);
    data.branchSummaries.forEach(note);
    data.modelChanges.forEach(note);
    var x = Object.keys(seen).map(Number).sort(function (a, b) { return a - b; });
    var at = {};
    x.forEach(function (v, i) { at[v] = i; });
    var n = x.length;
    var context = column(n), estimated = column(n), windowLine = column(n), threshold = column(n);
    var before = column(n), summaries = column(n), changes = column(n), ids = new Array(n);
    data.points.forEach(function (p) {
      var i = at[p.index];
      context[i] = p.tokens; windowLine[i] = p.window; threshold[i] = p.threshold; ids[i] = p.id;
      if (p.estimated) estimated[i] = p.tokens;
    });
    data.compactions.forEach(function (c) {
      var i = at[c.index];
      before[i] = c.before; context[i] = c.after; ids[i] = ids[i] || c.id;
    });
    // Branch summaries and model changes sit at the context as it stood there.
    var level = new Array(n), last = 0;
    for (var i = 0; i < n; i++) {
      if (context[i] != null) last = context[i];
      level[i] = last;
    }
    data.branchSummaries.forEach(function (b) { var j = at[b.index]; summaries[j] = b.tokens; ids[j] = ids[j] || b.id; });
    data.modelChanges.forEach(function (m) { var j = at[m.index]; changes[j] = level[j]; ids[j] = ids[j] || m.id; });
    var PALETTE = palette();
    var surface = token("surface");
    var opts = {
      width: width(el),
      height: 200,
      scales: { x: { time: false } },
      axes: [
        axis({ label: "entry # on the branch", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000] }),
        axis({ size: 60, values: function (u, vals) { return vals.map(fmtTokens); } }),
      ],
      legend: { live: true },
      cursor: { points: { size: 10 } },
      series: [
        { label: "entry #" },
        { label: "context", stroke: PALETTE[0], width: 2, spanGaps: true, points: { show: true, size: 6, fill: PALETTE[0] }, value: function (u, v) { return fmtTokens(v); } },
        { label: "estimated", stroke: PALETTE[0], fill: surface, paths: markers(), points: { show: true, size: 9, fill: surface }, value: function (u, v) { return fmtTokens(v); } },
        { label: "window", stroke: PALETTE[8], dash: [6, 4], spanGaps: true, points: { show: false }, value: function (u, v) { return fmtTokens(v); } },
        { label: "threshold", stroke: PALETTE[1], dash: [3, 3], spanGaps: true, points: { show: false }, value: function (u, v) { return fmtTokens(v); } },
        { label: "compaction (before)", stroke: PALETTE[3], paths: markers(), points: { show: true, size: 12, fill: PALETTE[3] }, value: function (u, v) { return fmtTokens(v); } },
        { label: "branch summary", stroke: PALETTE[4], paths: markers(), points: { show: true, size: 11, fill: PALETTE[4] }, value: function (u, v) { return fmtTokens(v); } },
        { label: "model change", stroke: PALETTE[2], paths: markers(), points: { show: true, size: 11, fill: PALETTE[2] }, value: function (u, v) { return fmtTokens(v); } },
      ],
    };
    var u = new uPlot(opts, [x, context, estimated, windowLine, threshold, before, summaries, changes], el);
    el._uplot = u;
    el._ids = ids;
    el.dataset.points = String(data.points.length);
    el.dataset.compactions = String(data.compactions.length);
    u.over.addEventListener("click", function () {
      var idx = u.cursor.idx;
      var id = idx == null ? null : ids[idx];
      if (!id) return;
      el.dataset.selected = id;
      window.piweb.dispatch("select-entry", { id: id });
    });
    return u;
  }

  function dailyChart(el, data) {
    var measure = el.dataset.measure === "tokens" ? "tokens" : "cost";
    var raw = data[measure];
    var days = data.days;
    var x = days.map(function (d, i) { return i; });
    var fmt = measure === "cost" ? fmtCost : fmtTokens;
    // Stacked bars: series k shows models k..end summed, drawn biggest first, so each
    // model's band is its own value; the legend shows the model's own value.
    var stacked = [];
    var running = x.map(function () { return 0; });
    for (var k = raw.length - 1; k >= 0; k--) {
      running = running.map(function (v, i) { return v + (raw[k][i] || 0); });
      stacked[k] = running.slice();
    }
    var PALETTE = palette();
    var bars = uPlot.paths.bars({ size: [0.7, 60] });
    var series = [{ label: "day", value: function (u, v) { return v == null ? "–" : days[v] || ""; } }];
    data.models.forEach(function (model, k) {
      var color = PALETTE[k % PALETTE.length];
      series.push({
        label: model, stroke: color, fill: color, alpha: 0.85, paths: bars, points: { show: false },
        value: function (u, v, si, i) { return i == null ? "–" : fmt(raw[k][i]); },
      });
    });
    var opts = {
      width: width(el),
      height: 240,
      scales: { x: { time: false, range: function () { return [-0.6, days.length - 0.4]; } } },
      axes: [
        axis({
          incrs: [1, 2, 5, 7, 14, 30, 60, 90, 180, 365],
          values: function (u, splits) { return splits.map(function (i) { return days[i] || ""; }); },
        }),
        axis({ size: 70, values: function (u, vals) { return vals.map(fmt); } }),
      ],
      series: series,
    };
    var u = new uPlot(opts, [x].concat(stacked), el);
    el._uplot = u;
    el.dataset.days = String(x.length);
    return u;
  }

  // Scores over time: one line per score and model, the day's mean score.
  function scoreChart(el, data) {
    var days = data.days;
    var x = days.map(function (d, i) { return i; });
    var series = [{ label: "day", value: function (u, v) { return v == null ? "–" : days[v] || ""; } }];
    data.series.forEach(function (line, k) {
      var color = PALETTE[k % PALETTE.length];
      series.push({ label: line.label, stroke: color, width: 2, spanGaps: true, points: { show: true, size: 6, fill: color } });
    });
    var opts = {
      width: width(el),
      height: 240,
      scales: { x: { time: false } },
      axes: [
        { values: function (u, splits) { return splits.map(function (i) { return days[i] || ""; }); } },
        { size: 50 },
      ],
      series: series,
    };
    var u = new uPlot(opts, [x].concat(data.series.map(function (line) { return line.values; })), el);
    el._uplot = u;
    el.dataset.lines = String(data.series.length);
    return u;
  }

  var KINDS = { context: contextChart, daily: dailyChart, scores: scoreChart };

  function init(root) {
    if (!window.uPlot || !root || !root.querySelectorAll) return;
    root.querySelectorAll("[data-usage-chart]:not([data-ready])").forEach(function (el) {
      var data = readData(el);
      var make = KINDS[el.dataset.usageChart];
      if (!data || !make) return;
      el.dataset.ready = "1";
      make(el, data);
    });
  }

  // A new theme: draw every chart again with its colours.
  function redraw() {
    document.querySelectorAll("[data-usage-chart][data-ready]").forEach(function (el) {
      if (el._uplot) el._uplot.destroy();
      el._uplot = null;
      delete el.dataset.ready;
    });
    init(document);
  }
  new MutationObserver(redraw).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redraw);

  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:load", function (ev) { init(ev.detail && ev.detail.elt); });
  window.addEventListener("resize", function () {
    document.querySelectorAll("[data-usage-chart][data-ready]").forEach(function (el) {
      if (el._uplot) el._uplot.setSize({ width: width(el), height: el._uplot.height });
    });
  });
})();

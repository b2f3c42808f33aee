/* Message-rate charts: each .aq-rates card draws its object's series from /api/rates/ with the
   vendored uPlot (static/vendor/uplot). Rates (per second) on the left axis, depth or backlog
   (messages) on the right. The 10-minute range is asked for again every 5 s and the data set in
   place; switching range draws afresh. The charts are window.aqRateCharts[object] (the browser
   tests read them). */
(function () {
  "use strict";

  const REFRESH_MS = 5000;
  const LABELS = {
    enqueue_rate: ["Enqueued/s", "#0d6efd"],
    dequeue_rate: ["Dequeued/s", "#198754"],
    propagate_rate: ["Propagated/s", "#6f42c1"],
    gateway_in_rate: ["Gateway in/s", "#0aa2c0"],
    gateway_out_rate: ["Gateway out/s", "#fd7e14"],
    in_rate: ["In/s", "#0aa2c0"], // a gateway job: taken from its source
    out_rate: ["Out/s", "#fd7e14"], // a gateway job: delivered to its destination
    depth: ["Depth", "#6c757d"],
    backlog: ["Backlog", "#dc3545"],
  };
  const GAUGES = new Set(["depth", "backlog"]);
  const SPAN_S = { "10m": 600, "1h": 3600, "1d": 86400 };
  window.aqRateCharts = window.aqRateCharts || {};

  // Series the page says its object never has (an inbound gateway job's backlog) are left out.
  function columns(body, omit) {
    const names = Object.keys(body.series).filter((n) => !omit.has(n));
    return { names, data: [body.timestamps, ...names.map((n) => body.series[n])] };
  }

  function options(names, width, chart) {
    const gauges = names.some((n) => GAUGES.has(n));
    // The whole range on the time axis, ending now (or at the last point, if the server's clock
    // is ahead): a few points are placed in it, not stretched across it.
    const xRange = (u, min) => {
      const end = Math.max(Date.now() / 1000, ...((chart.body && chart.body.timestamps.slice(-1)) || []));
      return [end - SPAN_S[chart.range], end];
    };
    return {
      width,
      height: 220,
      series: [
        {},
        ...names.map((n) => ({
          label: (LABELS[n] || [n])[0],
          stroke: (LABELS[n] || [n, "#212529"])[1],
          width: 1.5,
          scale: GAUGES.has(n) ? "count" : "rate",
          spanGaps: false,
        })),
      ],
      scales: {
        x: { time: true, range: xRange },
        rate: { range: (u, min, max) => [0, Math.max(max || 0, 1)] },
        count: { range: (u, min, max) => [0, Math.max(max || 0, 1)] },
      },
      axes: [
        // Hours and minutes only: uPlot's default puts a date line on the first tick, which
        // collides with the next one on a narrow card.
        { space: 70, values: (u, ticks) => ticks.map((t) => new Date(t * 1000).toTimeString().slice(0, 5)) },
        { scale: "rate", label: "msg/s", size: 60 },
        ...(gauges ? [{ scale: "count", side: 1, label: "messages", size: 60, grid: { show: false } }] : []),
      ],
    };
  }

  function init(card) {
    const object = card.dataset.aqRatesObject;
    const url = card.dataset.aqRatesUrl;
    const holder = card.querySelector(".aq-rates-plot");
    const empty = card.querySelector(".aq-rates-empty");
    const error = card.querySelector(".aq-rates-error");
    const omit = new Set((card.dataset.aqRatesOmit || "").split(",").filter(Boolean));
    const chart = { object, range: "10m", plot: null, body: null, loads: 0 };
    window.aqRateCharts[object] = chart;

    function draw(body, fresh) {
      const { names, data } = columns(body, omit);
      chart.body = body;
      empty.hidden = body.timestamps.length > 0;
      if (fresh || !chart.plot) {
        if (chart.plot) chart.plot.destroy();
        chart.plot = new uPlot(options(names, holder.clientWidth || 600, chart), data, holder);
      } else {
        chart.plot.setData(data);
      }
    }

    function load(fresh) {
      const range = chart.range;
      const q = new URLSearchParams({ object, range });
      return fetch(`${url}?${q}`, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then((r) => r.json().then((body) => ({ ok: r.ok, body })))
        .then(({ ok, body }) => {
          if (range !== chart.range) return; // a later click asked for another range
          chart.loads += 1;
          error.hidden = ok;
          if (!ok) {
            error.textContent = JSON.stringify(body);
            return;
          }
          draw(body, fresh);
        })
        .catch((exc) => {
          error.hidden = false;
          error.textContent = String(exc);
        });
    }

    card.querySelectorAll("[data-range]").forEach((button) => {
      button.addEventListener("click", () => {
        card.querySelectorAll("[data-range]").forEach((b) => b.classList.toggle("active", b === button));
        chart.range = button.dataset.range;
        load(true);
      });
    });
    // The chart follows its card's width (a window resize, a scroll bar that comes or goes),
    // observed on the holder itself: a window "resize" event comes a frame late, and until then
    // a chart drawn for a wider window would widen the page (its holder clips it meanwhile).
    new ResizeObserver(() => {
      if (chart.plot && holder.clientWidth && chart.plot.width !== holder.clientWidth) {
        chart.plot.setSize({ width: holder.clientWidth, height: 220 });
      }
    }).observe(holder);
    setInterval(() => {
      if (chart.range === "10m" && !document.hidden) load(false);
    }, REFRESH_MS);
    load(true);
  }

  function start() {
    document.querySelectorAll(".aq-rates").forEach(init);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

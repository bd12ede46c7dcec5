// corral console: confirmation of actions, and live updates of the overview over
// Server-Sent Events. Small on purpose: the pages work without it, but for the live numbers.
"use strict";

// Every action form asks before it posts.
document.addEventListener("submit", (ev) => {
  const msg = ev.target.dataset.confirm;
  if (msg && !window.confirm(msg)) ev.preventDefault();
});

// points turns a series into an SVG polyline's points, scaled to the box w x h by max.
function points(series, w, h, max) {
  const n = series.length;
  return series.map((v, i) => {
    const x = n < 2 ? 0 : (i * w) / (n - 1);
    const y = h - (max > 0 ? (v * (h - 4)) / max : 0) - 2;
    return x.toFixed(1) + "," + y.toFixed(1);
  }).join(" ");
}

// draw renders a queue's throughput and failures into its chart.
function draw(svg, history) {
  const acked = history.map((p) => p.acked);
  const failed = history.map((p) => p.failed);
  const max = Math.max(1, ...acked, ...failed);
  const ns = "http://www.w3.org/2000/svg";
  svg.replaceChildren();
  for (const [cls, series] of [["acked", acked], ["failed", failed]]) {
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("class", cls);
    line.setAttribute("points", points(series, 600, 120, max));
    svg.appendChild(line);
  }
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", "4");
  label.setAttribute("y", "12");
  label.setAttribute("font-size", "10");
  label.textContent = "max " + max.toFixed(1) + "/s";
  svg.appendChild(label);
}

// fill writes fields (a snapshot's cells, by data-field name) into the cells of rows.
function fill(rows, fields) {
  for (const row of rows) {
    for (const cell of row.querySelectorAll("[data-field]")) {
      const v = fields[cell.dataset.field];
      if (v === undefined) continue;
      (cell.querySelector("a") || cell).textContent = v;
    }
  }
}

// update puts a snapshot's numbers into the overview's tables and charts. A Share's member
// that joined since the page was loaded has no row: it shows on reload.
function update(snap) {
  for (const q of snap.queues) {
    fill(document.querySelectorAll(`tr[data-queue="${CSS.escape(q.name)}"]`), q.fields);
    const svg = document.querySelector(`svg.chart[data-queue="${CSS.escape(q.name)}"]`);
    if (svg) draw(svg, q.history);
  }
  for (const s of snap.shares || []) {
    for (const m of s.members) {
      fill(document.querySelectorAll(`tr[data-share="${CSS.escape(s.name)}"][data-member="${CSS.escape(m.name)}"]`), m.fields);
    }
  }
}

if (document.getElementById("queues")) {
  const live = document.getElementById("live");
  const es = new EventSource("events");
  es.onopen = () => { live.textContent = "live"; };
  es.onerror = () => { live.textContent = "reconnecting…"; };
  es.onmessage = (ev) => {
    const snap = JSON.parse(ev.data);
    // A snapshot sampled before the page was made is older than the page's numbers.
    if (snap.at < Number(document.body.dataset.rendered || 0)) return;
    update(snap);
    live.textContent = snap.dropped ? `live (${snap.dropped} updates missed)` : "live";
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  };
}

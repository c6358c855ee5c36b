// Small live charts of the broker's own Prometheus metrics (/metrics),
// polled once a second: rates come from counter differences, latency
// quantiles from the histogram's bucket differences over the last 5 s.
import uPlot from "uplot";

const KEEP = 120; // seconds of history

// parse reads the text exposition format into [name, labels, value] rows.
export function parse(text) {
  const rows = [];
  for (const line of text.split("\n")) {
    if (!line || line[0] === "#") continue;
    const m = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    rows.push([m[1], labels, Number(m[3])]);
  }
  return rows;
}

function sum(rows, name, match = () => true) {
  let s = 0;
  for (const [n, l, v] of rows) if (n === name && match(l)) s += v;
  return s;
}

// quantile of a histogram from cumulative bucket counts {le: count}.
function quantile(buckets, q) {
  const les = Object.keys(buckets).map(Number).sort((a, b) => a - b);
  const total = buckets[les.find((x) => x === Infinity)] ?? 0;
  if (total <= 0) return null;
  let prevLe = 0, prevN = 0;
  for (const le of les) {
    const n = buckets[le];
    if (n >= q * total) {
      if (le === Infinity) return prevLe;
      return prevLe + ((le - prevLe) * (q * total - prevN)) / Math.max(1, n - prevN);
    }
    prevLe = le, prevN = n;
  }
  return null;
}

const SPECS = [
  { title: "publications/s · notifications/s", series: [["pubs/s", "#d7263d"], ["notes/s", "#1d4ed8"]] },
  { title: "live subscriptions", series: [["live", "#10b981"]] },
  { title: "publish → notify (ms)", series: [["p50", "#2e86ab"], ["p99", "#e4572e"]] },
  { title: "LSM: tables in L0 · all levels · compaction MB/s", series: [["L0", "#6a4c93"], ["tables", "#52606d"], ["MB/s", "#f4a261"]] },
];

export class Charts {
  constructor(el, metricsURL) {
    this.url = metricsURL;
    this.data = SPECS.map((s) => [[], ...s.series.map(() => [])]);
    this.plots = SPECS.map((s, i) => {
      const box = document.createElement("div");
      box.className = "chart";
      el.append(box);
      return new uPlot({ title: s.title, width: 300, height: 110, legend: { live: false }, cursor: { show: false },
        axes: [{ show: false }, { size: 40, font: "10px system-ui" }],
        series: [{}, ...s.series.map(([label, stroke]) => ({ label, stroke, width: 1.5, points: { show: false } }))] }, this.data[i], box);
    });
    this.history = []; // the last snapshots, for rates over a window
    this.latest = {};
  }

  async poll() {
    let text;
    try {
      text = await (await fetch(this.url, { cache: "no-store" })).text();
    } catch {
      return;
    }
    const rows = parse(text), t = Date.now() / 1000;
    const snap = {
      t,
      pubs: sum(rows, "cellcast_requests_total", (l) => l.op === "publish" && l.outcome === "ok"),
      notes: sum(rows, "cellcast_notifications_sent_total"),
      live: sum(rows, "cellcast_live_subscriptions"),
      l0: sum(rows, "cellcast_lsm_level_tables", (l) => l.level === "0"),
      tables: sum(rows, "cellcast_lsm_level_tables"),
      compacted: sum(rows, "cellcast_lsm_compaction_bytes_total", (l) => l.dir === "out"),
      buckets: {},
    };
    for (const [n, l, v] of rows) if (n === "cellcast_publish_to_push_seconds_bucket") snap.buckets[l.le === "+Inf" ? Infinity : Number(l.le)] = v;
    this.history.push(snap);
    if (this.history.length > 6) this.history.shift();
    const prev = this.history[this.history.length - 2], old = this.history[0];
    if (!prev) return;
    const dt = t - prev.t, win = {};
    for (const le in snap.buckets) win[le === "Infinity" ? Infinity : le] = snap.buckets[le] - (old.buckets[le] ?? 0);
    const p50 = quantile(win, 0.5), p99 = quantile(win, 0.99);
    this.latest = { pubsPerS: (snap.pubs - prev.pubs) / dt, notesPerS: (snap.notes - prev.notes) / dt, live: snap.live, p50ms: p50 && p50 * 1000, p99ms: p99 && p99 * 1000 };
    const values = [
      [this.latest.pubsPerS, this.latest.notesPerS],
      [snap.live],
      [this.latest.p50ms, this.latest.p99ms],
      [snap.l0, snap.tables, (snap.compacted - prev.compacted) / dt / 1e6],
    ];
    values.forEach((vs, i) => {
      const d = this.data[i];
      d[0].push(t);
      vs.forEach((v, j) => d[j + 1].push(v));
      if (d[0].length > KEEP) d.forEach((a) => a.shift());
      this.plots[i].setData(d);
    });
  }
}

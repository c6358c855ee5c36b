// The demo page: wires the map, the simulation, "me", incidents, charts
// and the query box to the broker. window.demo exposes the state for the
// browser test and for curious visitors.
import "leaflet/dist/leaflet.css";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { Cellcast, wsURL } from "./cellcast.js";
import { inBox } from "./geo.js";
import { DemoMap } from "./map.js";
import { Simulation } from "./sim.js";
import { AlertPanel, Incidents } from "./alerts.js";
import { Charts } from "./charts.js";

const $ = (s) => document.querySelector(s);
const CATEGORIES = ["accident", "fire", "flood", "roadwork", "power outage", "gas leak"];
const tag = Math.random().toString(36).slice(2, 8);

// connect opens the page's connection, asking for a token when the broker
// refuses the page without one.
async function connect() {
  for (;;) {
    const token = sessionStorage.getItem("cellcast-token") ?? "";
    try {
      return { conn: await Cellcast.connect(wsURL(token)), token };
    } catch {
      $("#auth").hidden = false;
      $("#auth-msg").textContent = token ? "The broker refused that token." : "This broker needs a token.";
      await new Promise((done) => ($("#auth").onsubmit = (e) => (e.preventDefault(), done())));
      sessionStorage.setItem("cellcast-token", $("#token").value.trim());
      $("#auth").hidden = true;
    }
  }
}

async function main() {
  const [geo, places] = await Promise.all([fetch("ny.json").then((r) => r.json()), fetch("places.json").then((r) => r.json())]);
  const dm = new DemoMap($("#map"), geo, places);
  const { conn, token } = await connect();
  const open = !token; // open mode: requests name their uid
  const as = (uid) => (open ? { uid } : {});
  document.body.dataset.ws = "open";
  conn.onclose = () => {
    document.body.dataset.ws = "closed";
    $("#status").textContent = "disconnected: reload the page";
  };

  // Every incident on the map: one subscription over the root cell, with
  // self-join so that renewing it repeats nothing.
  const incidents = new Incidents();
  const watch = async () => {
    const r = await conn.subscribe({ ...as("watch-" + tag), cell: "1", past: "30m", future: "10m", self_join: true }, (p) => incidents.add(p));
    r.results.forEach((p) => incidents.add(p));
    setTimeout(() => watch().then(() => conn.unsubscribe(r.sid)), 9.5 * 60_000);
  };
  await watch();

  // Me: a subscription at a point with a radius and windows; moving
  // re-subscribes with self-join, so no alert comes twice.
  const panel = new AlertPanel($("#alerts"));
  const me = { sid: null, cell: null, moves: 0 };
  const setMe = async (lat, lng) => {
    if (!inBox(lat, lng)) return void ($("#me-msg").textContent = "outside the map: pick a point in New York State");
    const radiusM = +$("#me-radius").value, past = $("#me-past").value, future = $("#me-future").value;
    const body = { ...as("me-" + tag), lat, lng, radius_m: radiusM, past, future, self_join: true };
    const at = { lat, lng };
    const r = await conn.subscribe(body, (p) => panel.show(p, at, true));
    r.results.forEach((p) => panel.show(p, at, false));
    const old = me.sid;
    Object.assign(me, { lat, lng, radiusM, sid: r.sid, cell: r.cell, moves: me.moves + 1, past: r.results.length });
    if (old) conn.unsubscribe(old);
    $("#me-msg").textContent = `subscribed in cell ${r.cell}: ${r.results.length} past result(s)`;
    clearTimeout(me.renew);
    me.renew = setTimeout(() => setMe(me.lat, me.lng), Math.max(5_000, Date.parse(r.expires_at) - Date.now() - 5_000));
  };

  const publishAt = (lat, lng, f = {}) =>
    conn.publish({ ...as("web-" + tag), lat, lng, radius_m: f.radiusM ?? +$("#inc-radius").value, expires: (f.lifetime ?? +$("#inc-life").value) + "s",
      desc: f.desc ?? ($("#inc-desc").value || $("#inc-cat").value), attrs: { category: f.category ?? $("#inc-cat").value } });

  let mode = "me";
  for (const b of document.querySelectorAll("[data-mode]")) {
    b.onclick = () => {
      mode = b.dataset.mode;
      document.querySelectorAll("[data-mode]").forEach((x) => x.classList.toggle("on", x === b));
    };
  }
  dm.map.on("click", (e) => (mode === "me" ? setMe(e.latlng.lat, e.latlng.lng) : publishAt(e.latlng.lat, e.latlng.lng)).catch((err) => ($("#me-msg").textContent = err.message)));
  $("#geo").onclick = () =>
    navigator.geolocation?.getCurrentPosition((p) => setMe(p.coords.latitude, p.coords.longitude), (e) => ($("#me-msg").textContent = e.message));

  // Moving users, and random incidents at population-weighted points.
  const sim = new Simulation(places, wsURL(token), `sim-${tag}-`, open);
  const setUsers = (n) => {
    $("#users-n").textContent = n;
    return sim.resize(n);
  };
  $("#users").oninput = () => setUsers(Math.round(10 ** +$("#users").value));
  $("#speed").oninput = () => ($("#speed-n").textContent = sim.speed = +$("#speed").value);
  let rate = 0, owed = 0;
  const setRate = (r) => ($("#rate-n").textContent = rate = r);
  $("#rate").oninput = () => setRate(+$("#rate").value);
  const named = places.filter((p) => p[4] === 1);
  const nearest = (lat, lng) => named.reduce((b, p) => ((p[2] - lat) ** 2 + (p[3] - lng) ** 2 < (b[2] - lat) ** 2 + (b[3] - lng) ** 2 ? p : b))[0];
  setInterval(() => {
    for (owed += rate / 10; owed >= 1; owed--) {
      const [lat, lng] = sim.start(), category = CATEGORIES[Math.floor(Math.random() * CATEGORIES.length)];
      publishAt(lat, lng, { category, desc: `${category} near ${nearest(lat, lng)}`, radiusM: [100, 250, 500, 1000, 2000][Math.floor(Math.random() * 5)], lifetime: 20 }).catch(() => {});
    }
  }, 100);
  setUsers(Math.round(10 ** +$("#users").value));

  // The query box.
  $("#query").onsubmit = async (e) => {
    e.preventDefault();
    const out = $("#qresults");
    try {
      const r = await conn.query({ attr: $("#q-attr").value, eq: $("#q-eq").value, k: +$("#q-k").value });
      out.replaceChildren(...r.results.map((p) => {
        const li = document.createElement("li");
        li.textContent = `${new Date(p.tp).toLocaleTimeString([], { hour12: false })} ${p.attrs?.category ?? ""} · ${p.desc ?? ""} · ${p.uid}` + (p.lat !== undefined ? ` @ ${p.lat.toFixed(4)}, ${p.lng.toFixed(4)}` : ` @ cell ${p.cell}`);
        return li;
      }));
      $("#q-count").textContent = `${r.count} found`;
    } catch (err) {
      $("#q-count").textContent = err.message;
    }
  };

  // The frame loop, and a once-a-second sweep.
  const charts = new Charts($("#charts"), "/metrics");
  const frames = [];
  const frame = (now) => {
    frames.push(now);
    while (frames[0] < now - 1000) frames.shift();
    sim.tick(now);
    dm.drawStill();
    dm.drawLive(now, incidents, sim.users, me);
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  setInterval(() => {
    const now = Date.now();
    incidents.expire(now);
    panel.expire(now);
    charts.poll();
    $("#status").textContent = `${sim.users.length} users · ${incidents.size} incidents · ${frames.length} fps · grid depth ${dm.gridDepth}`;
    $("#repeats").textContent = panel.repeats ? `${panel.repeats} repeat(s) from the broker not shown again` : "";
  }, 1000);

  window.demo = { dm, map: dm.map, incidents, sim, me, panel, charts, setMe, publishAt, setUsers, setRate, fps: () => frames.length, conn, readyAt: performance.now() };
  document.body.dataset.ready = "1";
}

main().catch((err) => {
  $("#status").textContent = "error: " + err.message;
  console.error(err);
});

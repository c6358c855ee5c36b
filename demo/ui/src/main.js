// The demo page: wires the map, the simulation, "me", incidents, charts
// and the query box to the broker. window.demo exposes the state for the
// browser test and for curious visitors.
import "leaflet/dist/leaflet.css";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { Cellcast, wsURL } from "cellcast"; // clients/js (docs/clients.md), bundled by build.mjs
import { Cells } from "./cells.js";
import { placeOf, regularPolygon } from "./geo.js";
import { CITIES, DemoMap } from "./map.js";
import { Simulation } from "./sim.js";
import { Land } from "./land.js";
import { Incidents } from "./incidents.js";
import { AlertPanel } from "./alerts.js";
import { Me } from "./me.js";
import { Charts } from "./charts.js";

const $ = (s) => document.querySelector(s);
const CATEGORIES = ["accident", "fire", "flood", "roadwork", "power outage", "gas leak"];
const FACES = ["1", "2", "3", "4", "5", "6"]; // the grid's roots: together, the whole Earth
const VERTICES = { circle: 0, square: 4, triangle: 3 }; // an incident's shape
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
  const json = (url) => fetch(url).then((r) => r.json());
  const [world, ny, places] = await Promise.all([json("world.json"), json("ny.json"), json("places.json")]);
  const cells = new Cells();
  const dm = new DemoMap($("#map"), world, ny, places, cells);
  const demo = (window.demo = { published: null }); // filled in below
  const { conn, token } = await connect();
  const open = !token; // open mode: requests name their uid
  const as = (uid) => (open ? { uid } : {});
  // A drop is not the end: the client dials again and resumes every
  // subscription from the last notification it received.
  const ws = (state) => (document.body.dataset.ws = state);
  ws("open");
  conn.on("disconnect", () => {
    ws("reconnecting");
    $("#status").textContent = "disconnected: reconnecting…";
  });
  conn.on("reconnect", () => ws("open"));

  // Every incident on Earth: one subscription on each face of the grid
  // (the broker hands each one what lies in or reaches its face), with
  // self-join so that renewing them repeats nothing.
  const incidents = new Incidents(dm.map, cells);
  const watch = async () => {
    const rs = await Promise.all(FACES.map((cell) => conn.subscribe({ ...as("watch-" + tag), cell, past: "30m", future: "10m", self_join: true }, (p) => incidents.add(p))));
    rs.forEach((r) => r.results.forEach((p) => incidents.add(p)));
    // Renewed before the window ends, then the old ones cancelled (one the
    // broker dropped already rejects: nothing to cancel); a renewal that
    // fails (a drop mid-request) is tried again.
    const renew = () => watch().then(() => rs.forEach((r) => conn.unsubscribe(r).catch(() => {})), () => setTimeout(renew, 5000));
    setTimeout(renew, 9.5 * 60_000);
  };
  await watch();

  const panel = new AlertPanel($("#alerts"));
  const me = new Me(conn, as("me-" + tag), dm.map, cells, panel);
  const setMe = async (lat, lng) => {
    const r = await me.at(lat, lng, { radiusM: +$("#me-radius").value, past: $("#me-past").value, future: $("#me-future").value });
    const levels = me.cover.map((id) => id.split(".").length - 1);
    $("#me-msg").textContent = `subscribed on ${me.cover.length} cell(s) of level ${Math.min(...levels)}–${Math.max(...levels)} (dashed): ${r.results.length} past result(s)`;
  };

  // An incident: a circle, or a square or triangle "zone" whose corners
  // are the radius away from the click.
  const publishAt = (lat, lng, f = {}) => {
    const radiusM = f.radiusM ?? +$("#inc-radius").value, n = VERTICES[f.shape ?? $("#inc-shape").value];
    const place = n ? { polygon: regularPolygon({ lat, lng }, radiusM, n) } : { lat, lng, radius_m: radiusM };
    const category = f.category ?? $("#inc-cat").value;
    return conn.publish({ ...as("web-" + tag), ...place, expires: (f.lifetime ?? +$("#inc-life").value) + "s", desc: f.desc ?? ($("#inc-desc").value || category), attrs: { category } });
  };
  const publishHere = async (lat, lng) => {
    const r = (demo.published = await publishAt(lat, lng));
    $("#inc-msg").textContent = `published on ${r.cover?.length ?? 1} cell(s); ${r.matched} subscription(s) told`;
  };

  let mode = "me";
  for (const b of document.querySelectorAll("[data-mode]")) {
    b.onclick = () => {
      mode = b.dataset.mode;
      document.querySelectorAll("[data-mode]").forEach((x) => x.classList.toggle("on", x === b));
    };
  }
  dm.map.on("click", (e) => {
    const { lat, lng } = e.latlng.wrap();
    if (mode === "me") incidents.showAt(e.latlng.lat, e.latlng.lng); // what is where I am
    (mode === "me" ? setMe(lat, lng) : publishHere(lat, lng)).catch((err) => ($(mode === "me" ? "#me-msg" : "#inc-msg").textContent = err.message));
  });
  $("#geo").onclick = () =>
    navigator.geolocation?.getCurrentPosition((p) => setMe(p.coords.latitude, p.coords.longitude), (e) => ($("#me-msg").textContent = e.message));
  $("#goto").replaceChildren(...CITIES.map(([name]) => new Option(name)));
  $("#goto").onchange = () => dm.goTo($("#goto").value);

  // Moving users in New York, and random incidents at population-weighted
  // points there, one in four a zone.
  const sim = new Simulation(places, new Land([...ny.counties.features, ...ny.neighbours.features]), wsURL(token), `sim-${tag}-`, open);
  const setUsers = (n) => {
    $("#users-n").textContent = n;
    return sim.resize(n);
  };
  $("#users").oninput = () => setUsers(Math.round(10 ** +$("#users").value));
  $("#speed").oninput = () => ($("#speed-n").textContent = sim.speed = +$("#speed").value);
  // The page publishes from the start at what the slider shows: a visitor
  // who touches nothing still sees incidents come and go.
  let rate = +$("#rate").value, owed = 0;
  const setRate = (r) => ($("#rate-n").textContent = rate = r);
  $("#rate").oninput = () => setRate(+$("#rate").value);
  setRate(rate);
  const named = places.filter((p) => p[4] === 1);
  const nearest = (lat, lng) => named.reduce((b, p) => ((p[2] - lat) ** 2 + (p[3] - lng) ** 2 < (b[2] - lat) ** 2 + (b[3] - lng) ** 2 ? p : b))[0];
  const pick = (xs) => xs[Math.floor(Math.random() * xs.length)];
  setInterval(() => {
    for (owed += rate / 10; owed >= 1; owed--) {
      const [lat, lng] = sim.start(), category = pick(CATEGORIES), shape = Math.random() < 0.25 ? pick(["square", "triangle"]) : "circle";
      publishAt(lat, lng, { category, shape, desc: `${category} near ${nearest(lat, lng)}`, radiusM: pick([100, 250, 500, 1000, 2000]), lifetime: 20 }).catch(() => {});
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
        const w = placeOf(p), at = w?.lat !== undefined ? `${w.lat.toFixed(4)}, ${w.lng.toFixed(4)}` : "";
        const where = !w ? p.topic : w.kind === "polygon" ? `a zone around ${at}` : w.kind === "cell" ? `cell ${w.cell}` : at;
        li.textContent = `${new Date(p.tp).toLocaleTimeString([], { hour12: false })} ${p.attrs?.category ?? ""} · ${p.desc ?? ""} · ${p.uid} @ ${where}`;
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
    dm.drawLive(now, sim.users);
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  setInterval(() => {
    const now = Date.now();
    incidents.tick(now);
    panel.expire(now);
    charts.poll();
    $("#status").textContent = `${document.body.dataset.ws === "open" ? "" : "reconnecting… · "}${sim.users.length} users · ${incidents.size} incidents · ${frames.length} fps · grid level ${dm.grid.level ?? "—"}`;
    $("#repeats").textContent = panel.repeats ? `${panel.repeats} repeat(s) from the broker not shown again` : "";
  }, 1000);

  Object.assign(demo, { dm, map: dm.map, grid: dm.grid, cells, incidents, sim, me, panel, charts, setMe, publishAt, goTo: (name) => dm.goTo(name), setUsers, setRate, fps: () => frames.length, conn, readyAt: performance.now() });
  document.body.dataset.ready = "1";
}

main().catch((err) => {
  $("#status").textContent = "error: " + err.message;
  console.error(err);
});

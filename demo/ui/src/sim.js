// Simulated moving users, after bench/workload's model: each starts at a
// population-weighted place, scattered around it (bench/places.Spread), and
// walks 300 m steps in random directions inside the box; whenever it
// enters a new cell it subscribes there and cancels its old subscription.
// Every user is a real subscription on the broker, so a dot flashes when
// the broker notifies it. Users are spread over a few connections so that
// none passes the broker's per-connection rate or subscription limits.
import { Cellcast } from "./cellcast.js";
import { cellOf, inBox } from "./geo.js";

const STEP_M = 300; // bench/workload's default step
const DEPTH = 10; // the users' cells: about 1 km across
const FUTURE_S = 30; // each subscription's future window; renewed before it ends
const PER_CONN = 2500;

export class Simulation {
  constructor(places, url, uidPrefix, open) {
    this.url = url;
    this.uidPrefix = uidPrefix;
    this.open = open; // open mode: each user its own uid
    this.speed = 1; // steps per user per 2 s
    this.users = [];
    this.conns = [];
    this.notified = 0;
    // Weighted sampling of places: cumulative populations.
    this.places = places.filter((p) => p[4] === 1);
    this.cum = [];
    let total = 0;
    for (const p of this.places) this.cum.push((total += p[1]));
  }

  // start draws a starting point as bench/workload does (minus ZIP starts).
  start() {
    for (;;) {
      const x = Math.random() * this.cum[this.cum.length - 1];
      let lo = 0, hi = this.cum.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.cum[mid] < x) lo = mid + 1;
        else hi = mid;
      }
      const [, pop, plat, plng] = this.places[lo];
      const sigma = 0.003 + 0.00002 * Math.sqrt(pop);
      const lat = plat + gauss() * sigma, lng = plng + (gauss() * sigma) / Math.cos((plat * Math.PI) / 180);
      if (inBox(lat, lng)) return [lat, lng];
    }
  }

  async conn(i) {
    while (this.conns.length <= i) this.conns.push(Cellcast.connect(this.url));
    return this.conns[i];
  }

  // resize grows or shrinks the population to n.
  async resize(n) {
    while (this.users.length > n) {
      const u = this.users.pop();
      u.gone = true;
      if (u.sid) (await u.conn).unsubscribe(u.sid);
    }
    const now = performance.now();
    while (this.users.length < n) {
      const i = this.users.length;
      const [lat, lng] = this.start();
      const u = { i, lat, lng, cell: null, sid: null, busy: false, renewAt: 0, flash: -1e9, next: now + Math.random() * 2000, conn: this.conn(Math.floor(i / PER_CONN)) };
      this.users.push(u);
      this.resubscribe(u);
    }
  }

  // tick moves the users whose step is due, at the current speed.
  tick(now) {
    if (this.speed <= 0) return;
    const every = 2000 / this.speed, deg = STEP_M / 111_320;
    for (const u of this.users) {
      if (now < u.next) continue;
      u.next = now + every * (0.5 + Math.random());
      for (let k = 0; k < 8; k++) {
        const a = Math.random() * 2 * Math.PI;
        const lat = u.lat + deg * Math.sin(a), lng = u.lng + (deg * Math.cos(a)) / Math.cos((u.lat * Math.PI) / 180);
        if (inBox(lat, lng)) {
          u.lat = lat, u.lng = lng;
          break;
        }
      }
      if (cellOf(u.lat, u.lng, DEPTH) !== u.cell || now > u.renewAt) this.resubscribe(u);
    }
  }

  // resubscribe subscribes u at its cell and then cancels its old
  // subscription; a user with a request under way waits for its next step.
  async resubscribe(u) {
    if (u.busy || u.gone) return;
    u.busy = true;
    const cell = cellOf(u.lat, u.lng, DEPTH);
    try {
      const c = await u.conn;
      const body = { cell, future: FUTURE_S };
      if (this.open) body.uid = this.uidPrefix + u.i;
      const r = await c.subscribe(body, () => {
        u.flash = performance.now();
        this.notified++;
      });
      const old = u.sid;
      u.sid = r.sid, u.cell = cell, u.renewAt = performance.now() + (FUTURE_S - 3) * 1000;
      if (old) c.unsubscribe(old);
      if (u.gone) c.unsubscribe(u.sid);
    } catch {
      u.renewAt = 0; // overloaded or closed: try again on the next step
    } finally {
      u.busy = false;
    }
  }
}

function gauss() {
  return Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random());
}

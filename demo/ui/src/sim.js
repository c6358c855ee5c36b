// Simulated moving users, after bench/workload's model: each starts at a
// population-weighted place of New York State, scattered around it
// (bench/places.Spread), and walks 300 m steps in random directions. Each
// is a real subscription on the broker: a circle of 1 km around where it
// stood, re-centred once it has walked 500 m away, which the broker
// refines exactly, so a dot flashes only for incidents that reach its
// circle. They stay in New York wherever the map goes, and on land: a
// start or a step in the sea is drawn again (land.js). Users are spread
// over a few connections so that none passes the broker's per-connection
// rate or subscription limits.
import { Cellcast } from "cellcast";
import { destination, distanceM } from "./geo.js";

const STEP_M = 300; // bench/workload's default step
const RADIUS_M = 1000; // each user's circle
const RECENTRE_M = 500; // how far a user walks before its circle follows
const ROAM_M = 25_000; // how far a user strays from its start: they stay in New York
const FUTURE_S = 30; // each subscription's future window; renewed before it ends
const PER_CONN = 2500;

export class Simulation {
  constructor(places, land, url, uidPrefix, open) {
    this.land = land;
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

  // start draws a starting point on land as bench/workload does (minus
  // ZIP starts): a place by population, scattered around it; the place
  // itself (every one is on land) if the scatter keeps falling in the sea.
  start() {
    const x = Math.random() * this.cum[this.cum.length - 1];
    let lo = 0, hi = this.cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cum[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    const [, pop, plat, plng] = this.places[lo];
    const sigma = 0.003 + 0.00002 * Math.sqrt(pop);
    for (let k = 0; k < 20; k++) {
      const lat = plat + gauss() * sigma, lng = plng + (gauss() * sigma) / Math.cos((plat * Math.PI) / 180);
      if (this.land.find(lat, lng) >= 0) return [lat, lng];
    }
    return [plat, plng];
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
      if (u.sub) (await u.conn).unsubscribe(u.sub).catch(() => {}); // gone already: fine
    }
    const now = performance.now();
    while (this.users.length < n) {
      const i = this.users.length;
      const [lat, lng] = this.start();
      const u = { i, lat, lng, home: { lat, lng }, ground: this.land.find(lat, lng), centre: null, sub: null, sid: null, busy: false, renewAt: 0, flash: -1e9, next: now + Math.random() * 2000, conn: this.conn(Math.floor(i / PER_CONN)) };
      this.users.push(u);
      this.resubscribe(u);
    }
  }

  // tick moves the users whose step is due, at the current speed.
  tick(now) {
    if (this.speed <= 0) return;
    const every = 2000 / this.speed;
    for (const u of this.users) {
      if (now < u.next) continue;
      u.next = now + every * (0.5 + Math.random());
      for (let k = 0; k < 8; k++) {
        const p = destination(u, Math.random() * 2 * Math.PI, STEP_M);
        if (distanceM(p, u.home) >= ROAM_M) continue;
        const ground = this.land.find(p.lat, p.lng, u.ground);
        if (ground < 0) continue; // the sea: another direction
        u.lat = p.lat, u.lng = p.lng, u.ground = ground;
        break;
      }
      if (!u.centre || distanceM(u, u.centre) > RECENTRE_M || now > u.renewAt) this.resubscribe(u);
    }
  }

  // resubscribe subscribes u around where it stands and then cancels its
  // old subscription; a user with a request under way waits for its next
  // step.
  async resubscribe(u) {
    if (u.busy || u.gone) return;
    u.busy = true;
    const centre = { lat: u.lat, lng: u.lng };
    try {
      const c = await u.conn;
      const body = { ...centre, radius_m: RADIUS_M, future: FUTURE_S };
      if (this.open) body.uid = this.uidPrefix + u.i;
      const r = await c.subscribe(body, () => {
        u.flash = performance.now();
        this.notified++;
      });
      const old = u.sub;
      u.sub = r, u.sid = r.sid, u.centre = centre, u.renewAt = performance.now() + (FUTURE_S - 3) * 1000;
      // A subscription the broker dropped already (its window over) rejects: nothing to cancel.
      if (old) c.unsubscribe(old).catch(() => {});
      if (u.gone) c.unsubscribe(r).catch(() => {});
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

// The incidents the page knows of (from its watch over the whole map) and
// the viewer's own alerts: what "me" was told, past results first, then
// live notifications, each with time, category, description and distance.
import { distanceM, where } from "./geo.js";

export class Incidents {
  constructor() {
    this.byPid = new Map();
  }

  // add records a publication once; false for a topic or a known pid.
  add(pub) {
    if (this.byPid.has(pub.pid)) return false;
    const w = where(pub);
    if (!w) return false;
    const tp = Date.parse(pub.tp), expires = Date.parse(pub.expires_at);
    this.byPid.set(pub.pid, { ...w, pid: pub.pid, category: pub.attrs?.category ?? "other", desc: pub.desc ?? "", tp, expires, lifetime: Math.max(1, expires - tp) });
    return true;
  }

  // expire forgets what has expired.
  expire(now) {
    for (const [pid, inc] of this.byPid) if (inc.expires <= now) this.byPid.delete(pid);
  }

  get size() {
    return this.byPid.size;
  }

  values() {
    return this.byPid.values();
  }
}

export class AlertPanel {
  constructor(list) {
    this.list = list;
    this.items = new Map(); // pid → {li, expires}
    // Repeats the broker sent anyway: its self-join only looks at the
    // user's earlier subscriptions in cells overlapping the new one, so a
    // move to a neighbouring cell hears again what was published in a
    // common ancestor (docs/demo.md). Counted, and not shown twice.
    this.repeats = 0;
  }

  // show appends one alert; at is where the viewer stood.
  show(pub, at, live) {
    if (this.items.has(pub.pid)) {
      this.repeats++;
      return;
    }
    const w = where(pub);
    const li = document.createElement("li");
    li.dataset.pid = pub.pid;
    li.className = live ? "live" : "past";
    const d = w ? distanceM(at.lat, at.lng, w.lat, w.lng) : NaN;
    const time = new Date(pub.tp).toLocaleTimeString([], { hour12: false });
    const cat = pub.attrs?.category ?? "—";
    li.innerHTML = `<span class="t"></span> <b class="cat"></b> <span class="d"></span><div class="desc"></div>`;
    li.querySelector(".t").textContent = time + (live ? "" : " (past)");
    li.querySelector(".cat").textContent = cat;
    li.querySelector(".d").textContent = Number.isNaN(d) ? "" : d < 1000 ? `${Math.round(d)} m` : `${(d / 1000).toFixed(1)} km`;
    li.querySelector(".desc").textContent = pub.desc ?? "";
    this.list.append(li);
    this.list.scrollTop = this.list.scrollHeight;
    this.items.set(pub.pid, { li, expires: Date.parse(pub.expires_at) });
  }

  // expire removes the alerts of incidents that have expired.
  expire(now) {
    for (const [pid, it] of this.items) {
      if (it.expires <= now) {
        it.li.remove();
        this.items.delete(pid);
      }
    }
  }
}

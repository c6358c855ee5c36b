// "My alerts": what the broker told "me", past results first, then live
// notifications, each with its time, category, description and how far
// it is — the great-circle distance from where I am to its centre, and
// "inside" or the distance to its edge. The broker already refined what
// it sent to what meets my circle; the panel lists all of it.
import { fmtM, placeOf, relation } from "./geo.js";

export class AlertPanel {
  constructor(list) {
    this.list = list;
    this.items = new Map(); // pid → {li, pub, place, expires}
    // Repeats the broker sent anyway after a move (its self-join should
    // leave them out: docs/demo.md). Counted, and not shown twice.
    this.repeats = 0;
  }

  // show appends one alert; at is where I stand.
  show(pub, at, live) {
    if (this.items.has(pub.pid)) {
      this.repeats++;
      return;
    }
    const li = document.createElement("li");
    li.dataset.pid = pub.pid;
    li.className = live ? "live" : "past";
    li.innerHTML = `<span class="t"></span> <b class="cat"></b> <span class="d"></span><div class="desc"></div>`;
    li.querySelector(".t").textContent = new Date(pub.tp).toLocaleTimeString([], { hour12: false }) + (live ? "" : " (past)");
    li.querySelector(".cat").textContent = pub.attrs?.category ?? "—";
    li.querySelector(".desc").textContent = pub.desc ?? "";
    const it = { li, pub, place: placeOf(pub), expires: Date.parse(pub.expires_at) };
    this.items.set(pub.pid, it);
    this.measure(it, at);
    this.list.append(li);
    this.list.scrollTop = this.list.scrollHeight;
  }

  // measure labels an alert with its distances from at, and returns them.
  measure(it, at) {
    const d = it.place && relation(at, it.place), el = it.li.querySelector(".d");
    el.title = "great-circle distance from where I am";
    if (!d) {
      el.textContent = it.place ? `in cell ${it.place.cell}` : "";
      return null;
    }
    const point = it.place.kind === "circle" && !it.place.radiusM;
    el.textContent = point ? `${fmtM(d.centreM)} away` : d.inside ? `inside · ${fmtM(d.centreM)} from centre` : `${fmtM(d.edgeM)} to edge · ${fmtM(d.centreM)} to centre`;
    Object.assign(it.li.dataset, { centreM: d.centreM, edgeM: d.edgeM, inside: d.inside });
    return d;
  }

  // moved keeps, after "me" moved, the alerts whose place still meets my
  // new circle — the new subscription's self-join will not send them
  // again — measured from there, and drops the rest, which were about
  // where I was.
  moved(at, radiusM) {
    for (const [pid, it] of this.items) {
      const d = this.measure(it, at);
      if (d && d.edgeM > radiusM) {
        it.li.remove();
        this.items.delete(pid);
      }
    }
  }

  // entries are the listed alerts, for the browser test.
  entries() {
    return [...this.items.values()].map(({ pub, li }) => {
      const d = li.dataset;
      return { pub, centreM: d.centreM ? +d.centreM : null, edgeM: d.edgeM ? +d.edgeM : null, inside: d.inside === "true", label: li.querySelector(".d").textContent };
    });
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

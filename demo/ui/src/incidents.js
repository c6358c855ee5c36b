// The incidents the page knows of (from its watch over the grid's six
// faces), each drawn as its true shape — a circle of its radius in
// metres, its polygon, or the cell it was published at — fading as it
// nears expiry and gone when it expires. A click on the mark at its
// centre shows, in a popup, what it is, who reported it and how long it
// has left; a click elsewhere inside it is the map's, so that "I am here"
// and "Publish incident" work inside incidents too, and "I am here" shows
// the same of every incident at the point (showAt).
import L from "leaflet";
import { centreOf, fmtM, placeOf, relation, unwrap } from "./geo.js";

const COLORS = { accident: "#e4572e", fire: "#d7263d", flood: "#2e86ab", roadwork: "#f4a261", "power outage": "#6a4c93", "gas leak": "#8ab17d", other: "#555" };

export function colorOf(category) {
  return COLORS[category] ?? COLORS.other;
}

const latlngs = (ring) => unwrap(ring).map((p) => [p.lat, p.lng]);

// timeLeft renders what is left of a lifetime, in whole seconds.
export function timeLeft(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return s < 60 ? `${s} s left` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s left`;
}

export class Incidents {
  constructor(map, cells) {
    this.map = map;
    this.cells = cells;
    // One canvas for every incident: thousands of shapes, hit-tested on
    // click by Leaflet.
    this.renderer = L.canvas({ padding: 0.2, tolerance: 3 }); // a mark is small: some slack for fingers
    this.byPid = new Map();
    this.popup = L.popup({ maxHeight: 240 });
    this.shown = []; // what the popup shows: [{inc, left}], counted down by tick
  }

  // add records and draws a publication once; false for a topic or a
  // known pid.
  add(pub) {
    if (this.byPid.has(pub.pid)) return false;
    const place = placeOf(pub);
    if (!place) return false;
    const tp = Date.parse(pub.tp), expires = Date.parse(pub.expires_at);
    const inc = { pid: pub.pid, uid: pub.uid, category: pub.attrs?.category ?? "other", desc: pub.desc ?? "", tp, expires, lifetime: Math.max(1, expires - tp), place, layer: null, mark: null, alpha: -1 };
    this.byPid.set(pub.pid, inc);
    const opts = { renderer: this.renderer, interactive: false, color: colorOf(inc.category), weight: 1.5 };
    if (place.kind === "circle" && place.radiusM > 0) this.draw(inc, L.circle([place.lat, place.lng], { ...opts, radius: place.radiusM }), place);
    else if (place.kind === "circle") this.draw(inc, null, place);
    else if (place.kind === "polygon") this.draw(inc, L.polygon(place.polys.map((rings) => rings.map(latlngs)), opts), place);
    else {
      this.cells.of([place.cell]).then(([c]) => {
        if (c && this.byPid.get(inc.pid) === inc) this.draw(inc, L.polygon(latlngs(c.path), opts), centreOf(c.corners));
      }, () => {}); // not a grid cell: nothing to draw
    }
    return true;
  }

  // draw adds an incident's shape (none for a point) and its mark.
  draw(inc, shape, centre) {
    inc.layer = shape?.addTo(this.map) ?? null;
    inc.mark = L.circleMarker([centre.lat, centre.lng], { renderer: this.renderer, bubblingMouseEvents: false, radius: 5, weight: 1.5, color: "#fff", fillColor: colorOf(inc.category) });
    inc.mark.on("click", () => this.show([inc], [centre.lat, centre.lng])).addTo(this.map);
    this.fade(inc, Date.now());
  }

  // showAt opens the popup over every incident that holds the point
  // (cells aside), the latest first; false if none does.
  showAt(lat, lng) {
    const here = [...this.byPid.values()].filter((inc) => inc.mark && relation({ lat, lng }, inc.place)?.inside).sort((a, b) => b.tp - a.tp);
    return here.length > 0 && (this.show(here, [lat, lng]), true);
  }

  // show opens the popup at where, listing incs; tick counts them down.
  show(incs, where) {
    const box = document.createElement("div");
    this.shown = incs.map((inc) => {
      const el = box.appendChild(document.createElement("div"));
      el.className = "incident";
      const p = inc.place;
      const shape = p.kind === "circle" ? (p.radiusM ? `circle of ${fmtM(p.radiusM)}` : "point") : p.kind === "polygon" ? `polygon of ${p.polys.reduce((n, r) => n + r[0].length, 0)} vertices` : `cell ${p.cell}`;
      el.innerHTML = `<b class="cat"></b><div class="desc"></div><div class="by">by <span class="uid"></span></div><div class="left"></div><div class="shape"></div>`;
      el.querySelector(".cat").textContent = inc.category;
      el.querySelector(".desc").textContent = inc.desc;
      el.querySelector(".uid").textContent = inc.uid;
      el.querySelector(".shape").textContent = `${shape}, published ${new Date(inc.tp).toLocaleTimeString([], { hour12: false })}`;
      el.dataset.pid = inc.pid;
      const left = el.querySelector(".left");
      left.textContent = timeLeft(inc.expires - Date.now());
      return { inc, left };
    });
    this.popup.setLatLng(where).setContent(box).openOn(this.map);
  }

  // fade sets an incident's opacity by the share of its life left.
  fade(inc, now) {
    const a = Math.round((0.15 + 0.6 * Math.max(0, (inc.expires - now) / inc.lifetime)) * 20) / 20;
    if (!inc.mark || a === inc.alpha) return;
    inc.alpha = a;
    inc.layer?.setStyle({ fillOpacity: a * 0.6, opacity: Math.min(1, a + 0.2) });
    inc.mark.setStyle({ fillOpacity: Math.min(1, a + 0.25), opacity: Math.min(1, a + 0.25) });
  }

  // tick fades, counts down the popup, and forgets what expired (the
  // popup says "0 s left" of it).
  tick(now) {
    for (const [pid, inc] of this.byPid) {
      if (inc.expires <= now) {
        inc.layer?.remove();
        inc.mark?.remove();
        this.byPid.delete(pid);
      } else this.fade(inc, now);
    }
    if (this.popup.isOpen()) for (const { inc, left } of this.shown) left.textContent = timeLeft(inc.expires - now);
  }

  get size() {
    return this.byPid.size;
  }

  values() {
    return this.byPid.values();
  }
}

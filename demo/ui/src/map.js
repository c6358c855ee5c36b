// The map: Leaflet with no tiles, New York's counties as GeoJSON, and two
// canvases over it — one redrawn when the view moves (the quad-tree grid,
// place names), one every frame (incidents, users, me). Canvases keep
// 10,000 moving dots cheap where 10,000 Leaflet markers would not be.
import L from "leaflet";
import { BOX, cellBox, cellWidthM } from "./geo.js";

export const COLORS = { accident: "#e4572e", fire: "#d7263d", flood: "#2e86ab", roadwork: "#f4a261", "power outage": "#6a4c93", "gas leak": "#8ab17d", other: "#555" };

export function colorOf(category) {
  return COLORS[category] ?? COLORS.other;
}

export class DemoMap {
  constructor(el, geo, places) {
    this.places = places;
    this.map = L.map(el, { zoomAnimation: false, fadeAnimation: false, markerZoomAnimation: false, minZoom: 6, maxZoom: 17, zoomSnap: 0.5,
      maxBounds: [[BOX.minLat - 1, BOX.minLng - 2], [BOX.maxLat + 1, BOX.maxLng + 2]] });
    this.map.attributionControl.setPrefix(false);
    this.map.attributionControl.addAttribution("Outlines: US Census Bureau via us-atlas · Places: GeoNames, geonames.org (CC BY 4.0)");
    L.geoJSON(geo.counties, { style: { color: "#9aa5b1", weight: 1, fillColor: "#f4f1ea", fillOpacity: 1, className: "county" }, interactive: false }).addTo(this.map);
    L.geoJSON(geo.state, { style: { color: "#52606d", weight: 2, fill: false, className: "state" }, interactive: false }).addTo(this.map);
    this.map.fitBounds([[40.45, -74.35], [41.05, -73.6]]); // New York City first: where most people are
    this.still = this.canvas(450);
    this.live = this.canvas(460);
    this.gridDepth = 1;
    this.dirty = true;
    this.map.on("move zoom resize viewreset", () => (this.dirty = true));
  }

  canvas(z) {
    const c = L.DomUtil.create("canvas", "overlay", this.map.getContainer());
    c.style.zIndex = z;
    return c;
  }

  // fit sizes a canvas to the map, in device pixels; false if unchanged.
  fit(c) {
    const { x, y } = this.map.getSize(), r = devicePixelRatio;
    if (c.width === Math.round(x * r) && c.height === Math.round(y * r)) return false;
    c.width = Math.round(x * r), c.height = Math.round(y * r);
    c.style.width = x + "px", c.style.height = y + "px";
    return true;
  }

  px(lat, lng) {
    return this.map.latLngToContainerPoint([lat, lng]);
  }

  ctx(c) {
    const g = c.getContext("2d");
    g.setTransform(devicePixelRatio, 0, 0, devicePixelRatio, 0, 0);
    return g;
  }

  // drawStill draws the grid and the place names when the view changed.
  drawStill() {
    if (this.fit(this.still)) this.dirty = true;
    if (!this.dirty) return;
    this.dirty = false;
    const g = this.ctx(this.still), { x: w, y: h } = this.map.getSize();
    g.clearRect(0, 0, w, h);
    // The depth whose cells are about 50 px wide: the grid follows the zoom.
    const a = this.px(BOX.minLat, BOX.minLng), b = this.px(BOX.maxLat, BOX.maxLng);
    const d = Math.max(1, Math.min(16, 1 + Math.floor(Math.log2((b.x - a.x) / 50))));
    this.gridDepth = d;
    const view = this.map.getBounds();
    for (const [depth, style, width] of [[d, "rgba(60,90,140,0.18)", 1], [d - 1, "rgba(60,90,140,0.38)", 1.5]]) {
      if (depth < 1) continue;
      const n = 2 ** (depth - 1), dLng = (BOX.maxLng - BOX.minLng) / n, dLat = (BOX.maxLat - BOX.minLat) / n;
      g.strokeStyle = style, g.lineWidth = width;
      g.beginPath();
      const i0 = Math.max(0, Math.floor((view.getWest() - BOX.minLng) / dLng)), i1 = Math.min(n, Math.ceil((view.getEast() - BOX.minLng) / dLng));
      for (let i = i0; i <= i1; i++) g.moveTo(this.px(0, BOX.minLng + i * dLng).x, a.y), g.lineTo(this.px(0, BOX.minLng + i * dLng).x, b.y);
      const j0 = Math.max(0, Math.floor((view.getSouth() - BOX.minLat) / dLat)), j1 = Math.min(n, Math.ceil((view.getNorth() - BOX.minLat) / dLat));
      for (let j = j0; j <= j1; j++) {
        const y = this.px(BOX.minLat + j * dLat, 0).y;
        g.moveTo(a.x, y), g.lineTo(b.x, y);
      }
      g.stroke();
    }
    // Place names: the most populous first, and only as many as the zoom
    // has room for.
    const z = this.map.getZoom(), minPop = z < 7 ? 150_000 : z < 8 ? 40_000 : z < 9 ? 15_000 : z < 10 ? 5_000 : z < 11 ? 1_500 : 0;
    g.font = "11px system-ui, sans-serif";
    g.textAlign = "center";
    const taken = [];
    for (const [name, pop, lat, lng] of this.places) {
      if (pop < minPop) break;
      if (!view.contains([lat, lng])) continue;
      const p = this.px(lat, lng), tw = g.measureText(name).width / 2 + 4;
      if (taken.some((t) => Math.abs(t.x - p.x) < t.w + tw && Math.abs(t.y - p.y) < 14)) continue;
      taken.push({ x: p.x, y: p.y, w: tw });
      g.fillStyle = "#334";
      g.fillRect(p.x - 1.5, p.y - 1.5, 3, 3);
      g.lineWidth = 3, g.strokeStyle = "rgba(255,255,255,0.85)";
      g.strokeText(name, p.x, p.y - 5);
      g.fillText(name, p.x, p.y - 5);
    }
    g.textAlign = "left";
    g.fillStyle = "#234";
    g.font = "12px system-ui, sans-serif";
    const lat = this.map.getCenter().lat, m = cellWidthM(d, lat);
    g.fillText(`grid: quad-tree cells of depth ${d} (~${m >= 1000 ? (m / 1000).toFixed(1) + " km" : Math.round(m) + " m"} across), depth ${d - 1} bolder`, 8, h - 8);
  }

  // drawLive draws incidents, users and me for this frame.
  drawLive(now, incidents, users, me) {
    this.fit(this.live);
    const g = this.ctx(this.live), { x: w, y: h } = this.map.getSize();
    g.clearRect(0, 0, w, h);
    const wall = Date.now();
    const mPerPx = this.mPerPx();
    for (const inc of incidents.values()) {
      const left = (inc.expires - wall) / inc.lifetime;
      if (left <= 0) continue;
      g.globalAlpha = 0.15 + 0.6 * left;
      g.fillStyle = g.strokeStyle = colorOf(inc.category);
      if (inc.box) {
        const p = this.px(inc.box.maxLat, inc.box.minLng), q = this.px(inc.box.minLat, inc.box.maxLng);
        g.fillRect(p.x, p.y, q.x - p.x, q.y - p.y);
      } else {
        const p = this.px(inc.lat, inc.lng);
        if (p.x < -500 || p.y < -500 || p.x > w + 500 || p.y > h + 500) continue;
        g.beginPath();
        g.arc(p.x, p.y, Math.max(4, inc.radiusM / mPerPx), 0, 2 * Math.PI);
        g.fill();
      }
    }
    g.globalAlpha = 1;
    for (const u of users) {
      const p = this.px(u.lat, u.lng);
      if (p.x < 0 || p.y < 0 || p.x > w || p.y > h) continue;
      if (now - u.flash < 700) {
        g.fillStyle = "#ff6f00";
        g.fillRect(p.x - 4, p.y - 4, 8, 8);
      } else {
        g.fillStyle = "#1d4ed8";
        g.fillRect(p.x - 1.5, p.y - 1.5, 3, 3);
      }
    }
    if (me.lat !== undefined) {
      const box = me.cell && cellBox(me.cell);
      if (box) {
        const p = this.px(box.maxLat, box.minLng), q = this.px(box.minLat, box.maxLng);
        g.strokeStyle = "#111", g.lineWidth = 2, g.setLineDash([6, 4]);
        g.strokeRect(p.x, p.y, q.x - p.x, q.y - p.y);
        g.setLineDash([]);
        g.fillStyle = "#111", g.font = "12px system-ui, sans-serif";
        g.fillText(`my cell ${me.cell}`, p.x + 4, p.y + 14);
      }
      const c = this.px(me.lat, me.lng);
      g.beginPath();
      g.arc(c.x, c.y, me.radiusM / mPerPx, 0, 2 * Math.PI);
      g.strokeStyle = "#111", g.lineWidth = 1.5, g.stroke();
      g.beginPath();
      g.arc(c.x, c.y, 7, 0, 2 * Math.PI);
      g.fillStyle = "#10b981", g.fill();
      g.strokeStyle = "#fff", g.lineWidth = 2, g.stroke();
    }
  }

  // mPerPx is the ground size of a pixel at the view's centre.
  mPerPx() {
    const c = this.map.getCenter(), p = this.px(c.lat, c.lng);
    return this.map.distance(c, this.map.containerPointToLatLng([p.x + 100, p.y])) / 100;
  }
}

// The map: Leaflet with no tiles over a world base (land and country
// borders from Natural Earth), New York State's counties and its
// neighbouring states (US Census Bureau, finer than the world's), and two
// canvases in a pane of their own — one redrawn when the view moves (the
// broker's grid, place names), one every frame (the moving users).
// Canvases keep 10,000 moving dots cheap where 10,000 markers would not be.
import L from "leaflet";
import { Grid } from "./grid.js";

// Cities the "go to" list offers, also named on the map.
export const CITIES = [
  ["New York", 40.7128, -74.006],
  ["Paris", 48.8566, 2.3522],
  ["London", 51.5074, -0.1278],
  ["Tokyo", 35.6812, 139.7671],
  ["São Paulo", -23.5505, -46.6333],
  ["Sydney", -33.8688, 151.2093],
];
const NYC = [[40.45, -74.35], [41.05, -73.6]]; // where most of the simulated people are

export class DemoMap {
  constructor(el, world, ny, places, cells) {
    this.map = L.map(el, { zoomAnimation: false, fadeAnimation: false, markerZoomAnimation: false, minZoom: 2, maxZoom: 18, zoomSnap: 0.5,
      maxBounds: [[-85, -180], [85, 180]], maxBoundsViscosity: 1 });
    this.map.attributionControl.setPrefix(false);
    this.map.attributionControl.addAttribution("Land, borders: Natural Earth via world-atlas · US states: US Census Bureau via us-atlas · Places: GeoNames (CC BY 4.0)");
    const base = this.pane("base", 250), svg = L.svg({ pane: "base" });
    const layer = (geo, style) => L.geoJSON(geo, { pane: "base", renderer: svg, interactive: false, style }).addTo(this.map);
    const land = { stroke: false, fillColor: "#e8ebe1", fillOpacity: 1 };
    layer(world.land, { ...land, className: "land" });
    // Around New York the world's coarse land gives way to the sea and
    // the finer states (data.mjs: nothing else is land in that box).
    const [[s, w], [n, e]] = ny.detail;
    layer({ type: "Polygon", coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]]] }, { stroke: false, fillColor: "#dce9f2", fillOpacity: 1, className: "sea" });
    layer(ny.neighbours, { ...land, className: "neighbour" });
    layer(world.borders, { color: "#aab4bd", weight: 0.8, fill: false, className: "border" });
    layer(ny.stateBorders, { color: "#aab4bd", weight: 0.8, fill: false, className: "state-border" });
    layer(ny.counties, { color: "#9aa5b1", weight: 1, fillColor: "#f4f1ea", fillOpacity: 1, className: "county" });
    layer(ny.state, { color: "#52606d", weight: 2, fill: false, className: "state" });
    base.style.pointerEvents = "none";
    // Labels: the world's cities at any zoom, New York's places as the
    // zoom makes room (most populous first).
    this.labels = [...CITIES.map(([name, lat, lng]) => [name, Infinity, lat, lng]), ...places];
    this.map.fitBounds(NYC);
    const sim = this.pane("sim", 450);
    this.still = this.canvas(sim);
    this.live = this.canvas(sim);
    this.dirty = true;
    this.map.on("move zoom resize viewreset", () => (this.dirty = true));
    this.grid = new Grid(this.map, cells, () => (this.dirty = true));
    this.grid.refresh();
  }

  pane(name, z) {
    const p = this.map.createPane(name);
    p.style.zIndex = z;
    return p;
  }

  goTo(name) {
    const c = CITIES.find((x) => x[0] === name);
    if (name === "New York") this.map.fitBounds(NYC);
    else if (c) this.map.setView([c[1], c[2]], 12);
  }

  canvas(pane) {
    return L.DomUtil.create("canvas", "overlay", pane);
  }

  // fit sizes a canvas to the map, in device pixels, and keeps it over
  // the view (its pane moves with the map); false if the size is unchanged.
  fit(c) {
    L.DomUtil.setPosition(c, this.map.containerPointToLayerPoint([0, 0]));
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
    this.grid.draw(g);
    const view = this.map.getBounds(), z = this.map.getZoom();
    const minPop = z < 5 ? Infinity : z < 7 ? 150_000 : z < 8 ? 40_000 : z < 9 ? 15_000 : z < 10 ? 5_000 : z < 11 ? 1_500 : 0;
    g.font = "12px system-ui, sans-serif";
    const noteW = g.measureText(this.grid.note).width + 8;
    g.font = "11px system-ui, sans-serif";
    g.textAlign = "center";
    const taken = [];
    for (const [name, pop, lat, lng] of this.labels) {
      if (pop < minPop) break;
      if (!view.contains([lat, lng])) continue;
      const p = this.px(lat, lng), tw = g.measureText(name).width / 2 + 4;
      if (p.y > h - 26 && p.x - tw < noteW + 4) continue; // under the grid's note
      if (taken.some((t) => Math.abs(t.x - p.x) < t.w + tw && Math.abs(t.y - p.y) < 14)) continue;
      taken.push({ x: p.x, y: p.y, w: tw });
      g.fillStyle = "#334";
      g.fillRect(p.x - 1.5, p.y - 1.5, 3, 3);
      g.lineWidth = 3, g.strokeStyle = "rgba(255,255,255,0.85)";
      g.strokeText(name, p.x, p.y - 5);
      g.fillText(name, p.x, p.y - 5);
    }
    g.textAlign = "left";
    g.font = "12px system-ui, sans-serif";
    g.fillStyle = "rgba(255,255,255,0.85)"; // legible over the grid and the users
    g.fillRect(4, h - 22, noteW, 18);
    g.fillStyle = "#234";
    g.fillText(this.grid.note, 8, h - 8);
  }

  // drawLive draws the moving users for this frame; a user the broker
  // just notified flashes orange.
  drawLive(now, users) {
    this.fit(this.live);
    const g = this.ctx(this.live), { x: w, y: h } = this.map.getSize();
    g.clearRect(0, 0, w, h);
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
  }
}

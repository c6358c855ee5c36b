// The broker's S2 grid, from its own /cells endpoint (the page does no S2
// of its own): the cells of a level over a box, and the outlines of named
// cells. Each cell comes back as its id, level and path, the great-circle
// arcs between its corners interpolated (they curve on the map) and
// unwrapped across the antimeridian.
import { arc, unwrap } from "./geo.js";

const STEP = 0.02; // radians between interpolated points (~130 km)
const MAX_IDS = 256; // the endpoint's limit per request

// cellOf turns one GeoJSON feature of /cells into {id, level, corners, path}.
function cellOf(f) {
  const corners = f.geometry.coordinates[0].slice(0, 4).map(([lng, lat]) => ({ lat, lng }));
  const path = [];
  for (let k = 0; k < 4; k++) path.push(...arc(corners[k], corners[(k + 1) % 4], STEP).slice(k ? 1 : 0));
  return { id: f.properties.id, level: f.properties.level, corners, path: unwrap(path) };
}

async function get(url) {
  const r = await fetch(url);
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.message ?? `${url}: ${r.status}`);
  return body.features.map(cellOf);
}

export class Cells {
  constructor() {
    this.boxes = new Map(); // url → Promise of cells; the last few views
    this.outlines = new Map(); // id → cell, or a Promise while fetched
  }

  // inBox lists the cells of a level covering a box; rejects when the
  // broker finds it too many.
  inBox(south, west, north, east, level) {
    const f = (x) => +x.toFixed(6);
    const url = `/cells?box=${f(south)},${f(west)},${f(north)},${f(east)}&level=${level}`;
    if (!this.boxes.has(url)) {
      this.boxes.set(url, get(url));
      this.boxes.get(url).catch(() => this.boxes.delete(url)); // ask again next time
      if (this.boxes.size > 24) this.boxes.delete(this.boxes.keys().next().value);
    }
    return this.boxes.get(url);
  }

  // of resolves the outlines of the given grid cells, in order.
  async of(ids) {
    if (this.outlines.size > 4096) this.outlines.clear(); // a long visit's covers
    const missing = [...new Set(ids.filter((id) => !this.outlines.has(id)))];
    for (let i = 0; i < missing.length; i += MAX_IDS) {
      const batch = missing.slice(i, i + MAX_IDS);
      const p = get("/cells?ids=" + batch.join(","));
      batch.forEach((id) => this.outlines.set(id, p.then((cells) => cells.find((c) => c.id === id))));
      p.catch(() => batch.forEach((id) => this.outlines.delete(id)));
    }
    return Promise.all(ids.map((id) => this.outlines.get(id)));
  }
}

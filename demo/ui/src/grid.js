// The grid overlay: the broker's S2 cells over the view, at the level
// whose cells are about 48 px across, and their parents in bolder lines.
// Fetched from /cells when the view settles (debounced), over the view
// snapped outward to a step of about a quarter of it, so that small pans
// ask again for the same, cached, box.
import { R, fmtM } from "./geo.js";

const TARGET_PX = 48;
const EDGE0_M = Math.sqrt((4 * Math.PI) / 6) * R; // a level-0 cell's mean edge (geo.CellEdgeM)
const MAX_LEVEL = 16; // the broker indexes nothing finer (a point's cell)

export function edgeM(level) {
  return EDGE0_M / 2 ** level;
}

// mPerPx is the ground size of a pixel at the view's centre.
export function mPerPx(map) {
  const c = map.getCenter(), p = map.latLngToContainerPoint(c);
  return map.distance(c, map.containerPointToLatLng([p.x + 100, p.y])) / 100;
}

export class Grid {
  constructor(map, cells, onChange) {
    this.map = map;
    this.cells = cells;
    this.onChange = onChange;
    this.level = null;
    this.center = null; // the view's centre the cells were asked for
    this.fine = [];
    this.coarse = [];
    this.note = "grid: loading…";
    this.timer = 0;
    this.seq = 0;
    map.on("moveend resize", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.refresh(), 150);
    });
  }

  levelFor(m) {
    return Math.max(0, Math.min(MAX_LEVEL, Math.round(Math.log2(EDGE0_M / (TARGET_PX * m)))));
  }

  async refresh() {
    const seq = ++this.seq, level = this.levelFor(mPerPx(this.map)), b = this.map.getBounds(), center = this.map.getCenter();
    let s = Math.max(-90, b.getSouth()), n = Math.min(90, b.getNorth()), w = Math.max(-180, b.getWest()), e = Math.min(180, b.getEast());
    const step = 2 ** Math.floor(Math.log2(Math.max(n - s, e - w) / 4));
    [s, w] = [Math.max(-90, Math.floor(s / step) * step), Math.max(-180, Math.floor(w / step) * step)];
    [n, e] = [Math.min(90, Math.ceil(n / step) * step), Math.min(180, Math.ceil(e / step) * step)];
    let state;
    try {
      const [fine, coarse] = await Promise.all([this.cells.inBox(s, w, n, e, level), level > 0 ? this.cells.inBox(s, w, n, e, level - 1) : []]);
      const bold = level > 0 ? `, level ${level - 1} bolder` : "";
      state = { level, center, fine, coarse, note: `grid: S2 cells of level ${level} (~${fmtM(edgeM(level))} across)${bold}, from the broker's /cells` };
    } catch (err) {
      state = { level: null, center, fine: [], coarse: [], note: `grid not drawn: ${err.message}` }; // too many cells for the broker
    }
    if (seq !== this.seq) return; // the view moved on meanwhile
    Object.assign(this, state);
    this.onChange();
  }

  // draw strokes the cells onto a canvas context.
  draw(g) {
    for (const [cells, style, width] of [[this.fine, "rgba(60,90,140,0.2)", 1], [this.coarse, "rgba(60,90,140,0.45)", 1.5]]) {
      g.strokeStyle = style, g.lineWidth = width;
      g.beginPath();
      for (const c of cells) {
        c.path.forEach((p, i) => {
          const q = this.map.latLngToContainerPoint([p.lat, p.lng]);
          i ? g.lineTo(q.x, q.y) : g.moveTo(q.x, q.y);
        });
      }
      g.stroke();
    }
  }
}

// Land, for the simulated users: New York's counties and the neighbouring
// states (us-atlas, 1:10m), so that a user who walks out of New York stays
// on land — in New Jersey, say — and never in the Sound or Lake Ontario. The
// test is planar in degrees: these outlines' edges are a few km long, and
// a great-circle edge strays from the straight one by metres there.

export class Land {
  // features: GeoJSON Polygon or MultiPolygon features.
  constructor(features) {
    this.shapes = features.flatMap((f) => (f.geometry.type === "Polygon" ? [f.geometry.coordinates] : f.geometry.coordinates)).map((rings) => {
      let w = Infinity, s = Infinity, e = -Infinity, n = -Infinity;
      for (const [x, y] of rings[0]) (w = Math.min(w, x)), (e = Math.max(e, x)), (s = Math.min(s, y)), (n = Math.max(n, y));
      return { rings, w, s, e, n };
    });
  }

  // find is the index of the shape that holds the point, -1 if none (the
  // sea); hint, the shape that held it last, is tried first.
  find(lat, lng, hint = -1) {
    if (hint >= 0 && this.holds(this.shapes[hint], lat, lng)) return hint;
    return this.shapes.findIndex((s) => this.holds(s, lat, lng));
  }

  holds(s, lat, lng) {
    if (lng < s.w || lng > s.e || lat < s.s || lat > s.n) return false;
    return inRing(s.rings[0], lat, lng) && !s.rings.slice(1).some((h) => inRing(h, lat, lng));
  }
}

// inRing: a ray from the point eastwards crosses the ring an odd number of
// times.
function inRing(ring, lat, lng) {
  let odd = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [x1, y1] = ring[i], [x2, y2] = ring[j];
    if (y1 > lat !== y2 > lat && lng < x1 + ((lat - y1) * (x2 - x1)) / (y2 - y1)) odd = !odd;
  }
  return odd;
}

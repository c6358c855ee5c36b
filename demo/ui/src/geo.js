// Geometry on the broker's sphere (geo/grid.go: radius 6,371,008.8 m):
// great-circle distances by the haversine formula, bearings, the
// distance from a point to an incident's circle or polygon, and the
// shapes the page publishes. The broker decides what meets what; the page
// only measures, to say how far away an alert is.

export const R = 6_371_008.8;
const RAD = Math.PI / 180;

// distanceM is the great-circle distance between two {lat, lng} points.
export function distanceM(a, b) {
  const h = Math.sin(((b.lat - a.lat) * RAD) / 2) ** 2 + Math.cos(a.lat * RAD) * Math.cos(b.lat * RAD) * Math.sin(((b.lng - a.lng) * RAD) / 2) ** 2;
  return 2 * R * Math.asin(Math.min(1, Math.sqrt(h)));
}

// bearing is the initial direction from a to b, in radians from north.
export function bearing(a, b) {
  const φ1 = a.lat * RAD, φ2 = b.lat * RAD, Δλ = (b.lng - a.lng) * RAD;
  return Math.atan2(Math.sin(Δλ) * Math.cos(φ2), Math.cos(φ1) * Math.sin(φ2) - Math.sin(φ1) * Math.cos(φ2) * Math.cos(Δλ));
}

// destination is the point distM metres from p along bearing θ (radians).
export function destination(p, θ, distM) {
  const δ = distM / R, φ1 = p.lat * RAD, λ1 = p.lng * RAD;
  const φ2 = Math.asin(Math.sin(φ1) * Math.cos(δ) + Math.cos(φ1) * Math.sin(δ) * Math.cos(θ));
  const λ2 = λ1 + Math.atan2(Math.sin(θ) * Math.sin(δ) * Math.cos(φ1), Math.cos(δ) - Math.sin(φ1) * Math.sin(φ2));
  return { lat: φ2 / RAD, lng: wrapLng(λ2 / RAD) };
}

// wrapLng brings a longitude back into -180…180, which the broker takes.
function wrapLng(lng) {
  return ((((lng + 180) % 360) + 360) % 360) - 180;
}

// arcDistanceM is the distance from p to the shorter great-circle arc
// from a to b: across the arc where p's foot falls on it, else to the
// nearer end.
export function arcDistanceM(p, a, b) {
  const δ13 = distanceM(a, p) / R, δ12 = distanceM(a, b) / R;
  if (δ12 === 0) return δ13 * R;
  const dθ = bearing(a, p) - bearing(a, b);
  if (Math.cos(dθ) < 0) return δ13 * R; // p lies behind a
  const xt = Math.asin(Math.sin(δ13) * Math.sin(dθ));
  const along = Math.acos(Math.min(1, Math.cos(δ13) / Math.cos(xt)));
  return along > δ12 ? distanceM(b, p) : Math.abs(xt) * R;
}

// insideRing: p is inside a ring (smaller than a hemisphere) when the
// bearings from p to its vertices turn once around p.
export function insideRing(p, ring) {
  let turn = 0;
  for (let i = 0; i < ring.length; i++) {
    let d = bearing(p, ring[(i + 1) % ring.length]) - bearing(p, ring[i]);
    if (d > Math.PI) d -= 2 * Math.PI;
    if (d < -Math.PI) d += 2 * Math.PI;
    turn += d;
  }
  return Math.abs(turn) > Math.PI;
}

// ringsOf reads a GeoJSON Polygon or MultiPolygon into polygons of rings
// of {lat, lng}, shell first, without GeoJSON's closing repeat.
export function ringsOf(geometry) {
  const polys = geometry.type === "Polygon" ? [geometry.coordinates] : geometry.coordinates;
  return polys.map((rings) => rings.map((r) => r.slice(0, -1).map(([lng, lat]) => ({ lat, lng }))));
}

// centreOf is the mean direction of points: a polygon's centre, for
// distances and for where to click it.
export function centreOf(points) {
  let x = 0, y = 0, z = 0;
  for (const p of points) {
    const φ = p.lat * RAD, λ = p.lng * RAD;
    x += Math.cos(φ) * Math.cos(λ), y += Math.cos(φ) * Math.sin(λ), z += Math.sin(φ);
  }
  return { lat: Math.atan2(z, Math.hypot(x, y)) / RAD, lng: Math.atan2(y, x) / RAD };
}

// placeOf is where a publication happened: a circle (radius 0 for a
// point), a polygon, a cell (published at a cell id) or null (a topic).
export function placeOf(pub) {
  if (pub.polygon) {
    const polys = ringsOf(pub.polygon);
    return { kind: "polygon", polys, ...centreOf(polys.flatMap((rings) => rings[0])) };
  }
  if (pub.lat !== undefined) return { kind: "circle", lat: pub.lat, lng: pub.lng, radiusM: pub.radius_m ?? 0 };
  if (!pub.topic && pub.cell) return { kind: "cell", cell: pub.cell };
  return null;
}

// relation measures a place from p: the distance to its centre, to its
// edge (0 when p is inside), and whether p is inside. Null for a cell.
export function relation(p, place) {
  if (place.kind === "circle") {
    const centreM = distanceM(p, place);
    return { centreM, edgeM: Math.max(0, centreM - place.radiusM), inside: centreM <= place.radiusM };
  }
  if (place.kind !== "polygon") return null;
  const centreM = distanceM(p, place);
  const inside = place.polys.some(([shell, ...holes]) => insideRing(p, shell) && !holes.some((h) => insideRing(p, h)));
  let edgeM = Infinity;
  if (!inside) {
    for (const rings of place.polys) {
      for (const r of rings) for (let i = 0; i < r.length; i++) edgeM = Math.min(edgeM, arcDistanceM(p, r[i], r[(i + 1) % r.length]));
    }
  }
  return { centreM, edgeM: inside ? 0 : edgeM, inside };
}

// regularPolygon is a GeoJSON Polygon of n vertices radiusM from the
// centre (a square's sides face north, south, east and west).
export function regularPolygon(centre, radiusM, n) {
  const start = n === 4 ? Math.PI / 4 : 0;
  const ring = [];
  for (let k = 0; k < n; k++) {
    const v = destination(centre, start + (2 * Math.PI * k) / n, radiusM);
    ring.push([round7(v.lng), round7(v.lat)]);
  }
  ring.push(ring[0]);
  return { type: "Polygon", coordinates: [ring] };
}

const round7 = (x) => Math.round(x * 1e7) / 1e7; // about a centimetre

// arc interpolates the great-circle arc from a to b every stepRad at
// most: a cell's edge is such an arc, which Mercator draws curved.
export function arc(a, b, stepRad) {
  const v = (p) => [Math.cos(p.lat * RAD) * Math.cos(p.lng * RAD), Math.cos(p.lat * RAD) * Math.sin(p.lng * RAD), Math.sin(p.lat * RAD)];
  const va = v(a), vb = v(b), ω = Math.acos(Math.min(1, va[0] * vb[0] + va[1] * vb[1] + va[2] * vb[2]));
  const n = Math.ceil(ω / stepRad);
  if (n <= 1) return [a, b]; // short: the corners themselves
  const out = [];
  for (let k = 0; k <= n; k++) {
    const wa = Math.sin((1 - k / n) * ω) / Math.sin(ω), wb = Math.sin((k / n) * ω) / Math.sin(ω);
    const x = wa * va[0] + wb * vb[0], y = wa * va[1] + wb * vb[1], z = wa * va[2] + wb * vb[2];
    out.push({ lat: Math.atan2(z, Math.hypot(x, y)) / RAD, lng: Math.atan2(y, x) / RAD });
  }
  return out;
}

// unwrap shifts longitudes by whole turns so that a path never jumps
// across the antimeridian (Leaflet draws lng 181 east of 179).
export function unwrap(points) {
  let prev = points[0].lng;
  return points.map((p) => {
    const lng = p.lng + 360 * Math.round((prev - p.lng) / 360);
    prev = lng;
    return { lat: p.lat, lng };
  });
}

// fmtM renders metres for people.
export function fmtM(m) {
  return m < 1000 ? `${Math.round(m)} m` : m < 100_000 ? `${(m / 1000).toFixed(1)} km` : `${Math.round(m / 1000).toLocaleString("en")} km`;
}

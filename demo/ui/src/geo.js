// The broker's quad tree over New York State (dewey/geo.go): the root "1"
// is the whole box, and each further component picks a quadrant, 1
// north-west, 2 north-east, 3 south-west, 4 south-east; a cell of depth d
// has d components. Points on a midline go north and east.

export const BOX = { minLat: 40.49, maxLat: 45.02, minLng: -79.77, maxLng: -71.85 };

export function inBox(lat, lng) {
  return lat >= BOX.minLat && lat <= BOX.maxLat && lng >= BOX.minLng && lng <= BOX.maxLng;
}

// cellOf names the cell of the given depth holding a point, or null
// outside the box.
export function cellOf(lat, lng, depth) {
  if (!inBox(lat, lng)) return null;
  let { minLat, maxLat, minLng, maxLng } = BOX;
  let id = "1";
  for (let d = 1; d < depth; d++) {
    const midLat = (minLat + maxLat) / 2, midLng = (minLng + maxLng) / 2;
    let q = 1;
    if (lat < midLat) q += 2, (maxLat = midLat);
    else minLat = midLat;
    if (lng >= midLng) q++, (minLng = midLng);
    else maxLng = midLng;
    id += "." + q;
  }
  return id;
}

// cellBox is a cell's rectangle, or null for a cell not in the tree (a
// topic, say).
export function cellBox(id) {
  const parts = id.split(".");
  if (parts[0] !== "1") return null;
  let { minLat, maxLat, minLng, maxLng } = BOX;
  for (const p of parts.slice(1)) {
    const q = +p, midLat = (minLat + maxLat) / 2, midLng = (minLng + maxLng) / 2;
    if (!(q >= 1 && q <= 4)) return null;
    if (q <= 2) minLat = midLat;
    else maxLat = midLat;
    if (q % 2 === 0) minLng = midLng;
    else maxLng = midLng;
  }
  return { minLat, maxLat, minLng, maxLng };
}

// cellWidthM is the east-west size of a cell of depth d, in metres, at lat.
export function cellWidthM(depth, lat) {
  return ((BOX.maxLng - BOX.minLng) / 2 ** (depth - 1)) * 111_320 * Math.cos((lat * Math.PI) / 180);
}

// distanceM is the great-circle distance between two points.
export function distanceM(lat1, lng1, lat2, lng2) {
  const r = Math.PI / 180;
  const a = Math.sin(((lat2 - lat1) * r) / 2) ** 2 + Math.cos(lat1 * r) * Math.cos(lat2 * r) * Math.sin(((lng2 - lng1) * r) / 2) ** 2;
  return 2 * 6_371_000 * Math.asin(Math.min(1, Math.sqrt(a)));
}

// where is the point a publication is drawn at: its own, or its cell's
// centre for one published at a cell.
export function where(pub) {
  if (pub.lat !== undefined) return { lat: pub.lat, lng: pub.lng, radiusM: pub.radius_m ?? 0 };
  const b = cellBox(pub.cell);
  if (!b) return null;
  return { lat: (b.minLat + b.maxLat) / 2, lng: (b.minLng + b.maxLng) / 2, radiusM: 0, box: b };
}

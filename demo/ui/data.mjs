// Builds the map's data files in ../static from npm packages pinned by the
// lock file, so that `make demo-ui` needs nothing outside the repository
// (an argument, which the Makefile used to pass, is ignored):
// - world.json: the land and the borders between countries, from
//   world-atlas (Natural Earth 1:110m), coordinates rounded to ~1 km;
// - ny.json: New York State's outline and counties, and the neighbouring
//   states, from us-atlas (US Census Bureau, 1:10m), rounded to ~10 m;
// - places.json: the GeoNames places the benchmarks use
//   (../../bench/places) as [name, population, lat, lng, weight] rows,
//   most populous first.
import { readFileSync, writeFileSync } from "node:fs";
import { feature, mesh } from "topojson-client";

const out = "../static/";
const read = (path) => JSON.parse(readFileSync(path, "utf8"));
const rounder = (k) => {
  const round = (c) => (typeof c[0] === "number" ? [Math.round(c[0] * k) / k, Math.round(c[1] * k) / k] : c.map(round));
  return round;
};
const slim = (g, round) => ({ type: g.type, coordinates: round(g.coordinates) });

// Sutherland–Hodgman against one meridian: the part of a ring (open, no
// closing repeat) on one side of lng x, closed again; null if none.
function clip(ring, x, west) {
  const out = [], inside = (p) => (west ? p[0] <= x : p[0] >= x);
  ring.forEach((a, i) => {
    const b = ring[(i + 1) % ring.length];
    if (inside(a)) out.push(a);
    if (inside(a) !== inside(b)) out.push([x, a[1] + ((x - a[0]) * (b[1] - a[1])) / (b[0] - a[0])]);
  });
  return out.length ? [...out, out[0]] : null;
}

// continuous makes a ring's longitudes continuous (no 360° jumps), near
// lng ref.
function continuous(ring, ref) {
  const u = [];
  for (const p of ring) u.push([p[0] + 360 * Math.round(((u.length ? u[u.length - 1][0] : ref) - p[0]) / 360), p[1]]);
  return u;
}

// Leaflet would draw an edge from lng 179 to -179 across the whole map:
// a polygon that crosses the antimeridian (Fiji, Chukotka) is cut there
// into its western and eastern parts, holes and all. A ring around the
// pole (Antarctica's) crosses by going once around the world, and is
// drawn as it is.
function cutAntimeridian(polys) {
  return polys.flatMap((rings) => {
    const open = rings.map((r) => r.slice(0, -1));
    if (!open[0].some((p, i) => i && Math.abs(p[0] - open[0][i - 1][0]) > 180)) return [rings];
    const shell = continuous(open[0], open[0][0][0]);
    if (Math.abs(shell[shell.length - 1][0] - shell[0][0]) > 180) return [rings]; // around a pole
    // One frame in which the crossing is at lng 180, holes in it too.
    const shift = Math.max(...shell.map((p) => p[0])) > 180 ? 0 : 360;
    const frame = open.map((r, i) => (i ? continuous(r, shell[0][0] + shift) : shell.map((p) => [p[0] + shift, p[1]])));
    const side = (west) => frame.map((r) => clip(r, 180, west)).filter(Boolean);
    return [side(true), side(false).map((r) => r.map((p) => [p[0] - 360, p[1]]))];
  });
}

const world = read("node_modules/world-atlas/countries-110m.json");
const land = feature(world, world.objects.land).features.map((f) => f.geometry);
if (land.length !== 1 || land[0].type !== "MultiPolygon") throw new Error("world-atlas land: want one MultiPolygon");
const borders = mesh(world, world.objects.countries, (a, b) => a !== b); // shared borders only, each once
const landCut = { type: "MultiPolygon", coordinates: cutAntimeridian(land[0].coordinates) };
writeFileSync(out + "world.json", JSON.stringify({ land: slim(landCut, rounder(100)), borders: slim(borders, rounder(100)) }));

const slimNY = (f, props) => ({ type: "Feature", properties: props, geometry: slim(f.geometry, rounder(1e4)) });
const states = read("node_modules/us-atlas/states-10m.json");
const counties = read("node_modules/us-atlas/counties-10m.json");
const state = feature(states, states.objects.states).features.find((f) => f.id === "36");
const ny = feature(counties, counties.objects.counties).features.filter((f) => String(f.id).startsWith("36"));
// New York's neighbours (NJ, CT, PA, MA, VT, RI) and Delaware, at the
// same scale as New York: the world's 1:110m land is a few km off at city
// zoom and fills New York Harbor's bays, where the simulated users would
// walk. The page paints the sea over `detail`, a box that holds no land
// but these states' and New York's, and draws them on it.
const NEAR = new Set(["34", "09", "42", "25", "50", "44", "10"]);
const near = feature(states, states.objects.states).features.filter((f) => NEAR.has(f.id));
const stateBorders = mesh(states, states.objects.states, (a, b) => a !== b && (NEAR.has(a.id) || a.id === "36") && (NEAR.has(b.id) || b.id === "36"));
writeFileSync(out + "ny.json", JSON.stringify({
  state: slimNY(state, { name: state.properties.name }),
  counties: { type: "FeatureCollection", features: ny.map((f) => slimNY(f, { name: f.properties.name })) },
  neighbours: { type: "FeatureCollection", features: near.map((f) => slimNY(f, { name: f.properties.name })) },
  stateBorders: slim(stateBorders, rounder(1e4)),
  detail: [[38.8, -75.7], [42.3, -71.5]], // south-west, north-east
}));

// A CSV line: geonameid,"name",code,population,lat,lng (names are quoted).
const rows = readFileSync("../../bench/places/ny_places_geonames.csv", "utf8").trim().split("\n").slice(1).map((line) => {
  const m = line.match(/^(\d+),"((?:[^"]|"")*)",([A-Z0-9]+),(\d+),([-\d.]+),([-\d.]+)$/);
  if (!m) throw new Error(`bad places row: ${line}`);
  return { name: m[2].replaceAll('""', '"'), code: m[3], pop: +m[4], lat: +m[5], lng: +m[6] };
});
// As bench/places does: New York City counts once, as its five boroughs;
// its neighbourhoods stay as labels but weigh nothing for the simulation.
const inNYC = (p) => p.lat > 40.49 && p.lat < 40.92 && p.lng > -74.26 && p.lng < -73.7;
const places = rows
  .filter((p) => p.name !== "New York City")
  .map((p) => [p.name, p.pop, p.lat, p.lng, p.code !== "PPLA2" && inNYC(p) ? 0 : 1])
  .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
writeFileSync(out + "places.json", JSON.stringify(places));
console.log(`world.json: land and ${borders.coordinates.length} border lines; ny.json: ${ny.length} counties, ${near.length} neighbouring states; places.json: ${places.length} places`);

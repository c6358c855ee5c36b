// Builds the map's data files in ../static from the us-atlas TopoJSON
// (../../../shared/data, or the directory given) and the GeoNames places
// the benchmarks use (../../bench/places): New York State's outline and
// counties as GeoJSON, coordinates rounded to ~10 m, and the places as
// [name, population, lat, lng, weight] rows, most populous first.
import { readFileSync, writeFileSync } from "node:fs";
import { feature } from "topojson-client";

const shared = process.argv[2] ?? "../../../shared/data";
const out = "../static/";
const round = (c) => (typeof c[0] === "number" ? [Math.round(c[0] * 1e4) / 1e4, Math.round(c[1] * 1e4) / 1e4] : c.map(round));
const slim = (f, props) => ({ type: "Feature", properties: props, geometry: { type: f.geometry.type, coordinates: round(f.geometry.coordinates) } });

const states = JSON.parse(readFileSync(`${shared}/states-10m.json`, "utf8"));
const counties = JSON.parse(readFileSync(`${shared}/counties-10m.json`, "utf8"));
const state = feature(states, states.objects.states).features.find((f) => f.id === "36");
const ny = feature(counties, counties.objects.counties).features.filter((f) => String(f.id).startsWith("36"));
writeFileSync(out + "ny.json", JSON.stringify({
  state: slim(state, { name: state.properties.name }),
  counties: { type: "FeatureCollection", features: ny.map((f) => slim(f, { name: f.properties.name })) },
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
console.log(`ny.json: ${ny.length} counties; places.json: ${places.length} places`);

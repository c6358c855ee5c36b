// The client against a real broker: every location form, windows,
// filters, self-join, queries, pages, lifecycle, the broker's errors, and
// tokens.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Cellcast, CellcastError } from "../src/cellcast.js";
import { Broker, WebSocket, sleep } from "./broker.mjs";

let broker, cc;
before(async () => {
  broker = await new Broker(["--reply-budget", "4096"]).start();
  cc = await Cellcast.connect(broker.url, { WebSocket, uid: "alice" });
});
after(async () => {
  cc?.close();
  await broker?.stop();
});

// take waits for n notifications of s, and then a little for any extra.
async function take(s, n, { extra = 100, timeout = 5000 } = {}) {
  const got = [];
  s.on("notification", (p) => got.push(p));
  const deadline = Date.now() + timeout;
  while (got.length < n && Date.now() < deadline) await sleep(10);
  await sleep(extra);
  return got;
}

const tag = () => Math.random().toString(36).slice(2, 8);
const square = (lat, lng, d) => ({ type: "Polygon", coordinates: [[[lng - d, lat - d], [lng + d, lat - d], [lng + d, lat + d], [lng - d, lat + d], [lng - d, lat - d]]] });

test("every location form: subscribe, publish, notification", async () => {
  const t = tag();
  const forms = [
    { name: "cell", sub: { cell: "1.4" }, hit: { cell: "1.4.2.3" }, miss: { cell: "1.3" } },
    { name: "point", sub: { lat: 48.8566, lng: 2.3522 }, hit: { lat: 48.8566, lng: 2.3522 }, miss: { lat: 48.9, lng: 2.5 } },
    { name: "circle", sub: { lat: 40.758, lng: -73.9855, radius_m: 1000, cover: 8 }, hit: { lat: 40.759, lng: -73.985 }, miss: { lat: 40.85, lng: -73.9855 } },
    { name: "polygon", sub: { polygon: square(35.68, 139.76, 0.01), cover: 6 }, hit: { lat: 35.681, lng: 139.761, radius_m: 50 }, miss: { lat: 35.75, lng: 139.76 } },
    { name: "topic", sub: { topic: `sports-${t}` }, hit: { topic: `sports-${t}/soccer` }, miss: { topic: `news-${t}` } },
  ];
  for (const f of forms) {
    const s = await cc.subscribe({ ...f.sub, future: "1m" });
    assert.equal(s.live, true, f.name);
    assert.match(s.sid, /\S/);
    const got = take(s, 1);
    await cc.publish({ ...f.miss, expires: "1m", desc: `${f.name} miss ${t}` });
    const r = await cc.publish({ ...f.hit, expires: "1m", desc: `${f.name} hit ${t}` });
    assert.equal(r.matched, 1, f.name);
    assert.deepEqual((await got).map((p) => p.desc), [`${f.name} hit ${t}`], f.name);
    if (f.sub.radius_m) assert.ok(s.cover.length > 1 && s.cover.length <= 8, `cover ${s.cover}`);
    await s.unsubscribe();
    assert.equal(s.reason, "cancelled");
  }
});

test("past and future windows, filters and self-join", async () => {
  const t = tag();
  const here = { lat: 51.5074, lng: -0.1278 };
  await cc.publish({ ...here, expires: "10m", desc: `flood in the past ${t}`, attrs: { category: "flood" } });
  await cc.publish({ ...here, expires: "10m", desc: `fire in the past ${t}` });
  const noPast = await cc.subscribe({ ...here, radius_m: 100, future: "1m" });
  assert.equal(noPast.results.length, 0);
  const filtered = await cc.subscribe({ ...here, radius_m: 100, past: "1m", future: "1m", filter: "flood" });
  assert.deepEqual(filtered.results.map((p) => p.desc), [`flood in the past ${t}`]);
  const byAttr = await cc.subscribe({ ...here, radius_m: 100, past: 60, future: 60, filter: { attrs: { category: "flood" } } });
  assert.equal(byAttr.results.length, 1);
  const got = take(filtered, 1);
  await cc.publish({ ...here, expires: "10m", desc: `fire now ${t}` });
  await cc.publish({ ...here, expires: "10m", desc: `FLOOD now ${t}` });
  assert.deepEqual((await got).map((p) => p.desc), [`FLOOD now ${t}`]);

  const uid = `walker-${t}`;
  const first = await cc.subscribe({ ...here, radius_m: 100, past: "1m", future: "1m", self_join: true, uid });
  assert.equal(first.results.length, 4);
  const news = take(first, 1);
  await cc.publish({ ...here, expires: "10m", desc: `new ${t}` });
  assert.deepEqual((await news).map((p) => p.desc), [`new ${t}`]);
  await cc.publish({ lat: here.lat + 0.003, lng: here.lng, expires: "10m", desc: `further ${t}` }); // 330 m north
  // Wider: what the first returned or was notified of is left out.
  const second = await cc.subscribe({ ...here, radius_m: 1000, past: "1m", self_join: true, uid });
  assert.equal(second.live, false);
  assert.equal(second.reason, "window_over");
  assert.deepEqual(second.results.map((p) => p.desc), [`further ${t}`]);
  await first.unsubscribe();
  for (const s of [noPast, filtered, byAttr]) await s.unsubscribe();
});

test("queries by attribute, time and place, and paged replies joined", async () => {
  const t = tag();
  const uid = `pager-${t}`;
  const here = { lat: -33.8688, lng: 151.2093 };
  const N = 60; // about 300 bytes each: far over the 4 KiB reply budget
  const t0 = new Date().toISOString();
  for (let i = 0; i < N; i++) await cc.publish({ ...here, uid, expires: "10m", desc: `${t} #${i} ${"x".repeat(100)}`, attrs: { category: `c-${t}` } });
  const byUid = await cc.query({ attr: "uid", eq: uid, k: 1000 });
  assert.equal(byUid.count, N);
  assert.equal(byUid.results.length, N);
  assert.equal(byUid.results[0].desc.split(" ")[1], `#${N - 1}`); // newest first
  const byCat = await cc.query({ attr: "category", eq: `c-${t}`, k: 5 });
  assert.equal(byCat.results.length, 5);
  const byTime = await cc.query({ attr: "tp", from: t0, to: new Date(Date.now() + 1000).toISOString(), k: 1000 });
  assert.ok(byTime.results.filter((p) => p.uid === uid).length === N);
  const near = await cc.query({ near: { ...here, radius_m: 500 }, attr: "uid", eq: uid, k: 1000 });
  assert.equal(near.place, "near");
  assert.equal(near.results.length, N);
  const within = await cc.query({ within: square(here.lat, here.lng, 0.01), k: 1000 });
  assert.equal(within.place, "within");
  assert.ok(within.results.length >= N);
  // Past results pushed in pages, and pulled by cursor.
  const s = await cc.subscribe({ ...here, radius_m: 100, past: "10m", filter: t });
  assert.equal(s.results.length, N);
  assert.deepEqual(new Set(s.results.map((p) => p.pid)).size, N);
  const pulled = await cc.subscribe({ ...here, radius_m: 100, past: "10m", filter: t, paging: "cursor" });
  assert.deepEqual(pulled.results.map((p) => p.pid), s.results.map((p) => p.pid));
  // A self-join publish's recent, paged too.
  const r = await cc.publish({ ...here, expires: "10m", desc: "with recent", self_join: true });
  assert.ok(r.recent.length >= N, `recent ${r.recent.length}`);
});

test("ended: window over, and the async iterator ends with it", async () => {
  const s = await cc.subscribe({ cell: "2.3", future: "1s" });
  const seen = [];
  const done = (async () => {
    for await (const n of s) seen.push(n.publication.desc);
  })();
  await cc.publish({ cell: "2.3.1", expires: "1m", desc: "in time" });
  const ended = [];
  s.on("ended", (reason, info) => ended.push(reason, info.last));
  assert.equal(await s.ended, "window_over");
  await done;
  assert.deepEqual(seen, ["in time"]);
  assert.equal(ended[0], "window_over");
  assert.equal(ended[1], s.lastSeq);
  assert.equal(cc.subs.has(s.sid), false);
});

test("the broker's errors surface with their code", async () => {
  await assert.rejects(cc.subscribe({ lat: 1, lng: 1, radius_m: 5e7, future: "1m" }), (e) => e instanceof CellcastError && e.code === "bad_request" && !e.local && /radius/.test(e.message));
  await assert.rejects(cc.subscribe({ cell: "1.4", future: "2h" }), { code: "bad_request", local: false });
  const gone = await cc.subscribe({ cell: "1.4", future: "1m" });
  await gone.unsubscribe();
  await assert.rejects(cc.unsubscribe(gone.sid), { code: "not_found", local: false });
  await assert.rejects(cc.unsubscribe("no-such-sid"), { code: "bad_request", local: false });
  await assert.rejects(cc.query({ attr: "colour", eq: "red" }), { code: "bad_request", local: false });
  const anon = await Cellcast.connect(broker.url, { WebSocket });
  await assert.rejects(anon.publish({ cell: "1.4" }), (e) => e.code === "bad_request" && /uid/.test(e.message));
  anon.close();
});

test("tokens: a header from Node, the query parameter as a browser sends it", async () => {
  const tokens = join(broker.data, "..", `tokens-${tag()}`);
  writeFileSync(tokens, "s3cret-token-for-carol carol\n");
  const b = await new Broker(["--auth-tokens", tokens]).start();
  try {
    const viaHeader = await Cellcast.connect(b.url, { WebSocket, token: "s3cret-token-for-carol" });
    const viaQuery = await Cellcast.connect(b.url, { WebSocket, token: () => "s3cret-token-for-carol", tokenIn: "query" });
    const s = await viaQuery.subscribe({ cell: "3.3", future: "1m" });
    const got = take(s, 1);
    assert.equal((await viaHeader.publish({ cell: "3.3", expires: "1m", desc: "hi" })).matched, 1);
    assert.equal((await got)[0].uid, "carol");
    await assert.rejects(viaHeader.publish({ cell: "3.3", uid: "mallory" }), { code: "forbidden" });
    viaHeader.close();
    viaQuery.close();
    await assert.rejects(Cellcast.connect(b.url, { WebSocket, token: "wrong-token-wrong-token" }), { code: "unauthorized" });
    await assert.rejects(Cellcast.connect(b.url, { WebSocket }), { code: "unauthorized" });
  } finally {
    await b.stop();
  }
});

// The client against a scripted broker (a ws server in the test): frames
// the real broker sends rarely or only under load — grouped notifications,
// repeats, gaps, pages, refusals — sent on purpose.

import { test } from "node:test";
import assert from "node:assert/strict";
import { WebSocketServer } from "ws";
import { Cellcast, CellcastError } from "../src/cellcast.js";
import { WebSocket, sleep } from "./broker.mjs";

const pub = (desc) => ({ pid: "p-" + desc, uid: "bob", cell: "1.4", tp: "2026-11-21T10:32:12.1Z", expires_at: "2026-11-21T10:33:12.1Z", desc });
const subscribed = (id, sid, { live = true, results = [], secs = 60 } = {}) => ({
  id,
  op: "subscribed",
  sid,
  cell: "1.4",
  ts: "2026-11-21T10:32:11.789448535Z",
  expires_at: new Date(Date.parse("2026-11-21T10:32:11.789Z") + secs * 1000).toISOString(),
  live,
  results,
});

// fake starts a server that hands each request to answer(msg, send, ws);
// it records the requests and the handshake URLs and headers.
async function fake(answer) {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise((r) => wss.on("listening", r));
  const f = { wss, requests: [], handshakes: [], socks: [] };
  wss.on("connection", (ws, req) => {
    f.handshakes.push({ url: req.url, auth: req.headers.authorization });
    f.socks.push(ws);
    const send = (m) => ws.send(typeof m === "string" ? m : JSON.stringify(m));
    ws.on("message", (d) => {
      const m = JSON.parse(d);
      f.requests.push(m);
      answer(m, send, ws);
    });
  });
  f.url = `ws://127.0.0.1:${wss.address().port}/ws`;
  f.close = () => new Promise((r) => (wss.clients.forEach((c) => c.terminate()), wss.close(r)));
  return f;
}

const connect = (f, opts) => Cellcast.connect(f.url, { WebSocket, minBackoff: 10, maxBackoff: 50, ...opts });

test("grouped notifications are asked for and split, each to its subscription", async () => {
  let pushed = false;
  const f = await fake((m, send) => {
    if (m.op === "subscribe") send(subscribed(m.id, m.cell === "1.4" ? "a" : "b"));
    if (m.op === "publish" && !pushed) {
      pushed = true;
      send({ op: "notifications", to: [{ sid: "a", seq: 5 }, { sid: "b", seq: 7 }], publication: pub("x") });
      send({ id: m.id, op: "published", pid: "p-x", cell: "1.4", matched: 2 });
    }
  });
  const cc = await connect(f);
  assert.match(f.handshakes[0].url, /[?&]notifications=grouped\b/);
  const got = [];
  const a = await cc.subscribe({ cell: "1.4", future: "1m" }, (p, n) => got.push(["a", n.sid, n.seq, p.desc]));
  const b = await cc.subscribe({ cell: "1.4.2", future: "1m" }, (p, n) => got.push(["b", n.sid, n.seq, p.desc]));
  await cc.publish({ cell: "1.4", expires: "1m" });
  assert.deepEqual(got, [["a", "a", 5, "x"], ["b", "b", 7, "x"]]);
  assert.equal(a.lastSeq, 5);
  assert.equal(b.lastSeq, 7);
  cc.close();
  await f.close();

  const g = await fake(() => {});
  const sep = await connect(g, { grouped: false });
  assert.doesNotMatch(g.handshakes[0].url, /notifications/);
  sep.close();
  await g.close();
});

test("repeats are dropped, and a gap shown by prev is repaired by resume from the last seq", async () => {
  const f = await fake((m, send) => {
    if (m.op === "subscribe") {
      send(subscribed(m.id, "s"));
      for (const [seq, prev] of [[5, 0], [5, 0], [3, 0], [9, 7]]) send({ op: "notification", sid: "s", seq, prev, publication: pub(String(seq)) });
    }
    if (m.op === "resume") {
      send({ id: m.id, op: "resumed", sid: "s", replayed: 2 });
      send({ op: "notification", sid: "s", seq: 7, prev: 5, publication: pub("7") });
      send({ op: "notification", sid: "s", seq: 9, prev: 7, publication: pub("9") });
    }
  });
  const cc = await connect(f, { uid: "alice" });
  const s = await cc.subscribe({ cell: "1.4", future: "1m" });
  const seqs = [];
  for await (const n of s) {
    seqs.push(n.seq);
    if (seqs.length === 3) break;
  }
  assert.deepEqual(seqs, [5, 7, 9]);
  const resume = f.requests.find((m) => m.op === "resume");
  assert.deepEqual({ ...resume, id: 0 }, { id: 0, op: "resume", sid: "s", after: 5, uid: "alice" });
  assert.equal(cc.stats.duplicates, 2);
  assert.equal(cc.stats.gaps, 1);
  assert.equal(cc.stats.resumes, 1);
  cc.close();
  await f.close();
});

test("notifications that come before any listener are kept for the first one", async () => {
  const f = await fake((m, send, ws) => {
    // The reply and its first notifications in one TCP write.
    ws._socket.cork();
    send(subscribed(m.id, "s"));
    send({ op: "notification", sid: "s", seq: 1, publication: pub("1") });
    send({ op: "notification", sid: "s", seq: 2, publication: pub("2") });
    ws._socket.uncork();
  });
  const cc = await connect(f);
  const s = await cc.subscribe({ cell: "1.4", future: "1m" });
  await sleep(50);
  const got = [];
  s.on("notification", (p) => got.push(p.desc));
  assert.deepEqual(got, ["1", "2"]);
  cc.close();
  assert.equal(s.reason, "closed");
  assert.equal(await s.ended, "closed");
  await f.close();
});

test("pushed pages and pulled pages are joined into one list", async () => {
  const f = await fake((m, send) => {
    if (m.op === "subscribe") {
      send({ ...subscribed(m.id, "s", { results: [pub("1"), pub("2")] }), more: true, pages: 3 });
      send({ id: m.id, op: "page", of: "subscribed", page: 2, more: true, results: [pub("3")] });
      send({ op: "notification", sid: "other", seq: 1, publication: pub("x") }); // another's, between pages
      send({ id: m.id, op: "page", of: "subscribed", page: 3, more: false, results: [pub("4")] });
    }
    if (m.op === "query") send({ id: m.id, op: "results", attr: "uid", count: 3, more: true, pages: 2, next: "c.2", results: [pub("a"), pub("b")] });
    if (m.op === "page") send({ id: m.id, op: "page", of: "results", page: 2, more: false, results: [pub("c")] });
  });
  const cc = await connect(f, { uid: "alice" });
  const s = await cc.subscribe({ cell: "1.4", past: "1h", future: "1m" });
  assert.deepEqual(s.results.map((p) => p.desc), ["1", "2", "3", "4"]);
  assert.equal(s.more, undefined);
  const r = await cc.query({ attr: "uid", eq: "bob", paging: "cursor" });
  assert.deepEqual(r.results.map((p) => p.desc), ["a", "b", "c"]);
  assert.equal(r.next, undefined);
  const page = f.requests.find((m) => m.op === "page");
  assert.deepEqual(page, { id: f.requests.find((m) => m.op === "query").id, op: "page", cursor: "c.2", uid: "alice" });
  cc.close();
  await f.close();
});

test("pipelined requests each get their own reply, and a late one times out", async () => {
  const held = [];
  const f = await fake((m, send) => {
    if (m.op === "publish" && m.desc === "slow") return; // never answered
    held.push(() => send({ id: m.id, op: "published", pid: "p-" + m.desc, cell: "1.4", matched: 0 }));
    if (held.length === 3) held.reverse().forEach((h) => h()); // answered out of order
  });
  const cc = await connect(f, { uid: "u" });
  const slow = cc.publish({ cell: "1.4", desc: "slow" }, { timeout: 100 });
  const rs = await Promise.all(["a", "b", "c"].map((d) => cc.publish({ cell: "1.4", desc: d })));
  assert.deepEqual(rs.map((r) => r.pid), ["p-a", "p-b", "p-c"]);
  await assert.rejects(slow, (e) => e instanceof CellcastError && e.code === "timeout");
  cc.close();
  await f.close();
});

test("a subscription whose reply comes after the caller gave up is cancelled", async () => {
  const f = await fake((m, send) => {
    if (m.op === "subscribe") setTimeout(() => send(subscribed(m.id, "late")), 150);
    if (m.op === "unsubscribe") send({ id: m.id, op: "unsubscribed", sid: m.sid });
  });
  const cc = await connect(f);
  await assert.rejects(cc.subscribe({ cell: "1.4", future: "1m" }, { timeout: 50 }), { code: "timeout" });
  await sleep(300);
  assert.deepEqual(f.requests.filter((m) => m.op === "unsubscribe").map((m) => m.sid), ["late"]);
  assert.equal(cc.subs.size, 0);
  cc.close();
  await f.close();
});

test("overloaded is retried after the broker's hint, up to a bound", async () => {
  let refusals = 2;
  const f = await fake((m, send) => {
    if (m.desc === "always" || refusals-- > 0) return send({ id: m.id, op: "error", code: "overloaded", message: "slow down", limit: "connection_rate", retry_after_ms: 100 });
    send({ id: m.id, op: "published", pid: "p", cell: "1.4", matched: 0 });
  });
  const cc = await connect(f, { overloadRetries: 3 });
  const t0 = Date.now();
  assert.equal((await cc.publish({ cell: "1.4" })).pid, "p");
  assert.ok(Date.now() - t0 >= 200, `retried after ${Date.now() - t0} ms`);
  assert.equal(cc.stats.retries, 2);
  const n = f.requests.length;
  await assert.rejects(cc.publish({ cell: "1.4", desc: "always" }), (e) => e.code === "overloaded" && e.retryAfterMs === 100 && e.limit === "connection_rate" && !e.local);
  assert.equal(f.requests.length - n, 4); // once and three retries
  cc.close();
  await f.close();
});

test("the token bucket keeps requests under the rate", async () => {
  const times = [];
  const f = await fake((m, send) => {
    times.push(performance.now());
    send({ id: m.id, op: "published", pid: "p", cell: "1.4", matched: 0 });
  });
  const cc = await connect(f, { rate: 40, burst: 5 });
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 25 }, () => cc.publish({ cell: "1.4" })));
  // 5 at once, then 20 at 40/s: half a second at least.
  assert.ok(performance.now() - t0 >= 450, `25 requests in ${performance.now() - t0} ms`);
  for (let i = 0; i < times.length; i++) assert.ok(times[i] - t0 <= ((i + 1) * 1000) / 40 + 500, `request ${i} late, at ${times[i] - t0} ms`);
  for (let i = 5; i < times.length; i++) assert.ok(times[i] - t0 >= ((i - 5) * 1000) / 40 - 30, `request ${i} at ${times[i] - t0} ms`);
  cc.close();
  await f.close();
});

test("ended frames end subscriptions with their reason, or resume them when owed", async () => {
  const f = await fake((m, send) => {
    if (m.op === "subscribe") {
      send(subscribed(m.id, m.cell));
      send({ op: "notification", sid: m.cell, seq: 4, publication: pub("4") });
      const reason = { 1: "window_over", 2: "moved", 3: "behind", 4: "window_over" }[m.cell];
      send({ op: "ended", sid: m.cell, reason, last: m.cell === "4" ? 6 : 4 });
    }
    if (m.op === "resume") {
      send({ id: m.id, op: "resumed", sid: m.sid, replayed: 1 });
      send({ op: "notification", sid: m.sid, seq: 6, publication: pub("6") });
      send({ op: "ended", sid: m.sid, reason: "window_over", last: 6 });
    }
  });
  const cc = await connect(f);
  const subs = await Promise.all(["1", "2", "3", "4"].map((cell) => cc.subscribe({ cell, future: "1m" })));
  const reasons = await Promise.all(subs.map((s) => s.ended));
  assert.deepEqual(reasons, ["window_over", "moved", "window_over", "window_over"]);
  assert.deepEqual(subs.map((s) => s.lastSeq), [4, 4, 6, 6]);
  assert.deepEqual(f.requests.filter((m) => m.op === "resume").map((m) => [m.sid, m.after]).sort(), [["3", 4], ["4", 4]]);
  cc.close();
  await f.close();
});

test("a subscription without a future window ends at once; an unknown one on resume is lost", async () => {
  const f = await fake((m, send) => {
    if (m.op === "subscribe") send(subscribed(m.id, m.cell, { live: m.cell !== "1", results: [pub("old")] }));
    if (m.op === "resume") send({ id: m.id, op: "error", code: "not_found", message: "no such subscription" });
  });
  const cc = await connect(f);
  const past = await cc.subscribe({ cell: "1", past: "1h" });
  assert.equal(past.live, false);
  assert.equal(past.reason, "window_over");
  assert.equal(past.results[0].desc, "old");
  const s = await cc.subscribe({ cell: "2", future: "1m" });
  const ended = [];
  s.on("ended", (reason, { last }) => ended.push(reason, last));
  f.socks[0].terminate(); // the client reconnects and resumes, in vain
  assert.equal(await s.ended, "lost");
  assert.deepEqual(ended, ["lost", 0]);
  assert.equal(cc.stats.lost, 1);
  cc.close();
  await f.close();
});

test("a dropped connection fails what was sent, keeps what was not, and resumes", async () => {
  let drop = true;
  const f = await fake((m, send, ws) => {
    if (m.op === "subscribe") {
      send(subscribed(m.id, "s"));
      send({ op: "notification", sid: "s", seq: 10, publication: pub("10") });
    }
    if (m.op === "publish" && drop) (drop = false), setTimeout(() => ws.terminate(), 20);
    else if (m.op === "publish") send({ id: m.id, op: "published", pid: "p", cell: "1.4", matched: 0 });
    if (m.op === "resume") {
      send({ id: m.id, op: "resumed", sid: "s", replayed: 1 });
      send({ op: "notification", sid: "s", seq: 10, publication: pub("10") }); // a repeat
      send({ op: "notification", sid: "s", seq: 12, publication: pub("12") });
    }
  });
  const cc = await connect(f);
  const events = [];
  cc.on("disconnect", () => events.push("disconnect"));
  cc.on("reconnect", () => events.push("reconnect"));
  cc.on("resume", ({ sid, after }) => events.push(`resume ${sid} ${after}`));
  const s = await cc.subscribe({ cell: "1.4", future: "1m" });
  const seqs = [];
  s.on("notification", (_, n) => seqs.push(n.seq));
  await assert.rejects(cc.publish({ cell: "1.4" }), { code: "connection_lost" });
  assert.equal(cc.open, false);
  const later = cc.publish({ cell: "1.4" }); // waits for the next connection
  assert.equal((await later).pid, "p");
  while (seqs.length < 2) await sleep(10);
  assert.deepEqual(seqs, [10, 12]);
  assert.deepEqual(events, ["disconnect", "reconnect", "resume s 10"]);
  assert.equal(cc.stats.reconnects, 1);
  assert.equal(cc.stats.duplicates, 1);
  cc.close();
  await f.close();
});

test("the token goes in a header with ws, or as a query parameter", async () => {
  const f = await fake(() => {});
  const a = await connect(f, { token: "header-token-1234567" });
  const b = await connect(f, { token: async () => "query-token-1234567", tokenIn: "query" });
  assert.equal(f.handshakes[0].auth, "Bearer header-token-1234567");
  assert.match(f.handshakes[1].url, /[?&]token=query-token-1234567\b/);
  assert.equal(f.handshakes[1].auth, undefined);
  a.close();
  b.close();
  await f.close();
});

test("bad input is refused before it is sent", async () => {
  const f = await fake(() => {});
  const cc = await connect(f);
  const polygon = { type: "Polygon", coordinates: [[[0, 0], [1, 0], [1, 1], [0, 0]]] };
  const subscribes = [
    { cell: "1.4", future: -5 },
    { cell: "1.4", past: "-10s" },
    { cell: "1.4", future: "10 minutes" },
    { cell: "1..4" },
    { cell: "0.1" },
    { cell: "1.04" },
    { cell: "a.b" },
    { cell: 14 },
    { cell: "1.4", topic: "news" },
    {},
    { lat: 91, lng: 0 },
    { lat: 10, lng: 181 },
    { lat: 10 },
    { lat: 10, lng: 10, radius_m: 0 },
    { lat: 10, lng: 10, radius_m: -1 },
    { radius_m: 10, cell: "1" },
    { cell: "1.4", cover: 2 },
    { lat: 1, lng: 1, radius_m: 10, cover: 17 },
    { polygon: "[[0,0]]" },
    { polygon: { type: "Point", coordinates: [0, 0] } },
    { polygon, future: "1m", filter: 3 },
    { topic: "" },
  ];
  for (const body of subscribes) {
    await assert.rejects(cc.subscribe(body), (e) => e instanceof CellcastError && e.code === "bad_request" && e.local, JSON.stringify(body));
  }
  await assert.rejects(cc.publish({ cell: "1.4", expires: "-1m" }), { code: "bad_request", local: true });
  await assert.rejects(cc.publish(null), { code: "bad_request", local: true });
  for (const q of [{ attr: "uid" }, { attr: "tp", from: "a" }, { attr: "uid", eq: "bob", k: 0 }, { attr: "uid", eq: "b", k: 1001 }, { eq: "bob" }, { near: { lat: 100, lng: 0 } }, { near: { lat: 1, lng: 1 }, within: polygon }, { near: { lat: 1, lng: 1 }, attr: "uid" }]) {
    await assert.rejects(cc.query(q), { code: "bad_request", local: true }, JSON.stringify(q));
  }
  assert.equal(cc.stats.sent, 0);
  await sleep(20);
  assert.equal(f.requests.length, 0);
  cc.close();
  await f.close();
});

test("connect rejects when the broker refuses the handshake", async () => {
  const { createServer } = await import("node:http");
  const srv = createServer((req, res) => {
    res.writeHead(401, { "Content-Type": "application/json" });
    res.end('{"op":"error","code":"unauthorized","message":"no token"}');
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const url = `ws://127.0.0.1:${srv.address().port}/ws`;
  await assert.rejects(Cellcast.connect(url, { WebSocket }), { code: "unauthorized" });
  await new Promise((r) => srv.close(r));
  await assert.rejects(Cellcast.connect(url, { WebSocket }), { code: "connection_lost" });
});

test("a handshake that hangs is given up after connectTimeout", async () => {
  const { createServer } = await import("node:net");
  const socks = [];
  const srv = createServer((s) => socks.push(s)); // accepts, never answers
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const t0 = Date.now();
  await assert.rejects(Cellcast.connect(`ws://127.0.0.1:${srv.address().port}/ws`, { WebSocket, connectTimeout: 200 }), (e) => e.code === "connection_lost" && /no answer/.test(e.message));
  assert.ok(Date.now() - t0 < 2000);
  socks.forEach((s) => s.destroy());
  await new Promise((r) => srv.close(r));
});

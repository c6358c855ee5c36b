// Decode cost: how many notifications a second one client decodes and
// hands to its listener on one core in Node, against a bare ws reader
// (JSON.parse of each frame, nothing else) of the same frames.
//
//   node bench/decode.mjs [notifications per run, default 200000] [rounds, default 3]
//
// A child process serves the frames: after the handshake it writes a
// prepared buffer of WebSocket frames straight to the socket, so the
// reader, not the server, is the bottleneck. The frames are the broker's
// rendering of notifications (single, then grouped to 4 subscriptions);
// each round runs the bare reader and the client alternately, and the best
// round of each counts.

import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { WebSocket, WebSocketServer } from "ws";
import { Cellcast } from "../src/cellcast.js";

const N = +(process.argv[2] ?? 200_000);
const ROUNDS = +(process.argv[3] ?? 3);
const GROUP = 4; // subscriptions of a grouped frame
const sid = (k) => `dn5pj5ff6ewj-3.1.4.4.4.1.4.1.4.2.4.1.${k + 1}`;
const pub = (i) =>
  `{"pid":"dn5pj5fq${String(i).padStart(4, "0")}-3.1.4.4.4.1.4.1.4.2.4.1.1.4.3.4.1","uid":"user-${i % 1000}","cell":"3.1.4.4.4.1.4.1.4.2.4.1.1.4.3.4.1",` +
  `"tp":"2026-11-27T04:27:02.355691201Z","expires_at":"2026-11-27T04:28:02.355691201Z","desc":"Water main break on 42nd St #${i}","attrs":{"category":"flood"},"lat":40.758,"lng":-73.9855,"radius_m":300}`;

// frames renders n notifications as server WebSocket frames (unmasked
// text), seq rising: single frames, or grouped ones of GROUP recipients.
function frames(n, grouped) {
  const parts = [];
  for (let i = 1; i <= n; i++) {
    const text = grouped
      ? `{"op":"notifications","to":[${Array.from({ length: GROUP }, (_, k) => `{"sid":"${sid(k)}","seq":${i * 1000 + k}}`).join(",")}],"publication":${pub(i)}}`
      : `{"op":"notification","sid":"${sid(0)}","seq":${i * 1000},"publication":${pub(i)}}`;
    const body = Buffer.from(text);
    const head = body.length < 126 ? Buffer.from([0x81, body.length]) : Buffer.from([0x81, 126, body.length >> 8, body.length & 255]);
    parts.push(head, body);
  }
  return Buffer.concat(parts);
}

// serve: the child. A connection's first request starts the frames
// (a subscribe gets its subscribed replies first).
if (process.argv[2] === "serve") {
  const n = +process.argv[3];
  const data = { single: frames(n, false), grouped: frames(n / GROUP, true) };
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", perMessageDeflate: false });
  wss.on("listening", () => process.send(wss.address().port));
  wss.on("connection", (ws, req) => {
    const kind = new URL(req.url, "http://x").searchParams.get("notifications") ? "grouped" : "single";
    let subs = 0;
    ws.on("message", (d) => {
      const m = JSON.parse(d);
      if (m.op === "subscribe") {
        ws.send(JSON.stringify({ id: m.id, op: "subscribed", sid: sid(subs++), cell: "1", ts: "2026-11-27T04:27:00Z", expires_at: "2026-11-27T05:27:00Z", live: true, results: [] }));
        if (kind === "grouped" && subs < GROUP) return;
      }
      ws._socket.write(data[kind]);
    });
  });
} else {
  main();
}

// bare reads the frames with ws and JSON.parse alone, counting
// notifications.
function bare(url, grouped, want) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url + (grouped ? "?notifications=grouped" : ""), { perMessageDeflate: false });
    let count = 0;
    let t0;
    ws.on("open", () => ws.send('{"op":"start"}'));
    ws.on("message", (d) => {
      t0 ??= performance.now();
      const m = JSON.parse(d);
      count += m.op === "notifications" ? m.to.length : 1;
      if (count >= want) {
        const t = performance.now() - t0;
        ws.terminate();
        resolve(t);
      }
    });
  });
}

// client reads them through the client: subscriptions, dedup, listeners.
async function client(url, grouped, want) {
  const cc = await Cellcast.connect(url, { WebSocket, grouped, uid: "bench" });
  let count = 0;
  let t0;
  let done;
  const finished = new Promise((r) => (done = r));
  const listener = () => {
    t0 ??= performance.now();
    if (++count === want) done(performance.now() - t0);
  };
  for (let k = 0; k < (grouped ? GROUP : 1); k++) await cc.subscribe({ cell: "1", future: "1h" }, listener);
  const t = await finished;
  cc.close();
  return t;
}

async function main() {
  const child = fork(fileURLToPath(import.meta.url), ["serve", String(N)], { stdio: "inherit" });
  const port = await new Promise((r) => child.once("message", r));
  const url = `ws://127.0.0.1:${port}/ws`;
  console.log(`node ${process.version}, ${N} notifications a run, best of ${ROUNDS}`);
  for (const grouped of [false, true]) {
    const best = { bare: Infinity, client: Infinity };
    for (let r = 0; r < ROUNDS; r++) {
      best.bare = Math.min(best.bare, await bare(url, grouped, N));
      best.client = Math.min(best.client, await client(url, grouped, N));
    }
    const rate = (ms) => Math.round((N / ms) * 1000);
    const what = grouped ? `grouped (${GROUP} a frame)` : "single frames";
    console.log(`${what}: bare ws + JSON.parse ${rate(best.bare)}/s, cellcast client ${rate(best.client)}/s, ratio ${(best.bare / best.client).toFixed(2)}`);
  }
  child.kill();
}

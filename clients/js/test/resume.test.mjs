// Losing the broker and the network in the middle of a burst of
// publications: the subscriptions resume from the last seq they received,
// and every acknowledged publication arrives once, in order.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Cellcast } from "../src/cellcast.js";
import { Broker, Proxy, WebSocket, sleep } from "./broker.mjs";

const fast = { WebSocket, uid: "sub", minBackoff: 20, maxBackoff: 300 };

// burst publishes n publications in cell from one connection, paced by
// its rate, calling during(i) as each goes; it resolves with the indexes
// acknowledged and those whose outcome is unknown (connection lost).
async function burst(pub, cell, n, during) {
  const acked = new Set();
  const unknown = new Set();
  const all = [];
  for (let i = 0; i < n; i++) {
    all.push(pub.publish({ cell, expires: "5m", desc: String(i) }).then(() => acked.add(i), (e) => {
      if (e.code !== "connection_lost") throw e;
      unknown.add(i);
    }));
    await during(i);
    if (i % 10 === 9) await sleep(10); // about 1,000 a second offered
  }
  await Promise.all(all);
  return { acked, unknown };
}

// record collects a subscription's notifications as indexes.
function record(s) {
  const got = { descs: [], seqs: [] };
  s.on("notification", (p, n) => {
    got.descs.push(+p.desc);
    got.seqs.push(n.seq);
  });
  return got;
}

// check: every acknowledged one arrived, nothing twice, nothing unknown,
// in publication order with rising seq.
async function check(name, got, { acked, unknown }) {
  const deadline = Date.now() + 15_000;
  while ([...acked].some((i) => !got.descs.includes(i)) && Date.now() < deadline) await sleep(20);
  await sleep(200); // anything extra
  const missing = [...acked].filter((i) => !got.descs.includes(i));
  assert.deepEqual(missing, [], `${name}: acknowledged and never notified`);
  assert.equal(new Set(got.descs).size, got.descs.length, `${name}: notified twice`);
  for (const i of got.descs) assert.ok(acked.has(i) || unknown.has(i), `${name}: ${i} was never published`);
  for (let k = 1; k < got.descs.length; k++) {
    assert.ok(got.descs[k] > got.descs[k - 1], `${name}: ${got.descs[k]} after ${got.descs[k - 1]}`);
    assert.ok(got.seqs[k] > got.seqs[k - 1], `${name}: seq ${got.seqs[k]} after ${got.seqs[k - 1]}`);
  }
}

test("the broker killed (SIGKILL) and restarted mid-burst: nothing lost, nothing twice", async () => {
  const broker = await new Broker().start();
  const sub = await Cellcast.connect(broker.url, fast);
  const pub = await Cellcast.connect(broker.url, { ...fast, uid: "pub", rate: 2000, burst: 100 });
  try {
    // Three overlapping subscriptions: grouped frames carry each
    // publication to all three.
    const subs = await Promise.all(["5", "5.2", "5.2.1"].map((cell) => sub.subscribe({ cell, future: "2m" })));
    const gots = subs.map(record);
    let restarted;
    const N = 600;
    const result = await burst(pub, "5.2.1.3", N, async (i) => {
      if (i === 205) {
        await broker.kill(); // with some sent and not yet answered
        restarted = sleep(300).then(() => broker.start());
      }
    });
    await restarted;
    assert.ok(result.acked.size >= N - 50, `only ${result.acked.size} acknowledged`);
    for (const [k, got] of gots.entries()) await check(`subscription ${k}`, got, result);
    assert.ok(sub.stats.reconnects >= 1, "the subscriber reconnected");
    assert.ok(sub.stats.resumes >= 3, `resumes: ${sub.stats.resumes}`);
    assert.ok(subs.every((s) => s.reason === null));
    console.log(`# kill -9: ${result.acked.size} acknowledged, ${result.unknown.size} unknown, stats ${JSON.stringify(sub.stats)}`);
  } finally {
    sub.close();
    pub.close();
    await broker.stop();
  }
});

test("the network cut and then down for seconds: the subscription resumes and gets what it missed", async () => {
  const broker = await new Broker().start();
  const proxy = new Proxy(broker.port);
  await proxy.listen();
  const sub = await Cellcast.connect(`ws://127.0.0.1:${proxy.port}/ws`, fast);
  const pub = await Cellcast.connect(broker.url, { ...fast, uid: "pub", rate: 400 });
  try {
    const s = await sub.subscribe({ lat: 40.758, lng: -73.9855, radius_m: 2000, future: "2m" });
    const other = await sub.subscribe({ cell: "6.1", future: "2m" });
    const got = record(s);
    const resumed = [];
    s.on("resumed", (after) => resumed.push(after));
    const N = 800;
    const acked = new Set();
    const all = [];
    let up;
    for (let i = 0; i < N; i++) {
      all.push(pub.publish({ lat: 40.758, lng: -73.9855, expires: "5m", desc: String(i) }).then(() => acked.add(i)));
      if (i === 100 || i === 250) proxy.cut(); // a reset: the client reconnects at once
      if (i === 400) up = proxy.down().then(() => sleep(2000)).then(() => proxy.up()); // no network for two seconds
      if (i % 10 === 9) await sleep(10);
    }
    await up;
    await Promise.all(all);
    await check("circle", got, { acked, unknown: new Set() });
    assert.equal(got.descs.length, N);
    assert.ok(sub.stats.reconnects >= 3, `reconnects: ${sub.stats.reconnects}`);
    assert.ok(resumed.length >= 3 && resumed.every((a, k) => k === 0 || a >= resumed[k - 1]), `resumed after ${resumed}`);
    assert.equal(other.reason, null);
    console.log(`# cuts: ${proxy.cuts}, stats ${JSON.stringify(sub.stats)}`);
  } finally {
    sub.close();
    pub.close();
    await proxy.close().catch(() => {});
    await broker.stop();
  }
});

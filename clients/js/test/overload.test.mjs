// overloaded from a real broker: over its per-connection rate, and
// publishes while delivery is behind (--max-backlog). The client waits as
// the broker's retry_after_ms says and retries, up to a bound.

import { test } from "node:test";
import assert from "node:assert/strict";
import { Cellcast } from "../src/cellcast.js";
import { Broker, WebSocket } from "./broker.mjs";

const publishes = (cc, n) => Promise.all(Array.from({ length: n }, (_, i) => cc.publish({ cell: "2.2", expires: "1m", desc: String(i) })));

test("over the broker's rate: refused with a hint, waited for and retried; under it, never refused", async () => {
  const broker = await new Broker(["--rate", "20", "--burst", "10"]).start();
  try {
    // A client set over the broker's limit: refusals, each honoured.
    const over = await Cellcast.connect(broker.url, { WebSocket, uid: "u", rate: 30, burst: 10 });
    const t0 = performance.now();
    const rs = await publishes(over, 30);
    assert.equal(rs.length, 30);
    assert.ok(over.stats.retries > 0, "the broker refused none");
    assert.ok(performance.now() - t0 >= 900, `30 requests at 20/s after a burst of 10 in ${performance.now() - t0} ms`);
    // With no retries the refusal surfaces, with its hint and limit.
    const strict = await Cellcast.connect(broker.url, { WebSocket, uid: "u", rate: 1000, burst: 50, overloadRetries: 0 });
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => strict.publish({ cell: "2.2" })));
    const refused = results.filter((r) => r.status === "rejected").map((r) => r.reason);
    assert.ok(refused.length > 0);
    for (const e of refused) {
      assert.equal(e.code, "overloaded");
      assert.equal(e.limit, "connection_rate");
      assert.ok(e.retryAfterMs >= 50, `retry after ${e.retryAfterMs} ms`);
      assert.equal(e.local, false);
    }
    // The client's own bucket under the broker's rate: nothing refused.
    const under = await Cellcast.connect(broker.url, { WebSocket, uid: "u", rate: 15, burst: 8 });
    await publishes(under, 25);
    assert.equal(under.stats.retries, 0);
    for (const c of [over, strict, under]) c.close();
  } finally {
    await broker.stop();
  }
});

test("publishes refused while delivery is behind are retried once it catches up", async () => {
  const broker = await new Broker(["--max-backlog", "1"]).start();
  try {
    const sub = await Cellcast.connect(broker.url, { WebSocket, uid: "s" });
    const pub = await Cellcast.connect(broker.url, { WebSocket, uid: "p", overloadRetries: 50 });
    const subs = await Promise.all(Array.from({ length: 10 }, () => sub.subscribe({ cell: "2.2", future: "1m" })));
    let heard = 0;
    for (const s of subs) s.on("notification", () => heard++);
    const rs = await publishes(pub, 100);
    assert.equal(rs.length, 100);
    assert.ok(pub.stats.retries > 0, "the broker refused none");
    console.log(`# backlog: ${pub.stats.retries} publishes retried`);
    while (heard < 10 * 100) await new Promise((r) => setTimeout(r, 10));
    assert.equal(heard, 10 * 100);
    const strict = await Cellcast.connect(broker.url, { WebSocket, uid: "p", overloadRetries: 0 });
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => strict.publish({ cell: "2.2" })));
    const refused = results.filter((r) => r.status === "rejected").map((r) => r.reason);
    assert.ok(refused.length > 0);
    for (const e of refused) assert.ok(e.code === "overloaded" && e.limit === undefined && e.retryAfterMs > 0, e.message);
    strict.close();
    sub.close();
    pub.close();
  } finally {
    await broker.stop();
  }
});

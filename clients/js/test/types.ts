// Compiled by `tsc --noEmit` (npm test): the package's declarations in
// use, with the mistakes they must catch marked @ts-expect-error.

import WebSocket from "ws";
import Cellcast, { CellcastError, type Notification, type Publication, type Subscription, type EndReason } from "cellcast";

async function main(): Promise<void> {
  const cc = await Cellcast.connect("ws://127.0.0.1:8080/ws", { WebSocket, token: () => "secret-token", rate: 500, timeout: 5000 });
  cc.on("disconnect", ({ code, reason }) => console.log("dropped", code, reason));
  cc.on("resume", ({ sid, after }) => console.log("resumed", sid, after));

  const near: Subscription = await cc.subscribe({ lat: 40.758, lng: -73.9855, radius_m: 1000, cover: 8, past: "10m", future: 3600 }, (p: Publication, n: Notification) =>
    console.log(n.seq, p.desc, p.lat, p.attrs?.category),
  );
  near.results.forEach((p) => console.log(p.pid, p.tp));
  near.on("ended", (reason: EndReason, { last }) => console.log(reason, last));
  await cc.subscribe({ cell: "1.4.2", future: "1m", filter: { keyword: "flood", attrs: { category: "water" } }, self_join: true });
  await cc.subscribe({ topic: "sports/soccer", future: "1m", filter: "goal" }, { onNotification: (p) => console.log(p.topic), timeout: 1000 });
  const poly = await cc.subscribe({ polygon: { type: "Polygon", coordinates: [[[-74.02, 40.7], [-73.97, 40.7], [-73.97, 40.75], [-74.02, 40.7]]] }, future: "5m" });
  for await (const n of poly) console.log(n.sid, n.publication.polygon?.type);
  console.log(poly.reason, await poly.ended);

  const pub = await cc.publish({ lat: 40.758, lng: -73.9855, expires: "20s", desc: "road closed", attrs: { category: "traffic" } });
  console.log(pub.pid, pub.matched, pub.cover?.length);
  const r = await cc.query({ attr: "category", eq: "flood", k: 50 });
  const byTime = await cc.query({ attr: "tp", from: "2026-11-21T10:00:00Z", to: "2026-11-21T11:00:00Z" });
  const byPlace = await cc.query({ near: { lat: 40.758, lng: -73.9855, radius_m: 2000 }, attr: "uid", eq: "bob" });
  console.log(r.count, byTime.results.length, byPlace.place);
  await cc.unsubscribe(near);
  await near.unsubscribe();

  try {
    await cc.publish({ cell: "1.4", expires: "1m" });
  } catch (e) {
    if (e instanceof CellcastError && e.code === "overloaded") console.log(e.retryAfterMs, e.limit);
  }

  // @ts-expect-error: two location forms
  await cc.subscribe({ cell: "1.4", topic: "news", future: "1m" });
  // @ts-expect-error: a cover goes with a circle or a polygon
  await cc.subscribe({ cell: "1.4", cover: 2 });
  // @ts-expect-error: a radius needs a point
  await cc.publish({ radius_m: 10 });
  // @ts-expect-error: eq or a range, not both
  await cc.query({ attr: "uid", eq: "bob", from: "a", to: "b" });
  // @ts-expect-error: no such event
  cc.on("message", () => {});
  cc.close();
}

main();

// Publishes an alert at a place, as a Node script:
//
//   CELLCAST_URL=ws://127.0.0.1:8080/ws node examples/publish.mjs "Water main break" 40.758 -73.9855
//
// With CELLCAST_TOKEN set it sends the token (a broker with auth);
// without, it names its user, as a broker that runs open needs.
import WebSocket from "ws";
import { Cellcast } from "cellcast";

const [desc = "Road closed", lat = "40.758", lng = "-73.9855"] = process.argv.slice(2);
const token = process.env.CELLCAST_TOKEN;
const cc = await Cellcast.connect(process.env.CELLCAST_URL ?? "ws://127.0.0.1:8080/ws", { WebSocket, token, uid: token ? undefined : "publisher" });
try {
  const r = await cc.publish({ lat: +lat, lng: +lng, radius_m: 300, expires: "10m", desc, attrs: { category: "alert" } });
  console.log(`published ${r.pid} in cell ${r.cell}: ${r.matched} live subscriptions notified`);
} catch (e) {
  console.error(`not published: ${e.message}`); // e.code: bad_request, overloaded, unauthorized, …
  process.exitCode = 1;
} finally {
  cc.close();
}

// "Me": the viewer's own subscription, a circle of the chosen radius at a
// point of the map, anywhere on Earth, with past and future windows and
// self-join; the broker picks the cells that cover it. It is drawn as its
// circle and as that cover (outlines from /cells). A move subscribes at
// the new place first and then cancels the old subscription, and the
// subscription is renewed before its future window ends.
import L from "leaflet";

export class Me {
  constructor(conn, body, map, cells, panel) {
    this.conn = conn;
    this.body = body; // the uid part of a request (open mode)
    this.map = map;
    this.cells = cells;
    this.panel = panel;
    this.sid = null;
    this.cell = null;
    this.cover = [];
    this.moves = 0;
    this.current = null;
    const pane = map.createPane("me");
    // Over the incidents, under the place names and the users (the
    // canvases at 450), so that my dot hides no name.
    pane.style.zIndex = 440;
    pane.style.pointerEvents = "none"; // clicks go through to incidents and the map
    this.layers = L.layerGroup([], { pane: "me" }).addTo(map);
  }

  // at subscribes me at lat, lng with the options {radiusM, past, future}.
  async at(lat, lng, opts) {
    const { radiusM, past, future } = opts;
    const here = { lat, lng };
    const sub = { cancelled: false };
    // A cancelled subscription's late notifications were about where I was.
    const r = await this.conn.subscribe({ ...this.body, lat, lng, radius_m: radiusM, past, future, self_join: true }, (p) => sub.cancelled || this.panel.show(p, here, true));
    sub.sid = r.sid;
    sub.r = r; // the client's Subscription
    const old = this.current;
    if (old) old.cancelled = true;
    this.panel.moved(here, radiusM);
    r.results.forEach((p) => this.panel.show(p, here, false));
    Object.assign(this, { lat, lng, radiusM, current: sub, sid: r.sid, cell: r.cell, cover: r.cover ?? [r.cell], moves: this.moves + 1, past: r.results.length });
    // One the broker dropped already (its window over) rejects: nothing to cancel.
    if (old) this.conn.unsubscribe(old.r).catch(() => {});
    clearTimeout(this.renew);
    // A renewal that fails (a drop mid-request) is tried again.
    const renew = (ms) => (this.renew = setTimeout(() => this.at(lat, lng, opts).catch(() => renew(5_000)), ms));
    renew(Math.max(5_000, Date.parse(r.expires_at) - Date.now() - 5_000));
    this.draw();
    return r;
  }

  // draw shows my circle, my point and the cover's cells (dashed).
  async draw() {
    const style = { pane: "me", interactive: false };
    const sid = this.sid, outlines = await this.cells.of(this.cover).catch(() => []);
    if (sid !== this.sid) return; // moved again meanwhile
    this.layers.clearLayers();
    for (const c of outlines) if (c) this.layers.addLayer(L.polygon(c.path.map((p) => [p.lat, p.lng]), { ...style, color: "#111", weight: 1.5, dashArray: "6 4", fill: false }));
    this.layers.addLayer(L.circle([this.lat, this.lng], { ...style, radius: this.radiusM, color: "#111", weight: 1.5, fillOpacity: 0.04 }));
    this.layers.addLayer(L.circleMarker([this.lat, this.lng], { ...style, radius: 7, color: "#fff", weight: 2, fillColor: "#10b981", fillOpacity: 1 }));
  }
}

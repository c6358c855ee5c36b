// The JavaScript client of a Cellcast broker over WebSocket
// (docs/protocol.md; docs/clients.md shows how to use it).
//
// One connection carries every request and subscription. Requests are
// pipelined with ids and time out; paged replies are joined; error replies
// become CellcastError values whose code is the protocol's. Requests go
// out through a token bucket, under the broker's per-connection rate, and
// an `overloaded` refusal is retried after the broker's hint, a bounded
// number of times.
//
// Like the Go client (client/), it keeps the last seq each live
// subscription received. When the connection drops it dials again with
// jittered exponential backoff and resumes every subscription from that
// seq, so the broker replays exactly what was missed (what has not
// expired); notifications at or below it are dropped, so nothing arrives
// twice, and one whose prev shows a gap is dropped and the subscription
// resumed from its last seq, which replays both in order.
//
// No dependency: a browser's WebSocket by default; in Node, pass one
// (`ws`) as options.WebSocket.

/** Codes the client gives errors of its own; the broker's are the protocol's. */
const LOST = "connection_lost";
const CLOSED = "closed";
const TIMEOUT = "timeout";
const BAD = "bad_request";

export class CellcastError extends Error {
  constructor(code, message, { retryAfterMs = 0, limit, local = false } = {}) {
    super(`cellcast: ${code}: ${message}`);
    this.name = "CellcastError";
    this.code = code;
    this.retryAfterMs = retryAfterMs;
    if (limit) this.limit = limit;
    this.local = local;
  }

  // from is the error of an error reply of the broker.
  static from(m) {
    return new CellcastError(m.code, m.message, { retryAfterMs: m.retry_after_ms ?? 0, limit: m.limit });
  }
}

const bad = (message) => {
  throw new CellcastError(BAD, message, { local: true });
};

// A tiny event emitter: listeners take up to two arguments. A listener
// that throws does not stop the others; its error is reported
// asynchronously, as an EventTarget's is.
class Emitter {
  constructor() {
    this._l = {};
  }

  on(type, fn) {
    this._l[type] = [...(this._l[type] ?? []), fn];
    return () => this.off(type, fn);
  }

  off(type, fn) {
    const a = this._l[type];
    if (a) this._l[type] = a.filter((f) => f !== fn);
  }

  emit(type, a, b) {
    const fns = this._l[type];
    if (!fns) return;
    for (const fn of fns) {
      try {
        fn(a, b);
      } catch (e) {
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }
}

// wsURL is the broker's WebSocket beside the current page (ws: or wss:),
// with the token as a query parameter when one is given.
export function wsURL(token, base = globalThis.location?.href) {
  const u = new URL("/ws", base);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  if (token) u.searchParams.set("token", token);
  return u.href;
}

// ---- Checks of what the client can know before sending ----

const DURATION = /^\+?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;

function checkDuration(field, v) {
  if (v == null) return;
  if (typeof v === "number") {
    if (!(v >= 0) || v === Infinity) bad(`${field} ${v}: a number of seconds must be 0 or more`);
  } else if (typeof v !== "string") {
    bad(`${field}: a duration such as "10s" or a number of seconds`);
  } else if (/^\s*-/.test(v)) {
    bad(`${field} ${JSON.stringify(v)} is negative`);
  } else if (v !== "0" && !DURATION.test(v)) {
    bad(`${field} ${JSON.stringify(v)}: use Go syntax such as "10s" or "1m30s"`);
  }
}

const CELL = /^t?[1-9]\d*(?:\.[1-9]\d*)*$/;

function checkCell(field, c) {
  if (typeof c !== "string" || !CELL.test(c)) {
    bad(`${field} ${JSON.stringify(c)}: a Dewey id is positive integers separated by dots, such as "1.4.2" (a leading t for topics)`);
  }
  const parts = c.replace(/^t/, "").split(".");
  if (parts.length > 64 || parts.some((p) => +p > 4294967295)) {
    bad(`${field} ${JSON.stringify(c)}: too deep or a component over 2^32−1`);
  }
}

const isNum = (v) => typeof v === "number" && Number.isFinite(v);

function checkPoint(where, lat, lng, radius) {
  if (!isNum(lat) || lat < -90 || lat > 90) bad(`${where}lat ${lat}: a number from −90 to 90`);
  if (!isNum(lng) || lng < -180 || lng > 180) bad(`${where}lng ${lng}: a number from −180 to 180`);
  if (radius != null && (!isNum(radius) || radius <= 0)) bad(`${where}radius_m ${radius}: a number of metres above 0`);
}

function checkPolygon(field, g) {
  if (g === null || typeof g !== "object" || (g.type !== "Polygon" && g.type !== "MultiPolygon") || !Array.isArray(g.coordinates)) {
    bad(`${field}: a GeoJSON Polygon or MultiPolygon geometry object`);
  }
}

function checkCover(b, shaped) {
  if (b.cover == null) return;
  if (!Number.isInteger(b.cover) || b.cover < 1 || b.cover > 16) bad(`cover ${b.cover}: an integer from 1 to 16`);
  if (!shaped) bad("cover goes with a circle or a polygon");
}

function checkFilter(f) {
  if (f == null || typeof f === "string") return;
  if (typeof f !== "object" || (f.keyword != null && typeof f.keyword !== "string")) bad("filter: a keyword, or {keyword, attrs}");
  for (const v of Object.values(f.attrs ?? {})) if (typeof v !== "string") bad("filter.attrs: string values");
}

function checkBody(b) {
  if (b === null || typeof b !== "object" || Array.isArray(b)) bad("a request is an object");
}

// checkPlace checks a subscribe's or a publish's location: exactly one
// form, well made.
function checkPlace(b) {
  const point = b.lat != null || b.lng != null;
  const forms = (b.cell != null) + point + (b.polygon != null) + (b.topic != null);
  if (forms !== 1) bad(forms ? "more than one location: give one of cell, lat+lng, polygon or topic" : "no location: give cell, lat+lng (radius_m), polygon or topic");
  if (b.cell != null) checkCell("cell", b.cell);
  if (point) checkPoint("", b.lat, b.lng, b.radius_m);
  else if (b.radius_m != null) bad("radius_m needs lat and lng");
  if (b.polygon != null) checkPolygon("polygon", b.polygon);
  if (b.topic != null && (typeof b.topic !== "string" || !b.topic)) bad("topic: a path such as \"sports/soccer\"");
  checkCover(b, b.radius_m != null || b.polygon != null);
}

function checkQuery(b) {
  checkBody(b);
  if (b.k != null && (!Number.isInteger(b.k) || b.k < 1 || b.k > 1000)) bad(`k ${b.k}: an integer from 1 to 1000`);
  const place = b.near != null || b.within != null;
  if (b.near != null && b.within != null) bad("near or within, not both");
  if (b.near != null) {
    if (typeof b.near !== "object") bad("near: {lat, lng, radius_m}");
    checkPoint("near.", b.near.lat, b.near.lng, b.near.radius_m);
  }
  if (b.within != null) checkPolygon("within", b.within);
  checkCover(b, place);
  checkFilter(b.filter);
  if (place) {
    if ((b.attr != null) !== (b.eq != null)) bad("attr and eq go together");
    return;
  }
  if (typeof b.attr !== "string" || !b.attr) bad("attr: uid, tp or an attrs key (or near/within for a query by place)");
  if ((b.from != null) !== (b.to != null)) bad(`a range of ${b.attr} needs both from and to`);
  if ((b.from != null) === (b.eq != null)) bad("give eq, or from and to");
}

// ---- Times ----

// parseTime reads an RFC 3339 time of the broker (nanoseconds) as epoch
// milliseconds; Date.parse is not sure to take more than 3 digits.
export function parseTime(s) {
  if (typeof s !== "string") return NaN;
  return Date.parse(s.replace(/(\.\d{3})\d+/, "$1"));
}

const unref = (t) => (t?.unref?.(), t);

// ---- Subscriptions ----

// HOLD bounds the notifications a subscription keeps while nobody
// listens (before the first listener or iterator attaches).
const HOLD = 1 << 16;

export class Subscription extends Emitter {
  constructor(client, m, uid) {
    super();
    for (const k in m) if (k !== "id" && k !== "op" && k !== "more" && k !== "pages" && k !== "next") this[k] = m[k];
    this.results ??= [];
    this._c = client;
    this._uid = uid;
    this.last = 0;
    this.reason = null;
    this._hold = []; // notifications kept until a listener attaches; null after
    this._routed = true; // routed to the current connection
    this._repairing = false;
    // The window's end on this machine's clock: the broker's window
    // (expires_at − ts, both on its clock) from now.
    const span = parseTime(m.expires_at) - parseTime(m.ts);
    this.endsAt = Date.now() + (span > 0 ? span : 0);
    this.ended = new Promise((r) => (this._done = r));
  }

  /** The seq of the last notification received. */
  get lastSeq() {
    return this.last;
  }

  unsubscribe(opts) {
    return this._c.unsubscribe(this, opts);
  }

  on(type, fn) {
    const off = super.on(type, fn);
    if (type === "notification" && this._hold) {
      const held = this._hold;
      this._hold = null;
      for (const n of held) this.emit("notification", n.publication, n);
    }
    return off;
  }

  _note(n) {
    if (this._hold) {
      if (this._hold.length < HOLD) this._hold.push(n);
      else this._c.stats.dropped++;
    } else this.emit("notification", n.publication, n);
  }

  _finish(reason) {
    if (this.reason) return;
    this.reason = reason;
    clearTimeout(this._timer);
    this.emit("ended", reason, { last: this.last });
    this._done(reason);
  }

  // An async iterator of the notifications, until the subscription ends.
  [Symbol.asyncIterator]() {
    const q = [];
    let head = 0;
    let wake = null;
    const poke = () => wake && (wake(), (wake = null));
    const offNote = this.on("notification", (_, n) => {
      q.push(n);
      poke();
    });
    const offEnd = super.on("ended", poke);
    const stop = () => {
      offNote();
      offEnd();
      q.length = head = 0;
      return { done: true, value: undefined };
    };
    return {
      next: async () => {
        while (head === q.length) {
          if (this.reason) return stop();
          await new Promise((r) => (wake = r));
        }
        const value = q[head++];
        if (head > 1024 && head * 2 > q.length) q.splice(0, head), (head = 0);
        return { done: false, value };
      },
      return: async () => stop(),
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }
}

// ---- The client ----

const DEFAULTS = {
  rate: 1500,
  timeout: 30_000,
  minBackoff: 50,
  maxBackoff: 5000,
  endGrace: 5000,
  overloadRetries: 5,
  connectTimeout: 10_000,
  grouped: true,
};

// The broker resumes a subscription until a second after its window.
const RESUME_GRACE = 1000;

export class Cellcast extends Emitter {
  // connect resolves with a client once its first connection is open, or
  // rejects with why it could not open (the client is then closed). Later
  // drops reconnect by themselves.
  static connect(url, options) {
    const c = new Cellcast(url, options);
    return c.ready.then(() => c);
  }

  constructor(url = wsURL(), options = {}) {
    super();
    const o = (this.options = { ...DEFAULTS, ...options });
    o.burst ??= o.rate;
    this.WebSocket = o.WebSocket ?? globalThis.WebSocket;
    if (typeof this.WebSocket !== "function") throw new TypeError("cellcast: no WebSocket: pass options.WebSocket (in Node, the ws package's)");
    // A header where the runtime can send one (an injected WebSocket such
    // as ws's), the token query parameter in browsers.
    this.tokenIn = o.tokenIn ?? (this.WebSocket === globalThis.WebSocket ? "query" : "header");
    this.urls = [url, ...(o.fallback ?? [])].map(String);
    this.url = this.urls[0];
    this._next = 0;
    this.stats = { sent: 0, reconnects: 0, resumes: 0, duplicates: 0, orphans: 0, lost: 0, gaps: 0, retries: 0, dropped: 0 };
    this.subs = new Map(); // sid → Subscription
    this.pending = new Map(); // id → call, sent and unanswered
    this._q = []; // calls (or raw frames) waiting to be sent
    this._qh = 0;
    this._id = 1;
    this._n = 0; // calls made, in order
    this._hold = 0; // no request goes before this (performance.now()), after an overloaded
    this._tokens = o.burst;
    this._t = performance.now();
    this._wait = 0;
    this._sock = null; // the socket, opening or open
    this._up = false; // _sock is open
    this.closed = false;
    this.ready = new Promise((resolve, reject) => (this._ready = { resolve, reject }));
    this.ready.catch(() => {});
    this._dial();
  }

  /** Whether a connection is open (resumes may still be on their way). */
  get open() {
    return this._up;
  }

  /** Requests waiting to be sent (the rate limit, or no connection). */
  get backlog() {
    return this._q.length - this._qh;
  }

  // ---- Connections ----

  async _dial() {
    let url = this.urls[this._next];
    const o = this.options;
    let ws;
    try {
      const token = typeof o.token === "function" ? await o.token() : o.token;
      if (this.closed) return;
      const u = new URL(url);
      if (o.grouped) u.searchParams.set("notifications", "grouped");
      if (token && this.tokenIn === "query") u.searchParams.set("token", token);
      url = u.href;
      ws = token && this.tokenIn === "header" ? new this.WebSocket(url, { headers: { Authorization: `Bearer ${token}` } }) : new this.WebSocket(url);
    } catch (e) {
      return this._failed(e);
    }
    this._sock = ws;
    let why = "";
    // A handshake that hangs (a network that drops packets) is given up.
    const t = setTimeout(() => this._sock === ws && !this._up && ((why = `no answer in ${o.connectTimeout} ms`), ws.close()), o.connectTimeout);
    ws.onopen = () => {
      clearTimeout(t);
      if (this._sock !== ws) return;
      this._up = true;
      this._opened();
    };
    ws.onerror = (e) => (why ||= e?.message ?? e?.error?.message ?? "");
    ws.onclose = (e) => {
      clearTimeout(t);
      if (this._sock !== ws) return;
      this._sock = null;
      if (this._up) this._lost(e.code, e.reason);
      else this._failed(new Error(why || `closed with ${e.code}`));
    };
    // ws (Node): its own event, without a MessageEvent per frame.
    if (typeof ws.on === "function") ws.on("message", (d, binary) => binary || this._sock !== ws || this._frame(d.toString()));
    else ws.onmessage = (e) => this._sock === ws && this._frame(e.data);
  }

  // _failed handles a connection that never opened.
  _failed(e) {
    if (this.closed) return;
    const m = String(e?.message ?? e);
    if (!this._opened1) {
      // The first connection: connect rejects with the reason.
      const code = / 401\b/.test(m) ? "unauthorized" : / 429\b/.test(m) ? "too_many" : LOST;
      this._ready.reject(new CellcastError(code, `cannot connect to ${this.url}: ${m || "refused (a token may be needed)"}`));
      this.close();
      return;
    }
    this._retry();
  }

  _retry() {
    const o = this.options;
    this._wait = Math.min(Math.max(2 * this._wait, o.minBackoff), o.maxBackoff);
    const d = this._wait + Math.random() * (this._wait / 4);
    this._next = (this._next + 1) % this.urls.length;
    this._rt = setTimeout(() => this._dial(), d);
  }

  _opened() {
    this._wait = 0;
    if (!this._opened1) {
      this._opened1 = true;
      this._ready.resolve();
    } else {
      this.stats.reconnects++;
      this.emit("reconnect");
      // Resume every subscription from the last seq it received.
      const now = Date.now();
      for (const s of [...this.subs.values()]) {
        if (now > s.endsAt + RESUME_GRACE) {
          // Past the broker's resume grace: asking is in vain. Whole if
          // the connection outlived that grace too.
          this._end(s, this._lostAt > s.endsAt + RESUME_GRACE ? "window_over" : "lost");
        } else {
          s._repairing = false;
          this._repair(s);
        }
      }
    }
    this._flush();
  }

  // _lost fails the requests sent on a dropped connection and dials again.
  _lost(code, reason) {
    this._up = false;
    this._lostAt = Date.now();
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const s of this.subs.values()) s._routed = false;
    // Resumes not sent yet: the next connection resumes every subscription.
    for (let k = this._qh; k < this._q.length; k++) if (this._q[k].opts?.resume) calls.push(this._q[k]);
    const e = new CellcastError(LOST, "the connection dropped before the reply; the request may or may not have taken effect");
    for (const c of calls) this._fail(c, e);
    if (this.closed) return;
    this.emit("disconnect", { code, reason });
    this._retry();
  }

  /** Drop the connection as a network failure would; the client reconnects and resumes. */
  reconnect() {
    const ws = this._sock;
    if (!ws || !this._up) return;
    this._sock = null;
    try {
      typeof ws.terminate === "function" ? ws.terminate() : ws.close();
    } catch {}
    this._lost(1006, "reconnect forced");
  }

  /** Close the connection, fail what waits, end every subscription ("closed"). */
  close() {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this._rt);
    clearTimeout(this._ft);
    const ws = this._sock;
    this._sock = null;
    this._up = false;
    try {
      ws?.close(1000);
    } catch {}
    const e = new CellcastError(CLOSED, "the client was closed");
    const calls = [...this.pending.values(), ...this._q.slice(this._qh)];
    this.pending.clear();
    this._q = [];
    this._qh = 0;
    for (const c of calls) if (c.msg) this._fail(c, e);
    for (const s of [...this.subs.values()]) this._end(s, CLOSED);
    this._ready.reject(e);
  }

  // ---- Sending ----

  // _request sends msg and resolves with its reply, every page joined.
  // Options: timeout (ms, 0 none), retry (retry overloaded), front (ahead
  // of the queue), onReply (runs at the first reply, before the frames
  // after it are read), abandon (gets a reply that came after the caller
  // stopped waiting).
  _request(msg, opts = {}) {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new CellcastError(CLOSED, "the client was closed"));
      const c = { msg, resolve, reject, opts, n: this._n++, tries: 0, done: false, timer: 0, list: null, reply: null };
      const t = opts.timeout ?? this.options.timeout;
      if (t > 0) c.timer = unref(setTimeout(() => this._fail(c, new CellcastError(TIMEOUT, `no reply to ${msg.op} in ${t} ms; it may still take effect`)), t));
      this._enqueue(c, opts.front);
    });
  }

  _enqueue(c, front) {
    if (front) this._q.splice(this._qh, 0, c);
    else this._q.push(c);
    this._flush();
  }

  // _again queues a refused call again in its place among those waiting,
  // and holds every request back for wait ms, as the broker asks.
  _again(c, wait, rate) {
    const q = this._q;
    let k = this._qh;
    while (k < q.length && !(q[k].n > c.n)) k++;
    q.splice(k, 0, c);
    this._hold = Math.max(this._hold, performance.now() + wait);
    if (rate) this._tokens = 0; // over a rate: no burst after the wait either
    this._flush();
  }

  // _flush sends what the token bucket allows, and comes back for the
  // rest.
  _flush() {
    if (!this._up) return;
    const o = this.options;
    const now = performance.now();
    if (now < this._hold) {
      if (!this._ft) this._ft = setTimeout(() => ((this._ft = 0), this._flush()), this._hold - now);
      return;
    }
    this._tokens = Math.min(o.burst, this._tokens + ((now - this._t) * o.rate) / 1000);
    this._t = now;
    const q = this._q;
    while (this._qh < q.length && this._tokens >= 1) {
      const c = q[this._qh];
      q[this._qh++] = undefined;
      if (c.done) continue; // timed out while it waited
      this._tokens--;
      this._send(c);
      if (!this._up) break;
    }
    if (this._qh === q.length) (this._q = []), (this._qh = 0);
    else if (this._qh > 1024 && this._qh * 2 > q.length) q.splice(0, this._qh), (this._qh = 0);
    if (this._qh < this._q.length && !this._ft) {
      const wait = Math.max(1, Math.ceil(((1 - this._tokens) * 1000) / o.rate));
      this._ft = setTimeout(() => {
        this._ft = 0;
        this._flush();
      }, wait);
    }
  }

  _send(c) {
    this.stats.sent++;
    if (c.raw) return this._sock.send(c.raw); // a page request: its call waits already
    const id = String(this._id++);
    c.id = id;
    c.msg.id = id;
    c.reply = c.list = null;
    this.pending.set(id, c);
    this._sock.send(JSON.stringify(c.msg));
  }

  _fail(c, e) {
    if (c.done) return;
    c.done = true;
    clearTimeout(c.timer);
    // A sent call stays pending, so that its late reply is recognised
    // (and a subscription made anyway cancelled).
    c.reject(e);
  }

  // ---- Receiving ----

  _frame(data) {
    let m;
    try {
      m = JSON.parse(data);
    } catch {
      return;
    }
    switch (m.op) {
      case "notification":
        return this._route(m.sid, m.seq, m.prev, m);
      case "notifications": {
        const p = m.publication;
        for (const t of m.to) this._route(t.sid, t.seq, undefined, { sid: t.sid, seq: t.seq, publication: p });
        return;
      }
      case "ended":
        return this._ended(m);
    }
    this._reply(m);
  }

  // _route hands a notification to its subscription, unless it has it
  // already; one whose prev shows a gap is dropped too, and the
  // subscription resumed from the last it received, which replays both.
  _route(sid, seq, prev, n) {
    const s = this.subs.get(sid);
    if (!s) return void this.stats.orphans++;
    if (!(seq > s.last)) return void this.stats.duplicates++;
    if (prev > s.last) {
      this.stats.gaps++;
      return this._repair(s);
    }
    s.last = seq;
    s._note(n);
  }

  _reply(m) {
    const c = this.pending.get(m.id);
    if (!c) return;
    if (m.op === "error") {
      this.pending.delete(m.id);
      const e = CellcastError.from(m);
      if (e.code === "overloaded" && c.opts.retry && !c.done && c.tries < this.options.overloadRetries) {
        // Not run: wait as the broker says, then try again.
        c.tries++;
        this.stats.retries++;
        const wait = Math.max(e.retryAfterMs, this.options.minBackoff);
        this._again(c, wait + Math.random() * (wait / 4), e.limit === "connection_rate" || e.limit === "user_rate");
        return;
      }
      return this._fail(c, e);
    }
    if (m.op === "page") {
      if (!c.reply) return;
      for (const p of m.results ?? []) c.list.push(p);
    } else {
      c.reply = m;
      c.list = m.results ?? m.recent ?? [];
      if (!c.done) c.opts.onReply?.(m);
    }
    if (m.more) {
      if (m.next) {
        // Cursor mode: pull the next page, under the same id.
        const page = { id: c.id, op: "page", cursor: m.next };
        if (c.msg.uid) page.uid = c.msg.uid;
        this._enqueue({ raw: JSON.stringify(page) });
      }
      return;
    }
    this.pending.delete(m.id);
    const r = c.reply;
    if ("recent" in r) r.recent = c.list;
    else if ("results" in r || r.op === "subscribed" || r.op === "results") r.results = c.list;
    delete r.more;
    delete r.pages;
    delete r.next;
    if (c.done) return c.opts.abandon?.(r);
    c.done = true;
    clearTimeout(c.timer);
    c.resolve(r);
  }

  // _ended handles the broker's word that a subscription stopped routing
  // here: after its last notification, whose seq it names.
  _ended(m) {
    const s = this.subs.get(m.sid);
    if (!s) return;
    const r = m.reason;
    if (r !== "moved" && m.last > s.last) {
      // Notifications lost on the way: resume to get them.
      this.stats.gaps++;
      return this._repair(s);
    }
    if (r === "window_over" || r === "cancelled" || r === "moved") this._end(s, r);
    else this._repair(s); // behind, or news to this client: resume while it can
  }

  // _repair resumes s from the last notification received, unless a
  // resume is on its way.
  _repair(s) {
    if (s._repairing || s.reason) return;
    s._repairing = true;
    const after = s.last;
    const msg = { id: "", op: "resume", sid: s.sid, after };
    if (s._uid) msg.uid = s._uid;
    this._request(msg, { front: true, timeout: 0, resume: true }).then(
      () => {
        s._repairing = false;
        s._routed = true;
        this.stats.resumes++;
        this.emit("resume", { sid: s.sid, after });
        s.emit("resumed", after);
      },
      (e) => {
        s._repairing = false;
        if (e.code === "not_found") this._end(s, "lost");
        else if (e.code !== LOST && e.code !== CLOSED) {
          // overloaded, unavailable, internal: try again.
          setTimeout(() => this._up && this._repair(s), Math.max(e.retryAfterMs, this.options.minBackoff));
        } // a drop: the next connection resumes it
      },
    );
  }

  // _arm ends s once its window and the grace after it are over, if the
  // broker has not said so (an ended frame lost with a connection).
  _arm(s) {
    const d = s.endsAt + this.options.endGrace - Date.now();
    if (d > 0) s._timer = unref(setTimeout(() => this._arm(s), Math.min(d, 2 ** 31 - 1)));
    else this._end(s, s._routed ? "window_over" : "lost");
  }

  _end(s, reason) {
    if (this.subs.get(s.sid) === s) {
      this.subs.delete(s.sid);
      if (reason === "lost") this.stats.lost++;
    }
    s._finish(reason);
  }

  // ---- The protocol's operations ----

  _uid(body) {
    return body.uid ?? this.options.uid;
  }

  _msg(op, body) {
    const msg = { id: "", op, ...body };
    const uid = this._uid(body);
    if (uid) msg.uid = uid;
    return msg;
  }

  /**
   * subscribe stores a subscription and resolves with it, its past results
   * in .results. onNotification(publication, notification), if given,
   * hears every notification; so do listeners and iterators attached
   * later (none is missed in between).
   */
  async subscribe(body, onNotification, opts) {
    if (typeof onNotification === "object" && onNotification) (opts = onNotification), (onNotification = opts.onNotification);
    checkBody(body);
    checkPlace(body);
    checkDuration("past", body.past);
    checkDuration("future", body.future);
    checkFilter(body.filter);
    const uid = this._uid(body);
    let s = null;
    const r = await this._request(this._msg("subscribe", body), {
      ...opts,
      retry: true,
      // At the first reply, before its notifications can be read.
      onReply: (m) => {
        if (m.op !== "subscribed") return;
        s = new Subscription(this, m, uid);
        if (onNotification) s.on("notification", onNotification);
        if (!m.live) return;
        const old = this.subs.get(s.sid);
        if (old) this._end(old, "lost");
        this.subs.set(s.sid, s);
        this._arm(s);
      },
      abandon: (m) => m.live && this.unsubscribe(m.sid, { uid }).catch(() => {}),
    });
    if (!s) throw new CellcastError("protocol", `${r.op} to a subscribe`);
    s.results = r.results;
    if (!s.live) s._finish("window_over");
    return s;
  }

  /** unsubscribe cancels a subscription (a Subscription or its sid); it ends with "cancelled". */
  async unsubscribe(sub, opts = {}) {
    const sid = typeof sub === "string" ? sub : sub.sid;
    const s = this.subs.get(sid) ?? (typeof sub === "object" ? sub : null);
    const msg = { id: "", op: "unsubscribe", sid };
    const uid = opts.uid ?? s?._uid ?? this.options.uid;
    if (uid) msg.uid = uid;
    try {
      const r = await this._request(msg, { ...opts, retry: true });
      if (s) this._end(s, "cancelled");
      return r;
    } catch (e) {
      if (s && e.code === "not_found") this._end(s, "cancelled");
      throw e;
    }
  }

  /** publish stores a publication and notifies the live subscriptions it matches. */
  publish(body, opts) {
    try {
      checkBody(body);
      checkPlace(body);
      checkDuration("expires", body.expires);
    } catch (e) {
      return Promise.reject(e);
    }
    return this._request(this._msg("publish", body), { ...opts, retry: true });
  }

  /** query returns the latest live publications by an attribute, or that meet a place. */
  query(body, opts) {
    try {
      checkQuery(body);
    } catch (e) {
      return Promise.reject(e);
    }
    return this._request(this._msg("query", body), { ...opts, retry: true });
  }
}

export default Cellcast;

// A thin client for Cellcast's WebSocket protocol (docs/protocol.md): one
// connection, requests matched to replies by id, pushed pages joined into
// one result list, notifications routed to the callback of their
// subscription, and a send rate kept under the broker's per-connection
// limit. It knows nothing of the demo; any page can use it.

export class CellcastError extends Error {
  constructor(reply) {
    super(`${reply.code}: ${reply.message}`);
    this.code = reply.code;
    this.retryAfterMs = reply.retry_after_ms ?? 0;
  }
}

// wsURL is the broker's WebSocket beside the page, with a bearer token.
export function wsURL(token) {
  const u = new URL("/ws", location.href);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  if (token) u.searchParams.set("token", token);
  return u.href;
}

export class Cellcast {
  // connect resolves once the socket is open; rate is requests per second
  // (the broker's default limit is 2,000 with a burst of 4,000).
  static connect(url, { rate = 1500 } = {}) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.onopen = () => resolve(new Cellcast(ws, rate));
      ws.onerror = () => reject(new Error("WebSocket refused (a token may be needed)"));
    });
  }

  constructor(ws, rate) {
    this.ws = ws;
    this.rate = rate;
    this.nextId = 1;
    this.pending = new Map(); // id → {resolve, reject, reply, results, onNote}
    this.subs = new Map(); // sid → notification callback
    this.uids = new Map(); // sid → the uid it was made for (without auth, its unsubscribe names it too)
    this.queue = [];
    this.tokens = rate;
    this.last = performance.now();
    this.timer = 0;
    this.onclose = null;
    ws.onmessage = (e) => this.receive(JSON.parse(e.data));
    ws.onclose = (e) => {
      for (const p of this.pending.values()) p.reject(new Error(`connection closed (${e.code})`));
      this.pending.clear();
      this.onclose?.(e);
    };
  }

  get open() {
    return this.ws.readyState === WebSocket.OPEN;
  }

  // request sends one request and resolves with its reply; past results,
  // recent and query results arrive whole, in reply.results (or .recent).
  // onNote, for a subscribe, gets each notification's publication.
  request(body, onNote) {
    const id = String(this.nextId++);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onNote });
      this.queue.push(JSON.stringify({ ...body, id }));
      this.flush();
    });
  }

  async subscribe(body, onNote) {
    const r = await this.request({ ...body, op: "subscribe" }, onNote);
    if (body.uid && r.sid) this.uids.set(r.sid, body.uid);
    return r;
  }

  publish(body) {
    return this.request({ ...body, op: "publish" });
  }

  unsubscribe(sid) {
    const uid = this.uids.get(sid);
    this.subs.delete(sid);
    this.uids.delete(sid);
    return this.request({ op: "unsubscribe", sid, ...(uid && { uid }) }).catch(() => {}); // gone already: fine
  }

  query(body) {
    return this.request({ ...body, op: "query" });
  }

  close() {
    this.ws.close();
  }

  // flush sends what the token bucket allows and comes back for the rest.
  flush() {
    const now = performance.now();
    this.tokens = Math.min(this.rate, this.tokens + ((now - this.last) * this.rate) / 1000);
    this.last = now;
    while (this.queue.length && this.tokens >= 1 && this.open) {
      this.ws.send(this.queue.shift());
      this.tokens--;
    }
    if (this.queue.length && !this.timer) {
      this.timer = setTimeout(() => {
        this.timer = 0;
        this.flush();
      }, 20);
    }
  }

  get backlog() {
    return this.queue.length;
  }

  receive(m) {
    if (m.op === "notification") {
      this.subs.get(m.sid)?.(m.publication, m);
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.op === "error") {
      this.pending.delete(m.id);
      p.reject(new CellcastError(m));
      return;
    }
    if (m.op === "page") {
      p.results.push(...(m.results ?? []));
      if (!m.more) this.done(m.id, p);
      else if (m.next) this.queue.push(JSON.stringify({ op: "page", cursor: m.next, id: m.id })), this.flush();
      return;
    }
    // The first reply: register the subscription now, before any of its
    // notifications can arrive.
    if (m.sid && p.onNote && m.live) this.subs.set(m.sid, p.onNote);
    p.reply = m;
    p.results = [...(m.results ?? m.recent ?? [])];
    if (!m.more) this.done(m.id, p);
    else if (m.next) this.queue.push(JSON.stringify({ op: "page", cursor: m.next, id: m.id })), this.flush();
  }

  done(id, p) {
    this.pending.delete(id);
    const r = p.reply;
    if (r.recent) r.recent = p.results;
    else r.results = p.results;
    delete r.more;
    delete r.next;
    p.resolve(r);
  }
}

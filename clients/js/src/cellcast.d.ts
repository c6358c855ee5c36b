// Types of the cellcast package: the JavaScript client of a Cellcast
// broker over WebSocket. docs/protocol.md is the protocol's reference;
// field names are the protocol's.

/** The broker's error codes (docs/protocol.md, "Errors"). */
export type ProtocolCode =
  | "bad_request"
  | "unknown_op"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "too_large"
  | "too_many"
  | "overloaded"
  | "unavailable"
  | "internal";

/**
 * The client's own codes: connection_lost (the connection dropped before
 * the reply: the request may or may not have taken effect), closed (the
 * client was closed), timeout (no reply in time: it may still take
 * effect), protocol (a reply this client cannot read).
 */
export type ClientCode = "connection_lost" | "closed" | "timeout" | "protocol";

/** The limits an overloaded or too_many error names. */
export type Limit =
  | "connection_rate"
  | "user_rate"
  | "connection_subscriptions"
  | "user_subscriptions"
  | "user_connections"
  | "user_new_topics"
  | "topics";

/** An error reply as the broker sends it. */
export interface ErrorReply {
  id?: string | number;
  op: "error";
  code: ProtocolCode;
  message: string;
  limit?: Limit;
  retry_after_ms?: number;
}

export class CellcastError extends Error {
  constructor(code: ProtocolCode | ClientCode, message: string, options?: { retryAfterMs?: number; limit?: Limit; local?: boolean });
  static from(reply: ErrorReply): CellcastError;
  readonly name: "CellcastError";
  readonly code: ProtocolCode | ClientCode;
  /** On overloaded: when a retry may succeed, in milliseconds (0: no hint). */
  readonly retryAfterMs: number;
  readonly limit?: Limit;
  /** The client refused the request before sending it (code bad_request): nothing was sent. */
  readonly local: boolean;
}

/** A window or a lifetime: a Go duration string ("10s", "1m30s") or a number of seconds, never negative. */
export type Duration = string | number;

/** A GeoJSON geometry (RFC 7946): positions are [lng, lat], rings closed. */
export type Geometry = { type: "Polygon"; coordinates: number[][][] } | { type: "MultiPolygon"; coordinates: number[][][][] };

type LocationKey = "cell" | "lat" | "lng" | "radius_m" | "polygon" | "topic" | "cover";
type Only<T> = T & { [K in Exclude<LocationKey, keyof T>]?: never };

/**
 * Where a request applies, exactly one form: a Dewey cell ("1.4.2"; "t1.2"
 * in the topic namespace), a point, a circle (radius_m metres), a GeoJSON
 * polygon, or a topic path ("sports/soccer"). cover (1–16) puts a circle
 * or a polygon on that many cells at most.
 */
export type Location =
  | Only<{ cell: string }>
  | Only<{ lat: number; lng: number }>
  | Only<{ lat: number; lng: number; radius_m: number; cover?: number }>
  | Only<{ polygon: Geometry; cover?: number }>
  | Only<{ topic: string }>;

/** A keyword in the description (case-insensitive), and attributes that must be equal. */
export type Filter = string | { keyword?: string; attrs?: Record<string, string> };

interface Common {
  /** Only on a broker that runs open (no auth): the user the request acts as. Default: Options.uid. */
  uid?: string;
  /** How the pages after a paged reply's first come: pushed (the default) or pulled by cursor. */
  paging?: "push" | "cursor";
}

export type SubscribeRequest = Location &
  Common & {
    /** How far back past results reach; default none. */
    past?: Duration;
    /** How long notifications follow; default none (past results only). */
    future?: Duration;
    /** Leave out what this user's earlier subscriptions already returned. */
    self_join?: boolean;
    filter?: Filter;
  };

export type PublishRequest = Location &
  Common & {
    /** The lifetime; none: the live subscriptions hear of it, nothing is stored. */
    expires?: Duration;
    desc?: string;
    attrs?: Record<string, string>;
    /** Ask for the cell's other live publications in the reply (recent). */
    self_join?: boolean;
  };

interface QueryCommon extends Common {
  /** 1 to 1000; default 10. */
  k?: number;
}

/** The latest K live publications by an attribute (uid, tp or an attrs key): one value, or a range. */
export type AttrQuery = QueryCommon &
  ({ attr: string; eq: string; from?: never; to?: never } | { attr: string; from: string; to: string; eq?: never }) & {
    near?: never;
    within?: never;
  };

/** The latest K live publications that meet a circle (near) or a polygon (within). */
export type PlaceQuery = QueryCommon &
  ({ near: { lat: number; lng: number; radius_m?: number }; within?: never } | { within: Geometry; near?: never }) & {
    /** With eq: publications whose attribute equals it ("uid": the publisher). */
    attr?: string;
    eq?: string;
    filter?: Filter;
    /** RFC 3339 bounds of the publications' tp. */
    from?: string;
    to?: string;
    cover?: number;
  };

export type QueryRequest = AttrQuery | PlaceQuery;

/** A stored publication as the broker renders it. Times are RFC 3339 with nanoseconds, UTC. */
export interface Publication {
  pid: string;
  uid: string;
  cell: string;
  /** The topic path, for topic cells. */
  topic?: string;
  tp: string;
  expires_at: string;
  desc?: string;
  attrs?: Record<string, string>;
  /** Where a publication made at a point or a circle happened. */
  lat?: number;
  lng?: number;
  radius_m?: number;
  /** The geometry of a publication made at a polygon. */
  polygon?: Geometry;
}

/**
 * A publication pushed to a subscription. seq rises strictly within a
 * subscription and survives a broker restart. The publication object may
 * be shared by the subscriptions it reached in one grouped frame.
 */
export interface Notification {
  sid: string;
  seq: number;
  prev?: number;
  publication: Publication;
}

export interface Published {
  id: string;
  op: "published";
  pid: string;
  cell: string;
  /** Every cell, for a cover of more than one. */
  cover?: string[];
  tp: string;
  expires_at: string;
  /** Live subscriptions matched. */
  matched: number;
  /** With self_join: the cell's other live publications, newest first, every page joined. */
  recent?: Publication[];
}

export interface Results {
  id: string;
  op: "results";
  /** The attribute of a query by attribute. */
  attr?: string;
  /** "near" or "within", of a query by place. */
  place?: "near" | "within";
  /** How many in all. */
  count: number;
  /** Newest first, every page joined. */
  results: Publication[];
}

export interface Unsubscribed {
  id: string;
  op: "unsubscribed";
  sid: string;
}

/**
 * Why a subscription ended: window_over (its window is over and all it was
 * owed arrived), cancelled (unsubscribed), moved (resumed on another
 * connection), lost (the broker no longer knew it when the client resumed
 * it, or its window ended while the client was disconnected: notifications
 * may be missing), closed (the client was closed).
 */
export type EndReason = "window_over" | "cancelled" | "moved" | "lost" | "closed";

export type NotificationListener = (publication: Publication, notification: Notification) => void;

/**
 * A subscription, with its subscribed reply's fields. Its notifications
 * come in order, each once, to its listeners and iterators until it ends;
 * those that arrive before the first listener or iterator attaches are
 * kept for it.
 */
export class Subscription implements AsyncIterable<Notification> {
  private constructor();
  readonly sid: string;
  /** The cell it is stored at (its cover's first). */
  readonly cell: string;
  /** Every cell, for a cover of more than one. */
  readonly cover?: string[];
  readonly ts: string;
  readonly expires_at: string;
  /** False: no future window, nothing follows the past results. */
  readonly live: boolean;
  /** The past results, newest first, every page joined. */
  results: Publication[];
  /** The seq of the last notification received (0: none). */
  readonly lastSeq: number;
  /** When the window ends, in epoch milliseconds on this machine's clock. */
  readonly endsAt: number;
  /** Why it ended; null while it lasts. */
  readonly reason: EndReason | null;
  /** Resolves with the reason once it ends. */
  readonly ended: Promise<EndReason>;
  on(type: "notification", fn: NotificationListener): () => void;
  on(type: "ended", fn: (reason: EndReason, info: { last: number }) => void): () => void;
  /** It was resumed after a drop or a gap: notifications follow from after `after`. */
  on(type: "resumed", fn: (after: number) => void): () => void;
  off(type: "notification" | "ended" | "resumed", fn: (...args: any[]) => void): void;
  unsubscribe(options?: RequestOptions): Promise<Unsubscribed>;
  /** The notifications until the subscription ends. */
  [Symbol.asyncIterator](): AsyncIterator<Notification, undefined>;
}

/** Something that makes WebSockets: a browser's WebSocket, or the ws package's. */
export type WebSocketClass = new (url: string, init?: any) => any;

export interface Options {
  /** The WebSocket to use; default globalThis.WebSocket. In Node 20, pass ws's. */
  WebSocket?: WebSocketClass;
  /** A bearer token, or a function that gives one (a fresh one at each reconnect). */
  token?: string | (() => string | Promise<string>);
  /** How the token goes: an Authorization header (default for an injected WebSocket) or the token query parameter (default in browsers, which cannot set headers). */
  tokenIn?: "header" | "query";
  /** Names the user in every request: needed when the broker runs open. */
  uid?: string;
  /** More URLs of the same service (a cluster's other nodes), dialled in turn after a drop. */
  fallback?: string[];
  /** Ask for grouped notifications, split by the client (default true). */
  grouped?: boolean;
  /** Requests per second the client sends at most (default 1500, under the broker's 2,000). */
  rate?: number;
  /** The token bucket's size (default rate). */
  burst?: number;
  /** Milliseconds a request waits for its reply, 0 for ever (default 30,000). */
  timeout?: number;
  /** The wait between reconnection attempts doubles from minBackoff to maxBackoff ms, with up to a quarter of jitter (defaults 50 and 5,000). */
  minBackoff?: number;
  maxBackoff?: number;
  /** How long after its window a subscription waits for late notifications before it ends without the broker's word (default 5,000 ms). */
  endGrace?: number;
  /** How many times an overloaded request is retried after the broker's retry_after_ms (default 5). */
  overloadRetries?: number;
  /** Milliseconds a WebSocket handshake may take before the attempt is given up (default 10,000). */
  connectTimeout?: number;
}

export interface RequestOptions {
  /** Milliseconds to wait for the reply; default Options.timeout. */
  timeout?: number;
}

export interface Stats {
  /** Request frames sent. */
  sent: number;
  /** Connections made again after a drop. */
  reconnects: number;
  /** Subscriptions resumed after a drop or a gap. */
  resumes: number;
  /** Notifications dropped as already received. */
  duplicates: number;
  /** Notifications of subscriptions the client no longer holds. */
  orphans: number;
  /** Subscriptions ended as lost. */
  lost: number;
  /** Notifications, or ended frames, that showed one missing before them. */
  gaps: number;
  /** Overloaded requests retried. */
  retries: number;
  /** Notifications dropped while nobody listened, past 65,536 held. */
  dropped: number;
}

export class Cellcast {
  /** Resolves once the first connection is open; rejects with a CellcastError (unauthorized, connection_lost) if it cannot open, and the client is closed. */
  static connect(url?: string | URL, options?: Options): Promise<Cellcast>;
  /** Connects in the background; requests made meanwhile wait for the connection. url: default wsURL() in a browser. */
  constructor(url?: string | URL, options?: Options);
  readonly options: Required<Omit<Options, "WebSocket" | "token" | "tokenIn" | "uid" | "fallback">> & Options;
  readonly url: string;
  /** Resolves once the first connection is open. */
  readonly ready: Promise<void>;
  /** Whether a connection is open now. */
  readonly open: boolean;
  /** Requests waiting to be sent. */
  readonly backlog: number;
  readonly closed: boolean;
  readonly stats: Stats;
  /** The live subscriptions, by sid. */
  readonly subs: ReadonlyMap<string, Subscription>;

  subscribe(body: SubscribeRequest, onNotification?: NotificationListener, options?: RequestOptions): Promise<Subscription>;
  subscribe(body: SubscribeRequest, options: RequestOptions & { onNotification?: NotificationListener }): Promise<Subscription>;
  publish(body: PublishRequest, options?: RequestOptions): Promise<Published>;
  query(body: QueryRequest, options?: RequestOptions): Promise<Results>;
  /** Cancels a subscription; it ends with "cancelled". uid: the user it was made for, on a broker that runs open, if this client did not make it. */
  unsubscribe(subscription: Subscription | string, options?: RequestOptions & { uid?: string }): Promise<Unsubscribed>;

  on(type: "disconnect", fn: (info: { code: number; reason: string }) => void): () => void;
  on(type: "reconnect", fn: () => void): () => void;
  on(type: "resume", fn: (info: { sid: string; after: number }) => void): () => void;
  off(type: "disconnect" | "reconnect" | "resume", fn: (...args: any[]) => void): void;

  /** Drops the connection as a network failure would; the client reconnects and resumes. */
  reconnect(): void;
  /** Closes the connection; what waits fails with code closed, every subscription ends with "closed". */
  close(): void;
}

/** The broker's WebSocket beside the current page (ws: or wss:), with the token as a query parameter when given. */
export function wsURL(token?: string, base?: string): string;

/** An RFC 3339 time of the broker as epoch milliseconds. */
export function parseTime(s: string): number;

export default Cellcast;

// A real broker for the tests: built from the repository (or taken from
// $CELLCAST_BROKER, which scripts/test.mjs sets after building it once),
// started on free loopback ports and a temporary data directory, killed
// and restarted on the same ones.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";

const root = join(dirname(fileURLToPath(import.meta.url)), "../../..");

// brokerBinary builds cmd/broker once per process unless $CELLCAST_BROKER
// names a binary.
let built;
export function brokerBinary() {
  if (process.env.CELLCAST_BROKER && existsSync(process.env.CELLCAST_BROKER)) return process.env.CELLCAST_BROKER;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), "cellcast-js-bin-"));
    built = join(dir, "broker");
    execFileSync("go", ["build", "-o", built, "./cmd/broker"], { cwd: root, stdio: "inherit" });
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  }
  return built;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export class Broker {
  // flags: more command-line flags, such as ["--rate", "5"].
  constructor(flags = []) {
    this.flags = flags;
    this.data = mkdtempSync(join(tmpdir(), "cellcast-js-data-"));
    this.proc = null;
    this.log = "";
  }

  get url() {
    return `ws://127.0.0.1:${this.port}/ws`;
  }

  async start() {
    this.port ??= await freePort();
    this.natsPort ??= await freePort();
    const args = ["--data", this.data, "--http", `127.0.0.1:${this.port}`, "--nats-listen", `127.0.0.1:${this.natsPort}`,
      "--durability", "os", "--log-level", "warn", ...this.flags];
    const p = (this.proc = spawn(brokerBinary(), args, { stdio: ["ignore", "ignore", "pipe"] }));
    p.stderr.on("data", (d) => (this.log = (this.log + d).slice(-20000)));
    const exited = new Promise((resolve) => p.once("exit", resolve));
    this.exited = exited;
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (p.exitCode !== null) throw new Error(`broker exited (${p.exitCode}):\n${this.log}`);
      try {
        const r = await fetch(`http://127.0.0.1:${this.port}/readyz`);
        if (r.ok) return this;
      } catch {}
      if (Date.now() > deadline) throw new Error(`broker not ready:\n${this.log}`);
      await sleep(50);
    }
  }

  // kill ends the broker with SIGKILL and waits for it to be gone.
  async kill() {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill("SIGKILL");
    await this.exited;
  }

  async stop() {
    await this.kill();
    rmSync(this.data, { recursive: true, force: true });
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Proxy is a TCP proxy in front of a port whose connections the test can
// cut, as a network failure would (the client sees its socket end).
export class Proxy {
  constructor(target) {
    this.target = target;
    this.socks = new Set();
    this.cuts = 0;
    this.server = createServer((c) => {
      const up = connect(this.target, "127.0.0.1");
      for (const s of [c, up]) {
        this.socks.add(s);
        s.on("close", () => this.socks.delete(s));
        s.on("error", () => {});
      }
      c.pipe(up);
      up.pipe(c);
      c.on("close", () => up.destroy());
      up.on("close", () => c.destroy());
    });
  }

  listen() {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.port ?? 0, "127.0.0.1", () => resolve((this.port = this.server.address().port)));
    });
  }

  // down cuts every connection and refuses new ones until up.
  down() {
    this.cut();
    return new Promise((r) => this.server.close(r));
  }

  up() {
    return this.listen();
  }

  // cut resets every connection through the proxy.
  cut() {
    this.cuts++;
    for (const s of this.socks) s.resetAndDestroy ? s.resetAndDestroy() : s.destroy();
    this.socks.clear();
  }

  close() {
    this.cut();
    return new Promise((r) => this.server.close(r));
  }
}

export { WebSocket };

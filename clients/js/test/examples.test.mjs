// The examples of docs/clients.md: the Node script runs against a real
// broker and its alert reaches a subscriber; the page's module parses.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Cellcast } from "../src/cellcast.js";
import { Broker, WebSocket, sleep } from "./broker.mjs";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..");
const run = promisify(execFile);

test("examples/publish.mjs publishes to a subscriber", async () => {
  const broker = await new Broker().start();
  try {
    const cc = await Cellcast.connect(broker.url, { WebSocket, uid: "watcher" });
    const got = [];
    await cc.subscribe({ lat: 48.8584, lng: 2.2945, radius_m: 1000, future: "1m" }, (p) => got.push(p));
    const { stdout } = await run(process.execPath, ["examples/publish.mjs", "Gas leak near the tower", "48.8584", "2.2945"], {
      cwd: dir,
      env: { ...process.env, CELLCAST_URL: broker.url },
    });
    assert.match(stdout, /^published \S+ in cell [\d.]+: 1 live subscriptions notified\n$/);
    while (!got.length) await sleep(10);
    assert.equal(got[0].desc, "Gas leak near the tower");
    assert.equal(got[0].uid, "publisher");
    assert.equal(got[0].radius_m, 300);
    // Refused: the broker's error on stderr, exit code 1.
    await assert.rejects(run(process.execPath, ["examples/publish.mjs", "x", "95", "0"], { cwd: dir, env: { ...process.env, CELLCAST_URL: broker.url } }), (e) => e.code === 1 && /bad_request/.test(e.stderr));
    cc.close();
  } finally {
    await broker.stop();
  }
});

test("examples/alerts.html: one module script that imports the client and parses", async () => {
  const html = readFileSync(join(dir, "examples/alerts.html"), "utf8");
  const scripts = [...html.matchAll(/<script type="module">([\s\S]*?)<\/script>/g)].map((m) => m[1]);
  assert.equal(scripts.length, 1);
  assert.match(scripts[0], /from "\.\.\/src\/cellcast\.js"/);
  assert.ok(html.split("\n").length <= 30, "the page is short");
  const tmp = mkdtempSync(join(tmpdir(), "cellcast-js-page-"));
  try {
    writeFileSync(join(tmp, "page.mjs"), scripts[0]);
    await run(process.execPath, ["--check", join(tmp, "page.mjs")]);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test("docs/clients.md shows both examples as they are", () => {
  const doc = readFileSync(join(dir, "../../docs/clients.md"), "utf8");
  for (const f of ["examples/alerts.html", "examples/publish.mjs"]) {
    assert.ok(doc.includes(readFileSync(join(dir, f), "utf8")), `docs/clients.md lacks ${f} as it is`);
  }
});

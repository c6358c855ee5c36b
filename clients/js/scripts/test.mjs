// npm test: the declarations (tsc --noEmit), the bundle's size, then the
// tests (node --test) against a broker built once from the repository.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..");
const run = (cmd, args, opts = {}) => {
  console.log(`$ ${cmd} ${args.join(" ")}`);
  execFileSync(cmd, args, { cwd: dir, stdio: "inherit", ...opts });
};

run(process.execPath, [join(dir, "node_modules/typescript/bin/tsc"), "-p", "."]);
run(process.execPath, ["scripts/build.mjs", "--check"]);

const bin = mkdtempSync(join(tmpdir(), "cellcast-js-bin-"));
try {
  const broker = join(bin, "broker");
  run(process.env.GO || "go", ["build", "-o", broker, "./cmd/broker"], { cwd: join(dir, "../..") });
  const files = readdirSync(join(dir, "test")).filter((f) => f.endsWith(".test.mjs")).sort().map((f) => join("test", f));
  console.log(`$ node --test ${files.join(" ")}`);
  const r = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...files], {
    cwd: dir,
    stdio: "inherit",
    env: { ...process.env, CELLCAST_BROKER: broker },
  });
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(bin, { recursive: true, force: true });
}

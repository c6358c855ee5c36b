// Builds the browser bundle, dist/cellcast.min.js (an ES module, minified),
// and reports its size raw and gzipped. With --check it fails when the
// gzipped bundle is over LIMIT bytes (npm test runs it so).

import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const LIMIT = 8 * 1024;
const dir = join(dirname(fileURLToPath(import.meta.url)), "..");

export async function bundle() {
  const out = await build({
    entryPoints: [join(dir, "src/cellcast.js")],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    outfile: join(dir, "dist/cellcast.min.js"),
    legalComments: "none",
  });
  const code = out.outputFiles[0].contents;
  return { code, raw: code.length, gzipped: gzipSync(code, { level: 9 }).length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { code, raw, gzipped } = await bundle();
  const { mkdirSync, writeFileSync } = await import("node:fs");
  mkdirSync(join(dir, "dist"), { recursive: true });
  writeFileSync(join(dir, "dist/cellcast.min.js"), code);
  console.log(`dist/cellcast.min.js: ${raw} bytes, ${gzipped} gzipped (limit ${LIMIT})`);
  if (process.argv.includes("--check") && gzipped > LIMIT) {
    console.error(`the gzipped bundle is ${gzipped} bytes, over ${LIMIT}`);
    process.exit(1);
  }
}

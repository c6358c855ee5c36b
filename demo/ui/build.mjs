// Bundles the page into ../static (app.js, app.css) with esbuild: same
// sources and lock file, same bytes. Run by `make demo-ui`. The page's
// client is the repository's JavaScript client (clients/js, docs/clients.md),
// imported as "cellcast" and bundled from its source.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

await build({
  entryPoints: ["src/main.js"],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  outdir: "../static",
  entryNames: "app",
  loader: { ".png": "dataurl", ".svg": "dataurl" },
  legalComments: "eof",
  alias: { cellcast: fileURLToPath(new URL("../../clients/js/src/cellcast.js", import.meta.url)) },
  logLevel: "info",
});

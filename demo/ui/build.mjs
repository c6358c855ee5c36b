// Bundles the page into ../static (app.js, app.css) with esbuild: same
// sources and lock file, same bytes. Run by `make demo-ui`.
import { build } from "esbuild";

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
  logLevel: "info",
});

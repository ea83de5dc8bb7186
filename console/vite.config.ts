import { fileURLToPath } from "node:url"
import { defineConfig } from "vite"

// The console is served by the hookrelay server under /console (src/ingest/ConsoleRoutes.ts), from
// console/dist. Preact's JSX is compiled by esbuild (no Babel preset); everything is bundled, nothing
// is loaded from elsewhere at run time.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/console/",
  logLevel: "warn",
  mode: "production",
  esbuild: { jsx: "automatic", jsxImportSource: "preact", jsxDev: false },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false }
  }
})

import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  resolve: {
    // The examples import the package by name, as users do; in this checkout the names are the sources.
    alias: [
      { find: /^hookrelay\/client$/, replacement: source("./src/client/index.ts") },
      { find: /^hookrelay\/server$/, replacement: source("./src/server.ts") },
      { find: /^hookrelay$/, replacement: source("./src/index.ts") }
    ]
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    sequence: { concurrent: false },
    // Test files share their worker's modules instead of a fresh process and module graph each: about half a second
    // less per file. They share no state that matters: metrics are read as differences, clocks are per test, and
    // @effect/vitest's `layer` hands its tests a `it` of their own instead of changing the shared one.
    isolate: false,
    // Receivers in tests listen on loopback, which the SSRF guard refuses by default (SPEC §8). Child processes
    // inherit it; the guard's own tests pass `allowPrivateNetworks` explicitly.
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true" }
  }
})

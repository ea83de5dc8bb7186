/**
 * `npm run bench`: every benchmark, one after the other (each in processes of its own), each
 * writing its results under bench/results/ as markdown and JSON. Loopback only; bounded in count.
 *
 *   npm run bench                 # all but the abuse runs
 *   npm run bench -- dispatcher   # only the named ones (dispatcher, end-to-end, telemetry, web-sources,
 *                                 # client, client-outage, audiences, decode, signing, soak, connections,
 *                                 # endpoint-health, runtime-parts, fan-out, message-log)
 *
 * The abuse runs (soak: 100 000 generated inputs; connections: idle and slow-header connections held until the server
 * cuts them) check robustness rather than measure speed, and take minutes: they run only when named. So does
 * message-log, which fills a million messages into each store first.
 */
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { repoRoot } from "./support/processes.js"

const benchmarks: Record<string, ReadonlyArray<string>> = {
  dispatcher: ["bench/dispatcher.ts"],
  "end-to-end": ["bench/endToEnd.ts"],
  telemetry: ["bench/telemetry.ts"],
  "web-sources": ["bench/webSources.ts"],
  client: ["bench/client/clientBench.ts"],
  "client-outage": ["bench/client/outage.ts"],
  audiences: ["bench/audiences.ts"],
  decode: ["bench/decode.ts"],
  signing: ["bench/signing.ts"],
  soak: ["bench/soak.ts"],
  connections: ["bench/connections.ts"],
  "endpoint-health": ["bench/endpointHealth.ts"],
  "runtime-parts": ["bench/runtimeParts.ts"],
  "fan-out": ["bench/fanOut.ts"],
  "message-log": ["bench/messageLog.ts"]
}
const onlyWhenNamed = new Set(["soak", "connections", "message-log"])

const chosen = process.argv.slice(2).filter((name) => !name.startsWith("-"))
const names = chosen.length === 0 ? Object.keys(benchmarks).filter((name) => !onlyWhenNamed.has(name)) : chosen
let failed = 0
for (const name of names) {
  const script = benchmarks[name]
  if (script === undefined) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(benchmarks).join(", ")}`)
    process.exit(2)
  }
  console.log(`\n=== ${name} ===`)
  const result = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", join(repoRoot, script[0]!)], {
    cwd: repoRoot,
    stdio: "inherit",
    // Every receiver is on loopback, which the SSRF guard refuses unless allowed (REFERENCE §8).
    env: { ...process.env, HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true" }
  })
  if (result.status !== 0) failed += 1
}
process.exit(failed === 0 ? 0 : 1)

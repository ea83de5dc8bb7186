import { describe, expect, it } from "@effect/vitest"
import { mustRunFaults, postgresFaultsUnavailable, smallDiskUnavailable } from "../support/faultStores.js"
import { type FaultRunResult, runStoreFault } from "../support/storeFaultRun.js"

/**
 * The store taken away under load from the real analytics-node (issue: a valid write key answered 401 while the
 * database was down, and the client dropped everything): a PostgreSQL cluster of the test's own stopped and started
 * again, and SQLite's disk filled and freed. While away, ingest answers 503 with Retry-After and `/readyz` says why;
 * once back, the same process goes on and every message it acknowledged is delivered. Under CI these must run.
 */

const expectRecovered = (result: FaultRunResult, reason: string) => {
  console.info(JSON.stringify(result))
  expect(result.probes.hung).toBe(0)
  expect(result.probes.refused).toBe(0)
  expect(result.serverSurvived).toBe(true)
  // The outage was seen from the outside: 503s, never a 401 that makes the client drop a batch.
  expect(result.clientStatuses["503"] ?? 0).toBeGreaterThan(0)
  expect(result.clientStatuses["401"] ?? 0).toBe(0)
  expect(result.probes.statuses["POST /v1/track 401"] ?? 0).toBe(0)
  expect(result.readyReasons).toStrictEqual([reason])
  // Said once per outage and its end once, not once per request. A disk filled while SQLite still has room in its
  // WAL lets a write or two through, which ends the outage and starts another: a few, never hundreds.
  expect(result.outageLogLines).toBeGreaterThanOrEqual(1)
  expect(result.outageLogLines).toBeLessThanOrEqual(reason === "store_full" ? 3 : 1)
  expect(result.recoveryLogLines).toBe(result.outageLogLines)
  // Everything acknowledged is delivered; analytics-node outlasted the outage, so that is everything sent.
  expect(result.messages.accepted).toBe(result.messages.sent)
  expect(result.messages.lost).toBe(0)
  expect(result.messages.delivered).toBe(result.messages.accepted)
}

const skipReason = (reason: string | undefined) => {
  if (reason !== undefined && mustRunFaults) throw new Error(`store fault tests cannot run under CI: ${reason}`)
  return reason !== undefined
}

const run = { outageMillis: 5_000, steadyMillis: 3_000, rate: 50 }

// The two runs share nothing (a cluster, a tmpfs, a server and a receiver each) and mostly wait: side by side.
describe.concurrent("the store goes away under load (real processes)", () => {
  it.skipIf(skipReason(postgresFaultsUnavailable()))(
    "PostgreSQL stopped and started: 503 meanwhile, nothing acknowledged lost, no restart",
    { timeout: 400_000 },
    async () => {
      expectRecovered(await runStoreFault({ store: "postgres", pgPort: 5498, ...run }), "store_unavailable")
    }
  )

  it.skipIf(skipReason(smallDiskUnavailable()))(
    "SQLite's disk full, then freed: 503 meanwhile, nothing acknowledged lost, no restart",
    { timeout: 400_000 },
    async () => {
      expectRecovered(await runStoreFault({ store: "sqlite", ...run }), "store_full")
    }
  )
})

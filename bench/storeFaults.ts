/**
 * Store faults under load (issue: the database going away, a full disk): the real server on a PostgreSQL cluster of
 * its own, stopped for `--outage` seconds and started again, and on SQLite in a small tmpfs filled and then freed,
 * while analytics-node sends steadily. Prints requests sent / answered / refused / hung and accepted / delivered /
 * duplicates / lost, and exits 1 if an accepted message was lost, a request was left open, or the server died.
 * Needs root (a PostgreSQL run as the postgres user, a tmpfs mount). Loopback only.
 *
 *   npx tsx bench/storeFaults.ts [--store postgres|sqlite|both] [--outage 30] [--steady 10] [--rate 200]
 *   npm run chaos -- --store-faults [same options]
 */
import { type FaultRunResult, runStoreFault } from "../test/support/storeFaultRun.js"

const option = (name: string, fallback: string) => {
  const index = process.argv.indexOf(`--${name}`)
  return index === -1 ? fallback : process.argv[index + 1] ?? fallback
}

export const runStoreFaults = async (): Promise<boolean> => {
  const which = option("store", "both")
  const stores = which === "both" ? ["postgres", "sqlite"] as const : [which as "postgres" | "sqlite"]
  const results: Array<FaultRunResult> = []
  for (const store of stores) {
    const result = await runStoreFault({
      store,
      outageMillis: Number(option("outage", "30")) * 1000,
      steadyMillis: Number(option("steady", "10")) * 1000,
      rate: Number(option("rate", "200")),
      log: (line) => console.error(`[${store}] ${line}`)
    })
    results.push(result)
    console.log(JSON.stringify(result, null, 2))
  }
  let ok = true
  for (const r of results) {
    const { messages: m, probes: p } = r
    console.log(
      `${r.store} (${
        r.outageMillis / 1000
      } s away): requests sent ${p.sent} / answered ${p.answered} / refused ${p.refused} / hung ${p.hung}; ` +
        `messages sent ${m.sent} / accepted ${m.accepted} / delivered ${m.delivered} / duplicates ${m.duplicates} / lost ${m.lost}` +
        ` (client gave up on ${m.refusedByServer}); server survived: ${r.serverSurvived}; readyz: ${
          r.readyReasons.join(",")
        }`
    )
    if (m.lost > 0 || p.hung > 0 || !r.serverSurvived || (r.clientStatuses["401"] ?? 0) > 0) ok = false
  }
  return ok
}

if (process.argv[1]?.endsWith("storeFaults.ts")) {
  runStoreFaults().then((ok) => process.exit(ok ? 0 : 1), (error) => {
    console.error(error)
    process.exit(1)
  })
}

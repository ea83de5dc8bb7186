import { afterEach, describe, expect, it } from "@effect/vitest"
import { freshSchema as freshSchemaOf, postgresUnavailable } from "../support/postgres.js"
import { admin, replicaHarness, replicaWriteKey, sleep, waitUntil } from "../support/replicas.js"
import { startBalancer, startSegmentLoad } from "../support/segmentLoad.js"
import type { ServerProcess } from "../support/serverProcess.js"
import { skipUnlessCi } from "../support/services.js"

/**
 * Fan-out at claim across one deployment (REFERENCE §1a): two replicas on one PostgreSQL schema behind a balancer,
 * the real Segment client's load, one source with three destinations. Each message is stored as one row; whichever
 * replica claims it makes the other two jobs and takes them: every receiver gets every message once, with the same
 * body, and every job the claims made is in the store, delivered.
 */

const skip = skipUnlessCi("ReplicaFanOut", await postgresUnavailable())

const harness = replicaHarness()
const { cleanup, replica } = harness
afterEach(harness.cleanUp)

/** The jobs a replica delivered, from its `hookrelay_jobs_delivered_total` (all labels). */
const deliveredBy = async (server: ServerProcess): Promise<number> => {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  return text.split("\n").filter((line) => /^hookrelay_jobs_delivered_total[ {]/.test(line))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0)
}

describe.skipIf(skip)("fan-out at claim on two replicas", () => {
  it("three destinations: each receives every message once, the same body, whichever replica claimed it", async () => {
    const { schema, sql, url } = await freshSchemaOf("fanout", "load", cleanup)
    const receivers = [await harness.receiver(20), await harness.receiver(20), await harness.receiver(20)]
    const a = await replica(url)
    const saved = await admin(a, "PUT", "/admin/sources/shop", {
      writeKey: replicaWriteKey,
      destinations: receivers.map((r, i) => ({ id: `d${i + 1}`, enabled: true, endpoints: [{ url: r.url }] }))
    })
    expect([200, 201]).toContain(saved.status)
    const b = await replica(url)
    const balancer = await startBalancer([a.url, b.url])
    cleanup.push(() => balancer.close())

    const load = startSegmentLoad({ hosts: [balancer.url], writeKey: replicaWriteKey, perSecond: 150, prefix: "fan" })
    cleanup.push(() => load.stop(1000))
    await sleep(6000)
    await load.stop()
    const ids = [...load.sent.keys()]
    const count = async (where: string) =>
      Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.jobs WHERE ${where}`)).rows[0]!.n)
    await waitUntil(
      () => receivers.every((r) => new Set(r.deliveries.map((d) => d.messageId)).size >= ids.length),
      "every message at every receiver",
      30_000
    ).catch(() => undefined)
    await waitUntil(async () => (await count("status <> 'delivered'")) === 0, "every job delivered", 12_000)
      .catch(() => undefined)

    const byReplica = [await deliveredBy(a), await deliveredBy(b)]
    console.log(
      `fan-out at claim on two replicas: ${ids.length} messages; deliveries ${
        receivers.map((r) => r.deliveries.length).join("/")
      }; delivered by each replica ${byReplica.join("/")}; answers ${JSON.stringify([...load.statuses])}`
    )
    // Both replicas claimed rows and made and delivered jobs: the jobs each delivered add up to every job.
    expect(byReplica.every((n) => n > 0)).toBe(true)
    expect(byReplica[0]! + byReplica[1]!).toBe(3 * ids.length)
    expect(load.failed).toStrictEqual([])
    expect(ids.length).toBeGreaterThan(300)
    for (const r of receivers) {
      const got = r.deliveries.map((d) => d.messageId).sort()
      expect(got).toStrictEqual([...ids].sort())
    }
    const bodies = receivers.map((r) => new Map(r.deliveries.map((d) => [d.messageId, d.body])))
    for (const id of ids) expect(new Set(bodies.map((of) => of.get(id))).size).toBe(1)
    expect(await count("true")).toBe(3 * ids.length)
    expect(await count("id LIKE '%.%'")).toBe(2 * ids.length)
    expect(await count("status <> 'delivered'")).toBe(0)
    expect(await count("fan_out IS NOT NULL")).toBe(0)
  }, 90_000)
})

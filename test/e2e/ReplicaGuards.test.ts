import { afterEach, describe, expect, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { freshSchema as freshSchemaOf, postgresUnavailable } from "../support/postgres.js"
import {
  putSource,
  type Receiver,
  replicaWriteKey,
  sleep,
  startReceiver,
  startReceiverProcess,
  startReplica,
  stopReplica,
  track,
  waitUntil
} from "../support/replicas.js"
import { postBatch, type ServerProcess } from "../support/serverProcess.js"
import { skipUnlessCi } from "../support/services.js"

/**
 * Rate limits and circuits for the deployment (docs/DEPLOYMENT.md): two or three server processes (`src/main.ts`) on
 * one PostgreSQL schema send an endpoint no more than its limit together, count its failures together, open its
 * circuit once (one operator event), probe it one at a time and resume together within 1 s of its recovery.
 */

const cleanup: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

const skipPg = skipUnlessCi("ReplicaGuards on PostgreSQL", await postgresUnavailable())

const freshSchema = (name: string) => freshSchemaOf("guards", name, cleanup)

const replicas = async (count: number, url: string, env: Record<string, string> = {}) => {
  const started = await Promise.all(Array.from({ length: count }, () => startReplica({ databaseUrl: url }, env)))
  for (const replica of started) cleanup.push(() => stopReplica(replica))
  return started
}

const receiverWith = async (status?: () => number): Promise<Receiver> => {
  const receiver = await startReceiver(0, status)
  cleanup.push(() => receiver.close())
  return receiver
}

/** The most of `times` (epoch ms) that any 1-second window holds. */
const busiestSecond = (times: ReadonlyArray<number>): number => {
  const sorted = [...times].sort((a, b) => a - b)
  let most = 0
  let from = 0
  for (let to = 0; to < sorted.length; to++) {
    while (sorted[to]! - sorted[from]! >= 1000) from++
    most = Math.max(most, to - from + 1)
  }
  return most
}

/** Tracks `ids` spread over the replicas, a few at a time. */
const trackAll = async (servers: ReadonlyArray<ServerProcess>, ids: ReadonlyArray<string>) => {
  for (let i = 0; i < ids.length; i += 8) {
    await Promise.all(ids.slice(i, i + 8).map((id, j) => track(servers[(i + j) % servers.length]!, id)))
  }
}

const delivered = (receiver: Receiver, prefix: string) =>
  new Set(
    receiver.deliveries.filter((delivery) => delivery.messageId.startsWith(prefix)).map((delivery) =>
      delivery.messageId
    )
  ).size

describe.skipIf(skipPg)("rate limits and circuits for the deployment on PostgreSQL", () => {
  for (const count of [2, 3]) {
    it(
      `${count} replicas send a 100/s endpoint at most 100 × 1.1 + 1 attempts in any second, and deliver all`,
      async () => {
        const { schema, sql, url } = await freshSchema(`rate${count}`)
        // Its arrival times are taken in a process of its own, where nothing holds them back.
        const receiver = await startReceiverProcess()
        cleanup.push(() => receiver.close())
        const servers = await replicas(count, url)
        await putSource(servers[0]!, receiver.url, { rateLimit: { perSecond: 100 } })
        const messages = 500
        const ids = Array.from({ length: messages }, (_, index) => `rate-${index}`)
        const startedAt = Date.now()
        // A few batches, one to each replica.
        for (let i = 0; i < messages; i += 100) {
          const batch = ids.slice(i, i + 100).map((messageId) => ({
            type: "track",
            userId: "u",
            event: "Rate",
            messageId
          }))
          expect(await postBatch(servers[(i / 100) % count]!.url, replicaWriteKey, batch)).toBe(200)
        }
        await waitUntil(() => delivered(receiver, "rate-") === messages, "every message delivered", 30_000)
        const took = Date.now() - startedAt
        const attempts = async () =>
          (await sql.query<{ started_at: string }>(`SELECT started_at FROM ${schema}.attempts WHERE url = $1`, [
            receiver.url
          ])).rows
        // Attempts are written in batches, a little after their deliveries.
        await waitUntil(async () => (await attempts()).length >= messages, "every attempt recorded", 10_000)
        const starts = (await attempts()).map((row) => Number(row.started_at))
        const arrivals = receiver.deliveries.map((delivery) => delivery.at)
        console.log(
          `${count} replicas at 100/s: ${messages} delivered in ${took} ms; busiest second ${busiestSecond(starts)} ` +
            `attempt starts (store), ${busiestSecond(arrivals)} arrivals (receiver)`
        )
        expect(starts.length).toBeGreaterThanOrEqual(messages)
        expect(busiestSecond(starts)).toBeLessThanOrEqual(111)
        expect(busiestSecond(arrivals)).toBeLessThanOrEqual(111)
        // The limit was the bottleneck: 500 at 100/s take over 4 s (N × 100/s would take under 2.5 s).
        expect(took).toBeGreaterThan(4_000)
      },
      60_000
    )
  }

  it(
    "a receiver down: the circuit opens once, one probe at a time, held jobs resume everywhere within 1 s",
    async () => {
      const { schema, sql, url } = await freshSchema("circuit")
      let down = true
      const receiver = await receiverWith(() => (down ? 500 : 200))
      const operator = await receiverWith()
      const secret = `whsec_${randomBytes(32).toString("base64")}`
      const servers = await replicas(2, url, {
        HOOKRELAY_OPERATOR_WEBHOOK: operator.url,
        HOOKRELAY_OPERATOR_WEBHOOK_SECRET: secret
      })
      await putSource(servers[0]!, receiver.url, { circuit: { failureThreshold: 5 } })
      const events = () => operator.deliveries.map((delivery) => (JSON.parse(delivery.body) as { type: string }).type)
      const arrivedAt = (type: string) =>
        operator.deliveries.find((delivery) => (JSON.parse(delivery.body) as { type: string }).type === type)?.at

      await trackAll(servers, Array.from({ length: 12 }, (_, index) => `fail-${index}`))
      await waitUntil(() => events().includes("endpoint.circuit_opened"), "the circuit opened", 15_000)
      const openedAt = arrivedAt("endpoint.circuit_opened")!
      // Jobs that arrive while it is open are held by every replica, not attempted.
      await trackAll(servers, Array.from({ length: 20 }, (_, index) => `held-${index}`))
      // Both replicas hold jobs of the endpoint (claimed, leased, waiting for the circuit).
      const holders = async () =>
        Number(
          (await sql.query<{ owners: string }>(
            `SELECT count(DISTINCT lease_owner)::text AS owners FROM ${schema}.jobs
           WHERE status = 'delivering'`
          )).rows[0]?.owners ?? 0
        )
      await waitUntil(async () => (await holders()) === 2, "both replicas hold jobs", 5_000)
      // The first probe (5 s after the opening) fails; the next, 10 s later, finds the receiver up.
      await waitUntil(
        () => receiver.deliveries.some((delivery) => delivery.at > openedAt + 2_000),
        "the first probe",
        15_000
      )
      const firstProbe = receiver.deliveries.find((delivery) => delivery.at > openedAt + 2_000)!
      await sleep(300)
      down = false
      await waitUntil(() => events().includes("endpoint.recovered"), "the recovery", 20_000)
      const secondProbe = receiver.deliveries.find((delivery) => delivery.at > firstProbe.at + 1_000)!
      await waitUntil(() => delivered(receiver, "held-") === 20, "every held job delivered", 10_000)
      const lastHeld = Math.max(
        ...receiver.deliveries.filter((delivery) => delivery.messageId.startsWith("held-")).map((delivery) =>
          delivery.at
        )
      )
      await waitUntil(() => delivered(receiver, "fail-") === 12, "every failed job delivered", 20_000)
      await sleep(1_000)
      const whileOpen = receiver.deliveries.filter((delivery) =>
        delivery.at > openedAt + 500 && delivery.at < secondProbe.at
      )
      console.log(
        `circuit: opened, probes at +${firstProbe.at - openedAt} ms and +${secondProbe.at - openedAt} ms, ` +
          `held jobs all delivered ${lastHeld - secondProbe.at} ms after the successful probe; events ${
            events().join(", ")
          }`
      )
      // One operator event each for the deployment, not one per replica.
      expect(events().filter((type) => type === "endpoint.circuit_opened")).toHaveLength(1)
      expect(events().filter((type) => type === "endpoint.recovered")).toHaveLength(1)
      // While open, only the one probe reached the receiver (from either replica), and it came after the cool-off.
      expect(whileOpen).toHaveLength(1)
      expect(firstProbe.at - openedAt).toBeGreaterThan(3_500)
      expect(secondProbe.at - firstProbe.at).toBeGreaterThan(8_000)
      expect(lastHeld - secondProbe.at).toBeLessThan(1_000)
    },
    60_000
  )
})

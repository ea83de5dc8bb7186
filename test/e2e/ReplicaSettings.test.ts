import { afterEach, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { freshSchema as freshSchemaOf, postgresUnavailable } from "../support/postgres.js"
import {
  admin,
  type Delivery,
  putSource,
  type Receiver,
  rotate,
  signedWith,
  sleep,
  startReceiver,
  startReplica,
  stopReplica,
  track,
  waitUntil
} from "../support/replicas.js"
import type { ServerProcess } from "../support/serverProcess.js"
import { skipUnlessCi } from "../support/services.js"

/**
 * One deployment (docs/DEPLOYMENT.md): an admin write applies to the next delivery of the replica that answered it
 * and within 1 s on the others, and a replica killed while it holds leases has its jobs delivered by another within
 * 15 s with the default lease. Real server processes (`src/main.ts`), on SQLite and on one PostgreSQL schema.
 */

const cleanup: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

const replica = async (store: Parameters<typeof startReplica>[0]): Promise<ServerProcess> => {
  const started = await startReplica(store)
  cleanup.push(() => stopReplica(started))
  return started
}

const receiverWith = async (delayMillis = 0): Promise<Receiver> => {
  const receiver = await startReceiver(delayMillis)
  cleanup.push(() => receiver.close())
  return receiver
}

const deliveryOf = (receiver: Receiver, messageId: string): Delivery | undefined =>
  receiver.deliveries.find((delivery) => delivery.messageId === messageId)

/** Tracks `messageId` on `server` and waits for its delivery. */
const delivered = async (server: ServerProcess, receiver: Receiver, messageId: string): Promise<Delivery> => {
  await track(server, messageId)
  await waitUntil(() => deliveryOf(receiver, messageId) !== undefined, `${messageId} delivered`)
  return deliveryOf(receiver, messageId)!
}

describe("settings at once, one process on SQLite", () => {
  it("a rotation signs the very next delivery with the new secret too", async () => {
    const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-replicas-"))
    cleanup.push(() => rmSync(directory, { recursive: true, force: true }))
    const receiver = await receiverWith()
    const server = await replica({ dataDirectory: directory })
    const first = await putSource(server, receiver.url)
    // The dispatcher has read the source (and keeps it) before each rotation.
    expect(signedWith(first, await delivered(server, receiver, "warm"))).toBe(true)
    const secrets = [first]
    for (let round = 1; round <= 3; round++) {
      secrets.push(await rotate(server))
      const next = await delivered(server, receiver, `after-rotation-${round}`)
      expect(next.signatures).toHaveLength(secrets.length)
      for (const secret of secrets) expect(signedWith(secret, next)).toBe(true)
    }
  })
})

const skipPg = skipUnlessCi("ReplicaSettings on PostgreSQL", await postgresUnavailable())

const freshSchema = (name: string) => freshSchemaOf("replicas", name, cleanup)

describe.skipIf(skipPg)("one deployment of replicas on PostgreSQL", () => {
  it("a rotation on A signs A's next delivery with the new secret, and every delivery from 1 s on", async () => {
    const { url } = await freshSchema("rotate")
    const receiver = await receiverWith()
    const a = await replica({ databaseUrl: url })
    const first = await putSource(a, receiver.url)
    expect(signedWith(first, await delivered(a, receiver, "a-warm"))).toBe(true)
    const second = await rotate(a)
    // A alone delivers: its next delivery carries both signatures.
    const next = await delivered(a, receiver, "a-after-rotation")
    expect(signedWith(second, next) && signedWith(first, next)).toBe(true)

    const b = await replica({ databaseUrl: url })
    // Both replicas ingest and deliver (each claims what it and the other ingested) right up to the rotation.
    let sending = true
    let sent = 0
    const load = (async () => {
      while (sending) {
        await track(sent % 2 === 0 ? a : b, `load-${sent}`)
        sent += 1
        await sleep(20)
      }
    })()
    await sleep(1500)
    const third = await rotate(a)
    const answeredAt = Date.now()
    await sleep(2500)
    sending = false
    await load
    await waitUntil(() => new Set(receiver.deliveries.map((delivery) => delivery.messageId)).size >= sent + 2, "all")
    const afterAnswer = receiver.deliveries.filter((delivery) => delivery.at >= answeredAt)
    const stale = afterAnswer.filter((delivery) => !signedWith(third, delivery))
    const lag = stale.length === 0 ? 0 : Math.max(...stale.map((delivery) => delivery.at - answeredAt))
    console.log(`settings lag on the other replica: ${lag} ms (${stale.length} of ${afterAnswer.length} stale)`)
    expect(afterAnswer.length).toBeGreaterThan(50)
    expect(lag).toBeLessThan(1000)
  }, 60_000)

  it("an endpoint disabled on A gets nothing from either replica from 1 s after the answer on", async () => {
    const { url } = await freshSchema("disable")
    const receiver = await receiverWith()
    const a = await replica({ databaseUrl: url })
    await putSource(a, receiver.url)
    const b = await replica({ databaseUrl: url })
    await delivered(b, receiver, "b-warm")
    let sending = true
    let sent = 0
    const load = (async () => {
      while (sending) {
        await track(sent % 2 === 0 ? a : b, `disable-load-${sent}`)
        sent += 1
        await sleep(20)
      }
    })()
    await sleep(1500)
    const disabled = await admin(a, "POST", "/admin/endpoints/disable", {
      sourceId: "shop",
      destinationId: "webhooks",
      url: receiver.url
    })
    const answeredAt = Date.now()
    expect(disabled.status).toBe(200)
    await sleep(3000)
    sending = false
    await load
    const before = receiver.deliveries.filter((delivery) => delivery.at < answeredAt)
    const late = receiver.deliveries.filter((delivery) => delivery.at >= answeredAt + 1000)
    console.log(
      `deliveries after the disable: ${receiver.deliveries.length - before.length}, from 1 s on: ${late.length}`
    )
    // Both replicas were delivering up to the disable, and neither sends it anything from 1 s on.
    expect(before.length).toBeGreaterThan(20)
    expect(late).toEqual([])
  }, 60_000)

  it(
    "SIGKILL one of two replicas holding leases: with the default lease, its jobs are delivered within 15 s",
    async () => {
      const { schema, sql, url } = await freshSchema("takeover")
      // Slow answers keep jobs leased and requests in flight on both replicas when one dies.
      const receiver = await receiverWith(400)
      const a = await replica({ databaseUrl: url })
      await putSource(a, receiver.url)
      const b = await replica({ databaseUrl: url })
      const messages = 80
      for (let i = 0; i < messages; i++) await track(i % 2 === 0 ? a : b, `takeover-${i}`)
      const leased = async () =>
        (await sql.query<{ owner: string; id: string }>(
          `SELECT lease_owner AS owner, id FROM ${schema}.jobs WHERE status = 'delivering'`
        )).rows
      await waitUntil(async () => new Set((await leased()).map((row) => row.owner)).size === 2, "both holding leases")
      a.child.kill("SIGKILL")
      const killedAt = Date.now()
      expect(await a.exited).toBe("SIGKILL")
      const held = (await leased()).map((row) => row.id)
      expect(held.length).toBeGreaterThan(0)
      const undelivered = async () =>
        Number(
          (await sql.query<{ count: string }>(
            `SELECT count(*) AS count FROM ${schema}.jobs WHERE id = ANY($1) AND status <> 'delivered'`,
            [held]
          )).rows[0]!.count
        )
      await waitUntil(async () => (await undelivered()) === 0, "the jobs leased at the kill delivered", 30_000)
      const takeover = Date.now() - killedAt
      console.log(`takeover: the ${held.length} jobs leased at the kill delivered ${takeover} ms after it`)
      expect(takeover).toBeLessThanOrEqual(15_000)
      // Nothing lost.
      await waitUntil(
        () => new Set(receiver.deliveries.map((delivery) => delivery.messageId)).size === messages,
        "every message delivered"
      )
    },
    60_000
  )
})

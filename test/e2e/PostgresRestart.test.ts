import { afterEach, describe, expect, it } from "@effect/vitest"
import { type PgCluster, pgClusterUnavailable, startPgCluster } from "../support/pgCluster.js"
import { connectSql } from "../support/postgres.js"
import {
  putSource,
  type Receiver,
  replicaWriteKey,
  rotate,
  signedWith,
  sleep,
  startReceiver,
  startReplica,
  stopReplica,
  track,
  waitUntil
} from "../support/replicas.js"
import { startSegmentLoad } from "../support/segmentLoad.js"
import type { ServerProcess } from "../support/serverProcess.js"
import { skipUnlessCi } from "../support/services.js"

/**
 * One deployment, two replicas on a PostgreSQL that restarts under load (docs/DEPLOYMENT.md): the real Segment client
 * loses nothing, is never told its write key is unknown while the store is away (a 401 makes analytics-node drop the
 * batch for good; a 503 it retries), every job ends marked delivered in the outbox (a completion lost with its
 * connection would stay leased), and both replicas are healthy afterwards. The database is a cluster of the test's
 * own, as the machine's is shared with the other tests; its tests run one at a time (one file, sequential).
 */

const skip = skipUnlessCi("PostgresRestart", pgClusterUnavailable())

const cleanup: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

const cluster = async (): Promise<PgCluster> => {
  const started = await startPgCluster()
  cleanup.push(() => started.destroy())
  return started
}

const replica = async (databaseUrl: string): Promise<ServerProcess> => {
  const started = await startReplica({ databaseUrl })
  cleanup.push(() => stopReplica(started))
  return started
}

const receiverWith = async (): Promise<Receiver> => {
  const receiver = await startReceiver()
  cleanup.push(() => receiver.close())
  return receiver
}

const ready = async (server: ServerProcess) => {
  const response = await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(2000) })
  await response.arrayBuffer()
  return response.status
}

describe.skipIf(skip)("PostgreSQL restarted under load, two replicas", () => {
  it("every message delivered, no 401, both replicas healthy after", async () => {
    const pg = await cluster()
    const receiver = await receiverWith()
    // One at a time: the first runs the migrations.
    const a = await replica(pg.url)
    await putSource(a, receiver.url)
    const b = await replica(pg.url)

    const load = startSegmentLoad({ hosts: [a.url, b.url], writeKey: replicaWriteKey, perSecond: 100, prefix: "pg" })
    cleanup.push(() => load.stop(1000))
    await sleep(8000)
    const restart = await pg.restart()
    await sleep(12_000)
    await load.stop()

    const ids = [...load.sent.keys()]
    const received = () => new Set(receiver.deliveries.map((delivery) => delivery.messageId))
    await waitUntil(() => received().size >= ids.length, "every message delivered", 20_000).catch(() => undefined)
    // And the outbox knows it: every job marked delivered, none left leased (a completion lost in the restart would be).
    const sql = await connectSql(pg.url)
    cleanup.push(() => sql.end())
    const unfinished = async () =>
      (await sql.query<{ status: string; count: string }>(
        "SELECT status, count(*) AS count FROM jobs WHERE status <> 'delivered' GROUP BY status"
      )).rows.map((row) => `${row.status} ${row.count}`)
    await waitUntil(async () => (await unfinished()).length === 0, "every job marked delivered", 12_000)
      .catch(() => undefined)
    const notFinished = await unfinished()
    const distinct = received()
    const missing = ids.filter((id) => !distinct.has(id))
    const duplicates = receiver.deliveries.length - distinct.size

    // What the restart cost: the first delivery, once PostgreSQL accepted connections again, of a message tracked
    // after that; the longest silence at the receiver; and for each message delivered twice, when its first copy came
    // (from the restart's start) and its second (after the first).
    const firstAfter = receiver.deliveries.find((delivery) =>
      delivery.at >= restart.ready && (load.sent.get(delivery.messageId) ?? 0) >= restart.ready
    )
    const times = receiver.deliveries.map((delivery) => delivery.at).sort((x, y) => x - y)
    const gap = times.slice(1).reduce((longest, at, i) => Math.max(longest, at - times[i]!), 0)
    const copies = new Map<string, Array<number>>()
    for (const delivery of receiver.deliveries) {
      copies.set(delivery.messageId, [...(copies.get(delivery.messageId) ?? []), delivery.at])
    }
    const twice = [...copies.values()].filter((at) => at.length > 1)
      .map((at) => `${at[0]! - restart.began}+${at[1]! - at[0]!}`)
    const firstAfterMillis = firstAfter === undefined ? "none" : String(firstAfter.at - restart.ready)
    console.log(
      `PostgreSQL restart under load: ${ids.length} messages, restart took ${restart.ready - restart.began} ms;`,
      `first delivery of a message tracked after it ${firstAfterMillis} ms after it was back;`,
      `longest silence at the receiver ${gap} ms; answers ${JSON.stringify([...load.statuses])};`,
      `deliveries ${receiver.deliveries.length}, duplicates ${duplicates} (ms ${twice.join(" ")}),`,
      `missing ${missing.length}, given up by the clients ${load.failed.length};`,
      `jobs not marked delivered ${JSON.stringify(notFinished)}`
    )
    if (duplicates > 0 || notFinished.length > 0) {
      // What the replicas said about the store, to tell where the jobs delivered twice (or not marked) came from.
      for (const [name, server] of [["A", a], ["B", b]] as const) {
        const said = server.output().split("\n").filter((line) => !line.includes("\"level\":\"INFO\""))
        console.log(`replica ${name}:\n${said.map((line) => line.slice(0, 600)).join("\n")}`)
      }
    }
    expect(load.statuses.get(401) ?? 0).toBe(0)
    expect(load.failed).toStrictEqual([])
    expect(missing).toStrictEqual([])
    expect(notFinished).toStrictEqual([])
    // A store away is a 503 (retried), not a 500 nor anything the client would drop.
    expect([...load.statuses.keys()].filter((status) => status !== 200 && status !== 503)).toStrictEqual([])
    // Both replicas lived through it and answer ready on the restarted database.
    expect(a.child.exitCode).toBeNull()
    expect(b.child.exitCode).toBeNull()
    expect(await ready(a)).toBe(200)
    expect(await ready(b)).toBe(200)

    // Settings still travel between them: a rotation on A signs what either delivers once B's poll has seen it.
    const secret = await rotate(a)
    await sleep(1500)
    const after = Array.from({ length: 10 }, (_, i) => `after-restart-${i}`)
    for (const [i, id] of after.entries()) await track(i % 2 === 0 ? a : b, id)
    await waitUntil(() => after.every((id) => received().has(id)), "the messages after the rotation delivered")
    const unsigned = receiver.deliveries.filter((delivery) => after.includes(delivery.messageId))
      .filter((delivery) => !signedWith(secret, delivery))
    expect(unsigned).toStrictEqual([])
  }, 100_000)
})

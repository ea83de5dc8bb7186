/**
 * Chaos run (REFERENCE §4 at-least-once, §8): the real server (`src/main.ts`, SQLite in a temp directory) under steady
 * load, SIGKILLed and restarted 5 times, while its two webhook receivers flap between 200, 500, hanging and
 * destroying the connection. Then the receivers answer 200 until every accepted message is delivered or a deadline
 * passes. Prints accepted / delivered / duplicates / lost and exits 1 if anything accepted was lost.
 * Loopback only; stops by itself in about 2 minutes.
 *
 *   npx tsx bench/chaos.ts            (CHAOS_SEED=<n> for another flapping schedule)
 *   npx tsx bench/chaos.ts --store-faults   (the store stopped / its disk filled under load: bench/storeFaults.ts)
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { basicAuth, type ServerProcess, startServerProcess } from "../test/support/serverProcess.js"
import { sleep } from "./support/processes.js"

const kills = 5
/** How long the server runs under load between two SIGKILLs (restarts take a few seconds more each). */
const uptimeMillis = 7_000
const drainDeadlineMillis = 100_000
const batchSize = 20
const concurrentPosters = 3
const postPauseMillis = 40

type Mode = "ok" | "fail" | "hang" | "destroy"
// One cycle of a receiver's flapping: mostly up, then 500s, then no answer (hang), then connections destroyed.
const cycle: ReadonlyArray<readonly [Mode, number]> = [["ok", 2500], ["fail", 800], ["hang", 800], ["destroy", 500]]
const cycleMillis = cycle.reduce((sum, [, millis]) => sum + millis, 0)

interface Receiver {
  readonly name: string
  readonly url: string
  /** messageId → times this receiver answered 200 for it. */
  readonly delivered: Map<string, number>
  readonly answers: Record<Mode, number>
  mode: () => Mode
  readonly close: () => Promise<void>
}

const messageIdOf = (body: string): string | undefined => /"messageId":"([^"]*)"/.exec(body)?.[1]

const startReceiver = (name: string, mode: () => Mode): Promise<Receiver> =>
  new Promise((resolve) => {
    const delivered = new Map<string, number>()
    const answers: Record<Mode, number> = { ok: 0, fail: 0, hang: 0, destroy: 0 }
    const hung = new Set<ServerResponse>()
    const receiver = {} as Receiver
    const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const current = receiver.mode()
        answers[current] += 1
        if (current === "ok") {
          const id = messageIdOf(Buffer.concat(chunks).toString("utf8"))
          if (id !== undefined) delivered.set(id, (delivered.get(id) ?? 0) + 1)
          response.writeHead(200, { "content-type": "text/plain" }).end("ok")
        } else if (current === "fail") {
          response.writeHead(500, { "content-type": "text/plain" }).end("chaos")
        } else if (current === "hang") {
          hung.add(response)
          response.on("close", () => hung.delete(response))
        } else {
          request.socket.destroy()
        }
      })
    })
    server.listen(0, "127.0.0.1", () => {
      Object.assign(receiver, {
        name,
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        delivered,
        answers,
        mode,
        close: () =>
          new Promise<void>((done) => {
            for (const response of hung) response.destroy()
            server.closeAllConnections()
            server.close(() => done())
          })
      })
      resolve(receiver)
    })
  })

const flapping = (offsetMillis: number, startedAt: number) => (): Mode => {
  let at = (Date.now() - startedAt + offsetMillis) % cycleMillis
  for (const [mode, millis] of cycle) {
    if (at < millis) return mode
    at -= millis
  }
  return "ok"
}

const main = async () => {
  const seed = Number(process.env.CHAOS_SEED ?? 0)
  const runId = randomBytes(4).toString("hex")
  const directory = mkdtempSync(join(tmpdir(), "hookrelay-chaos-"))
  const startedAt = Date.now()
  let draining = false
  const modeOf = (offset: number) => {
    const flap = flapping(offset + seed * 997, startedAt)
    return (): Mode => (draining ? "ok" : flap())
  }
  const receivers = [await startReceiver("a", modeOf(0)), await startReceiver("b", modeOf(cycleMillis / 2))]
  // One source per receiver, one URL each: a job is delivered by exactly one receiver, so a second 200 for the
  // same message id is a real duplicate (a redelivery), not the fan-out of a job to several URLs.
  const writeKeys = receivers.map((receiver) => `wk_chaos_${runId}_${receiver.name}`)
  const configFile = join(directory, "config.json")
  writeFileSync(
    configFile,
    JSON.stringify({
      sources: receivers.map((receiver, i) => ({
        id: `chaos-${receiver.name}`,
        writeKey: writeKeys[i],
        webhooks: { enabled: true, sharedSecret: "chaos-secret", endpoints: [{ url: receiver.url }] }
      }))
    })
  )
  const env = {
    DATABASE_URL: "",
    HOOKRELAY_DATA_DIR: join(directory, "data"),
    HOOKRELAY_CONFIG: configFile,
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true"
  }

  let server: ServerProcess | undefined
  const logs: Array<string> = []
  const start = async () => {
    server = await startServerProcess(env)
  }
  const killServer = async () => {
    const current = server
    server = undefined
    if (current === undefined) return
    current.child.kill("SIGKILL")
    await current.exited
    logs.push(current.output())
  }

  const accepted = new Set<string>()
  const refused = { answers: 0, connections: 0 }
  let seq = 0
  let batches = 0
  let loading = true
  const poster = async () => {
    while (loading) {
      const current = server
      if (current === undefined) {
        await sleep(50)
        continue
      }
      const ids = Array.from({ length: batchSize }, () => `chaos-${runId}-${seq++}`)
      const writeKey = writeKeys[batches++ % writeKeys.length]!
      try {
        const response = await fetch(`${current.url}/v1/batch`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: basicAuth(writeKey) },
          body: JSON.stringify({
            batch: ids.map((messageId) => ({ type: "track", userId: "chaos-user", event: "Chaos", messageId }))
          }),
          signal: AbortSignal.timeout(10_000)
        })
        await response.arrayBuffer()
        if (response.status === 200) { for (const id of ids) accepted.add(id) }
        else refused.answers += 1
      } catch {
        // Killed mid-request: the batch may or may not be stored; it is not counted as accepted.
        refused.connections += 1
      }
      await sleep(postPauseMillis)
    }
  }

  try {
    await start()
    console.log(
      `chaos: server up (${server!.url}); load with a SIGKILL after every ${uptimeMillis / 1000} s up, ${kills} times`
    )
    const posters = Array.from({ length: concurrentPosters }, () => poster())
    for (let kill = 1; kill <= kills; kill++) {
      await sleep(uptimeMillis)
      await killServer()
      console.log(
        `chaos: SIGKILL ${kill}/${kills} at ${
          ((Date.now() - startedAt) / 1000).toFixed(1)
        } s (accepted so far ${accepted.size})`
      )
      await start()
    }
    await sleep(uptimeMillis)
    loading = false
    console.log(
      `chaos: load stopped at ${((Date.now() - startedAt) / 1000).toFixed(1)} s; receivers answer 200 from now on`
    )
    await Promise.all(posters)

    draining = true
    const drainStart = Date.now()
    const deliveredIds = () => {
      let count = 0
      for (const id of accepted) if (receivers.some((receiver) => receiver.delivered.has(id))) count += 1
      return count
    }
    while (deliveredIds() < accepted.size && Date.now() - drainStart < drainDeadlineMillis) await sleep(250)
    const drainMillis = Date.now() - drainStart

    let delivered = 0
    let duplicates = 0
    let unacknowledged = 0
    const lost: Array<string> = []
    const times = new Map<string, number>()
    for (const receiver of receivers) {
      for (const [id, count] of receiver.delivered) times.set(id, (times.get(id) ?? 0) + count)
    }
    for (const [id, count] of times) {
      duplicates += count - 1
      if (!accepted.has(id)) unacknowledged += 1
    }
    for (const id of accepted) {
      if (times.has(id)) delivered += 1
      else lost.push(id)
    }
    const answers = receivers.map((receiver) =>
      `${receiver.name}: ${Object.entries(receiver.answers).map(([mode, n]) => `${mode} ${n}`).join(", ")}`
    )
    console.log(`chaos: receivers answered — ${answers.join("; ")}`)
    console.log(
      `chaos: ingest requests refused ${refused.answers} (non-200 answers), ${refused.connections} (connection lost)`
    )
    console.log(
      `chaos: drained in ${(drainMillis / 1000).toFixed(1)} s; total ${((Date.now() - startedAt) / 1000).toFixed(1)} s`
    )
    console.log(`accepted ${accepted.size}`)
    console.log(`delivered ${delivered}`)
    console.log(`duplicates ${duplicates}`)
    console.log(`lost ${lost.length}`)
    console.log(`(delivered though never acknowledged to the client: ${unacknowledged})`)
    if (lost.length > 0) {
      console.log(`lost message ids (first 20): ${lost.slice(0, 20).join(", ")}`)
      console.log(`server output of the last run (tail):\n${(server?.output() ?? logs.at(-1) ?? "").slice(-4000)}`)
    }
    return lost.length === 0 ? 0 : 1
  } finally {
    loading = false
    if (server !== undefined) {
      server.child.kill("SIGTERM")
      await Promise.race([server.exited, sleep(10_000)])
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
    }
    await Promise.all(receivers.map((receiver) => receiver.close()))
    rmSync(directory, { recursive: true, force: true })
  }
}

// `--store-faults`: the store taken away under load instead (bench/storeFaults.ts).
const run = process.argv.includes("--store-faults")
  ? () => import("./storeFaults.js").then(({ runStoreFaults }) => runStoreFaults()).then((ok) => (ok ? 0 : 1))
  : main

run().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error("chaos: failed", error)
    process.exit(2)
  }
)

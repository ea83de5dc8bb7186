import { describe, expect, it } from "@effect/vitest"
import {
  forkChild,
  outageDirectory,
  restartableServer,
  sleep,
  stablePort,
  startReceiver,
  waitUntil,
  within
} from "../support/outageProcesses.js"

/**
 * The client through a server restart (issue 52's scenario), each part in a real process: the hookrelay server on
 * SQLite, stopped and started again on the same data and port; the client with its defaults in a child process
 * (test/client/child/outage.ts) making 500 calls a second for 40 s; a receiver here counting deliveries by message id.
 */

const writeKey = "wk_client_outage_01"
const rate = 500
const calls = 20_000
const stopAt = 8_000
const restartAt = 38_000

interface Done {
  readonly made: number
  readonly closeMillis: number
  readonly outcomes: Record<string, Array<string>>
  readonly unnamed: Array<string>
  readonly statuses: Array<string>
}

type OnTestFinished = (step: () => void) => void

/**
 * Runs the scenario: the server is stopped with `signal` at +8 s and started again at +38 s (or as soon as the client
 * has closed, with `close`); answers what the client reported and the receiver's counts.
 */
const runOutage = async (
  onTestFinished: OnTestFinished,
  signal: "SIGTERM" | "SIGKILL",
  close?: { readonly at: number; readonly timeout: number }
) => {
  const cleanup: Array<() => void> = []
  onTestFinished(() => {
    for (const step of cleanup.splice(0).reverse()) step()
  })
  const receiverPort = await stablePort()
  const directory = outageDirectory("hookrelay-outage-", writeKey, receiverPort)
  cleanup.push(directory.remove)
  const receiver = await startReceiver(receiverPort)
  cleanup.push(() => receiver.server.close())
  const server = restartableServer(await stablePort(), directory.env)
  cleanup.push(server.kill)
  await server.start()

  const client = forkChild("test/client/child/outage.ts", {
    HOOKRELAY_ENDPOINT: server.url,
    WRITE_KEY: writeKey,
    OUTAGE_RATE: String(rate),
    OUTAGE_CALLS: String(calls),
    ...(close && { OUTAGE_CLOSE_AT_MS: String(close.at), OUTAGE_CLOSE_TIMEOUT_MS: String(close.timeout) })
  })
  cleanup.push(() => client.child.kill("SIGKILL"))
  await client.next("ready")
  const go = Date.now()
  // The client reports once its close has resolved: by the close's timeout after the calls stop, or by the default
  // close timeout (30 s) after the last call; 15 s more for a loaded machine.
  const reportBy = close !== undefined ? close.at + close.timeout + 15_000 : calls / rate * 1000 + 45_000
  const reported = within(
    client.next<Done>("done"),
    go + reportBy,
    () => `the client's report, close() resolved, by +${reportBy} ms; its output:\n${client.output().slice(-4000)}`
  )
  reported.catch(() => undefined) // awaited below; not an unhandled rejection meanwhile
  client.child.send({ type: "go" })

  await sleep(stopAt - (Date.now() - go))
  const exit = await server.stop(signal)
  expect(exit).toBe(signal === "SIGTERM" ? 0 : "SIGKILL")
  if (close !== undefined) await reported
  else await sleep(restartAt - (Date.now() - go))
  const readyAt = await server.start()
  const report = await reported
  expect(await client.exited).toBe(0)
  console.log(
    `client outage (${signal}${close ? `, close at +${close.at} ms` : ""}): ${report.made} calls, close took ` +
      `${report.closeMillis} ms, restart ready at +${readyAt - go} ms; ${report.statuses.join(", ")}`
  )
  return { report, receiver }
}

/** Each id's outcomes, for the ids that did not hear exactly `expected` (at most 10 shown). */
const unexpected = (report: Done, expected: (outcomes: ReadonlyArray<string>) => boolean) => {
  const wrong: Array<[string, ReadonlyArray<string>]> = []
  for (let i = 0; i < report.made; i++) {
    const id = `outage-${i}`
    const heard = report.outcomes[id] ?? []
    if (!expected(heard)) wrong.push([id, heard])
  }
  return { count: wrong.length, first: wrong.slice(0, 10) }
}

const tally = (report: Done) => {
  const counts: Record<string, number> = {}
  for (const heard of Object.values(report.outcomes)) {
    for (const what of heard) counts[what] = (counts[what] ?? 0) + 1
  }
  return counts
}

const receiverHasAll = async (receiver: { deliveries: Map<string, number> }, ids: ReadonlyArray<string>) => {
  await waitUntil(() => ids.every((id) => receiver.deliveries.has(id)), `${ids.length} ids at the receiver`, 120_000)
    .catch(() => undefined)
  return ids.filter((id) => !receiver.deliveries.has(id))
}

const allIds = Array.from({ length: calls }, (_, i) => `outage-${i}`)
const onlySuccess = (heard: ReadonlyArray<string>) => heard.length === 1 && heard[0] === "Success"

// Each test has its own directory, ports and processes and mostly waits for them: the three run side by side.
describe.concurrent("client through a server outage (real processes)", () => {
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    it(
      `server stopped with ${signal} at +8 s, started again at +38 s: every call succeeds once, all are delivered`,
      async ({
        onTestFinished
      }) => {
        const { receiver, report } = await runOutage(onTestFinished, signal)
        expect(report.made).toBe(calls)
        expect(report.unnamed).toStrictEqual([])
        expect({ tally: tally(report), unexpected: unexpected(report, onlySuccess) }).toStrictEqual({
          tally: { Success: calls },
          unexpected: { count: 0, first: [] }
        })
        expect(await receiverHasAll(receiver, allIds)).toStrictEqual([])
      },
      240_000
    )
  }

  it(
    "close({ timeout: 5000 }) at +20 s, in the outage: resolves by its timeout, the rest reported Failure Closed",
    async ({
      onTestFinished
    }) => {
      const close = { at: 20_000, timeout: 5_000 }
      const { receiver, report } = await runOutage(onTestFinished, "SIGTERM", close)
      expect(report.closeMillis).toBeLessThanOrEqual(close.timeout + 2_000)
      expect(report.made).toBeGreaterThan(rate * (stopAt / 1000))
      expect(report.unnamed).toStrictEqual([])
      const oneOutcome = (heard: ReadonlyArray<string>) =>
        heard.length === 1 && (heard[0] === "Success" || heard[0] === "Failure:Closed")
      expect(unexpected(report, oneOutcome)).toStrictEqual({ count: 0, first: [] })
      const counts = tally(report)
      // Calls made in the outage's 12 s were still queued when the close timed out.
      expect(counts["Failure:Closed"]).toBeGreaterThanOrEqual(rate * 10)
      // What the client called delivered was accepted: the restarted server delivers it.
      const succeeded = Object.keys(report.outcomes).filter((id) => report.outcomes[id]![0] === "Success")
      expect(succeeded.length).toBeGreaterThan(0)
      expect(await receiverHasAll(receiver, succeeded)).toStrictEqual([])
    },
    240_000
  )
})

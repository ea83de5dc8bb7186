// A web service's traffic through the client with its defaults: OUTAGE_CALLS un-awaited track calls at OUTAGE_RATE a
// second, each with its own messageId, from the parent's "go". Then close() (with OUTAGE_CLOSE_TIMEOUT_MS when
// OUTAGE_CLOSE_AT_MS stops the calls early). Reports every outcome heard per messageId to the parent over IPC.
import { createClient } from "../../../src/client/index.js"

const rate = Number(process.env.OUTAGE_RATE ?? 500)
const calls = Number(process.env.OUTAGE_CALLS ?? 20_000)
const closeAt = process.env.OUTAGE_CLOSE_AT_MS === undefined ? undefined : Number(process.env.OUTAGE_CLOSE_AT_MS)
const closeTimeout = Number(process.env.OUTAGE_CLOSE_TIMEOUT_MS ?? 30_000)

/** messageId → each outcome that named it: `Success`, `Dropped`, or `Failure:<reason>`. */
const outcomes: Record<string, Array<string>> = {}
/** Outcomes that name no message (`Refused`). */
const unnamed: Array<string> = []
const statuses: Array<string> = []
const hear = (messageId: string, what: string) => (outcomes[messageId] ??= []).push(what)
const started = performance.now()
const at = () => Math.round(performance.now() - started)

const client = createClient({
  writeKey: process.env.WRITE_KEY!,
  endpoint: process.env.HOOKRELAY_ENDPOINT!,
  onOutcome: (outcome) => {
    switch (outcome._tag) {
      case "Success":
        for (const message of outcome.messages) hear(message.messageId, "Success")
        break
      case "Failure":
        for (const message of outcome.messages) hear(message.messageId, `Failure:${outcome.reason}`)
        break
      case "Dropped":
        hear(outcome.message.messageId, "Dropped")
        break
      case "Refused":
        unnamed.push(`Refused: ${outcome.error.message}`)
    }
  },
  // Only observed: a status changes nothing about the client's behaviour.
  onStatus: (status) =>
    statuses.push(`${at()} ms ${status._tag}${status._tag === "Reachable" ? ` (${status.held} held)` : ""}`)
})

process.send!({ type: "ready" })
await new Promise<void>((resolve) => process.once("message", () => resolve()))

const go = performance.now()
const stopAt = closeAt ?? Number.POSITIVE_INFINITY
let made = 0
// Every 10 ms, the calls due by now: the rate holds whatever the timers' drift.
await new Promise<void>((resolve) => {
  const timer = setInterval(() => {
    const elapsed = performance.now() - go
    const due = Math.min(calls, Math.floor((elapsed * rate) / 1000))
    if (elapsed >= stopAt) {
      clearInterval(timer)
      return resolve()
    }
    for (; made < due; made++) {
      void client.track({
        userId: `user-${made % 100}`,
        event: "Outage Check",
        messageId: `outage-${made}`,
        properties: { i: made }
      })
    }
    if (made === calls) {
      clearInterval(timer)
      resolve()
    }
  }, 10)
})

const closing = performance.now()
await client.close({ timeout: closeTimeout })
const closeMillis = Math.round(performance.now() - closing)
process.send!({ type: "done", made, closeMillis, outcomes, unnamed, statuses }, () => process.exit(0))

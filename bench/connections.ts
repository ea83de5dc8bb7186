/**
 * Connection abuse (issue 37, part 3): 1 000 idle connections (connected, nothing sent) and 100 slow-header clients (a
 * request head sent one byte a second, never finished) held open against a real server process (`dist/main.js`,
 * SQLite, delivering to a loopback receiver) while normal clients send `track` requests at a steady rate. The normal
 * clients' latency is measured in the same run without the abusers (before they connect and after they are gone) and
 * with them; then the abusers are held until the server cuts them, and when it does is recorded against its header
 * deadline (`headersTimeout`, set in src/ingest/NodeServer.ts: the keep-alive timeout + 1 s, at least Node's 60 s;
 * Node enforces it from a sweep every `connectionsCheckingInterval`, 30 s by default).
 *
 *   npx tsx bench/connections.ts [--idle 1000] [--slow 100] [--rate 200] [--phase 20]
 *
 * Checked: p99 with the abusers ≤ 2 × p99 without (the mean of the phases before and after); no normal request fails;
 * every slow client is cut, none before the header deadline nor later than one sweep after it. Writes
 * bench/results/connections.{md,json} (default numbers of abusers and phase length; any rate). Exit status 1 when a check
 * fails. The rate must be one the server sustains on the machine: past it, requests queue and every phase measures the
 * queue, not the abusers.
 */
import { randomUUID } from "node:crypto"
import { connect, type Socket } from "node:net"
import { Pool } from "undici"
import { percentile } from "./support/percentile.js"
import { arg, sleep, startSink, writeResults } from "./support/processes.js"
import { benchSetup, buildServer, startHookrelay } from "./support/servers.js"

const idleCount = arg("idle", 1000)
const slowCount = arg("slow", 100)
const rate = arg("rate", 200)
const phaseSeconds = arg("phase", 20)
const writeKey = "wk-connections"
/** The server's header deadline with the default keep-alive (65 s): `max(60 s, keep-alive + 1 s)`. */
const headersTimeoutMillis = 66_000
/** Node's `connectionsCheckingInterval` default: the header deadline is enforced by a sweep this often. */
const checkingIntervalMillis = 30_000
/** How long the abusers are held, at most, for the server to cut them. */
const holdLimitMillis = headersTimeoutMillis + checkingIntervalMillis + 30_000

interface Phase {
  readonly name: string
  readonly sent: number
  readonly ok: number
  readonly failed: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

/** `rate` requests a second for `seconds`, open loop: latency counts from each request's scheduled start. */
const measure = async (pool: Pool, name: string, seconds: number): Promise<Phase> => {
  const latencies: Array<number> = []
  let failed = 0
  const started = performance.now()
  const total = Math.round(rate * seconds)
  const inFlight: Array<Promise<void>> = []
  for (let i = 0; i < total; i++) {
    const scheduled = started + (i * 1000) / rate
    const wait = scheduled - performance.now()
    if (wait > 0) await sleep(wait)
    const body = JSON.stringify({
      userId: `user-${i % 100}`,
      event: "Abuse Probe",
      messageId: randomUUID(),
      properties: { i }
    })
    inFlight.push(
      pool.request({
        method: "POST",
        path: "/v1/track",
        headers: {
          "content-type": "application/json",
          authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`
        },
        body
      }).then(async (response) => {
        await response.body.text()
        if (response.statusCode === 200) latencies.push(performance.now() - scheduled)
        else failed += 1
      }, () => {
        failed += 1
      })
    )
  }
  await Promise.all(inFlight)
  const round = (value: number) => Math.round(value * 10) / 10
  return {
    name,
    sent: total,
    ok: latencies.length,
    failed,
    p50: round(percentile(latencies, 50)),
    p99: round(percentile(latencies, 99)),
    max: round(Math.max(...latencies))
  }
}

interface Abuser {
  readonly socket: Socket
  readonly openedAt: number
  closedAt?: number
  answer?: string
  bytes: number
  timer?: NodeJS.Timeout | undefined
}

/** Connects `count` sockets, a hundred at a time; slow ones send a request head one byte a second, never ending it. */
const openAbusers = async (port: number, count: number, slow: boolean): Promise<ReadonlyArray<Abuser>> => {
  const abusers: Array<Abuser> = []
  for (let start = 0; start < count; start += 100) {
    await Promise.all(Array.from({ length: Math.min(100, count - start) }, () =>
      new Promise<void>((resolve) => {
        const socket = connect({ host: "127.0.0.1", port })
        const abuser: Abuser = { socket, openedAt: performance.now(), bytes: 0 }
        abusers.push(abuser)
        socket.on("data", (chunk: Buffer) => (abuser.answer = (abuser.answer ?? "") + chunk.toString("latin1")))
        socket.on("error", () => undefined)
        socket.on("close", () => {
          abuser.closedAt ??= performance.now()
          clearInterval(abuser.timer)
        })
        socket.once("connect", () => {
          if (slow) {
            const head = `POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic ${
              Buffer.from(`${writeKey}:`).toString("base64")
            }\r\nX-Slow: `
            let next = 0
            abuser.timer = setInterval(() => {
              // The header line never ends: after the head, its value grows a byte a second.
              const byte = next < head.length ? head[next]! : "a"
              next += 1
              abuser.bytes += 1
              if (!socket.destroyed) socket.write(byte)
            }, 1000)
          }
          resolve()
        })
      })))
  }
  return abusers
}

const cutSeconds = (abusers: ReadonlyArray<Abuser>) =>
  abusers.flatMap((abuser) => abuser.closedAt === undefined ? [] : [(abuser.closedAt - abuser.openedAt) / 1000])

const summary = (abusers: ReadonlyArray<Abuser>) => {
  const cuts = cutSeconds(abusers)
  const round = (value: number) => Math.round(value * 10) / 10
  return {
    count: abusers.length,
    cut: cuts.length,
    answered408: abusers.filter((abuser) => abuser.answer?.startsWith("HTTP/1.1 408") === true).length,
    cutAfterSeconds: cuts.length === 0
      ? null
      : { min: round(Math.min(...cuts)), p50: round(percentile(cuts, 50)), max: round(Math.max(...cuts)) },
    bytesSentMax: Math.max(0, ...abusers.map((abuser) => abuser.bytes))
  }
}

const main = async () => {
  buildServer()
  const sink = await startSink()
  const setup = benchSetup({ sourceId: "connections", writeKey, hookUrl: `${sink.url}/hook` })
  const server = await startHookrelay({ env: setup.env, startTimeoutMillis: 120_000 })
  const port = Number(new URL(server.url).port)
  const pool = new Pool(server.url, { connections: 16, keepAliveTimeout: 30_000 })

  await measure(pool, "warm-up", 5)
  const before = await measure(pool, "without abusers (before)", phaseSeconds)
  const idle = await openAbusers(port, idleCount, false)
  const slow = await openAbusers(port, slowCount, true)
  const openedAt = performance.now()
  const openIdle = idle.filter((abuser) => abuser.closedAt === undefined).length
  const openSlow = slow.filter((abuser) => abuser.closedAt === undefined).length
  const withAbusers = await measure(pool, `with ${openIdle} idle + ${openSlow} slow-header connections`, phaseSeconds)
  const stillOpen = {
    idle: idle.filter((abuser) => abuser.closedAt === undefined).length,
    slow: slow.filter((abuser) => abuser.closedAt === undefined).length
  }
  while (
    [...idle, ...slow].some((abuser) => abuser.closedAt === undefined) && performance.now() - openedAt < holdLimitMillis
  ) await sleep(500)
  for (const abuser of [...idle, ...slow]) {
    clearInterval(abuser.timer)
    abuser.socket.destroy()
  }
  const after = await measure(pool, "without abusers (after)", phaseSeconds)
  await pool.close()
  await server.stop()
  await sink.stop()
  setup.remove()

  const baseline = (before.p99 + after.p99) / 2
  const ratio = Math.round((withAbusers.p99 / baseline) * 100) / 100
  const slowSummary = summary(slow)
  const idleSummary = summary(idle)
  const slowCuts = cutSeconds(slow)
  const checks = {
    "p99 with the abusers ≤ 2 × without": ratio <= 2,
    "no normal request failed": before.failed + withAbusers.failed + after.failed === 0,
    "every abuser connected and held through the measured phase": stillOpen.idle === idleCount &&
      stillOpen.slow === slowCount,
    "every slow-header client cut": slowSummary.cut === slowCount,
    "none cut before the header deadline nor later than one sweep after it": slowCuts.every((seconds) =>
      seconds >= headersTimeoutMillis / 1000 - 1 &&
      seconds <= (headersTimeoutMillis + checkingIntervalMillis) / 1000 + 5
    )
  }
  const passed = Object.values(checks).every(Boolean)
  const phases = [before, withAbusers, after]
  const json = {
    options: { idle: idleCount, slow: slowCount, rate, phaseSeconds },
    headersTimeoutSeconds: headersTimeoutMillis / 1000,
    checkingIntervalSeconds: checkingIntervalMillis / 1000,
    phases,
    p99Ratio: ratio,
    stillOpenAfterMeasuredPhase: stillOpen,
    slow: slowSummary,
    idle: idleSummary,
    checks,
    passed
  }
  const markdown = [
    "# Connection abuse: idle and slow-header connections beside normal clients",
    "",
    `Produced by \`npx tsx bench/connections.ts\` (\`npm run bench -- connections\`). A server process (\`dist/main.js\`, SQLite) delivering to a loopback receiver; normal clients send ${rate} \`track\` requests a second (open loop, 16 keep-alive connections; latency from each request's scheduled start) for ${phaseSeconds} s without abusers, then with ${idleCount} idle connections (connected, nothing sent) and ${slowCount} slow-header clients (a request head one byte a second, never finished) held open, then again without them once the server has cut them.`,
    "",
    "| phase | sent | 200 | failed | p50 ms | p99 ms | max ms |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...phases.map((phase) =>
      `| ${phase.name} | ${phase.sent} | ${phase.ok} | ${phase.failed} | ${phase.p50} | ${phase.p99} | ${phase.max} |`
    ),
    "",
    `p99 with the abusers / without (mean of before and after, ${
      Math.round(baseline * 10) / 10
    } ms): **${ratio}×** (target ≤ 2×).`,
    "",
    `The server's header deadline is ${
      headersTimeoutMillis / 1000
    } s (\`headersTimeout\` = keep-alive 65 s + 1 s, src/ingest/NodeServer.ts), enforced by Node's sweep every ${
      checkingIntervalMillis / 1000
    } s (\`connectionsCheckingInterval\`), so a connection is cut between ${headersTimeoutMillis / 1000} and ${
      (headersTimeoutMillis + checkingIntervalMillis) / 1000
    } s after it opened.`,
    "",
    "| abusers | count | open through the measured phase | cut by the server | answered 408 | cut after (s) min / p50 / max |",
    "|---|---:|---:|---:|---:|---|",
    ...[["slow-header", slowSummary, stillOpen.slow], ["idle", idleSummary, stillOpen.idle]].map(([name, s, open]) => {
      const stats = s as ReturnType<typeof summary>
      const cut = stats.cutAfterSeconds
      return `| ${name as string} | ${stats.count} | ${open as number} | ${stats.cut} | ${stats.answered408} | ${
        cut === null ? "—" : `${cut.min} / ${cut.p50} / ${cut.max}`
      } |`
    }),
    "",
    "## Checks",
    "",
    ...Object.entries(checks).map(([name, ok]) => `- ${ok ? "pass" : "**FAIL**"}: ${name}`),
    ""
  ].join("\n")
  console.log(markdown)
  // The rate is in the results: a loaded machine may need a lower one for the normal clients not to queue.
  const defaults = idleCount === 1000 && slowCount === 100 && phaseSeconds === 20
  if (defaults) writeResults("connections", markdown, json)
  process.exit(passed ? 0 : 1)
}

await main()

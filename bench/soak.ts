/**
 * Soak (issue 37, part 3): generated inputs — valid, invalid, truncated, wrongly encoded, oversized, odd headers,
 * wrong methods and paths, raw malformed HTTP, retries — sent through every tracking endpoint (REFERENCE §2) and the
 * admin API (REFERENCE §5–7) of a real server process (`dist/main.js`, SQLite in a temporary directory) that delivers to a
 * loopback receiver in a process of its own. Inputs come from fast-check arbitraries drawn with a fixed seed, so a run
 * is reproducible (`--seed`); the cases are in bench/support/fuzz*.ts.
 *
 *   npx tsx bench/soak.ts [--inputs 100000] [--seed 37] [--concurrency 16]
 *
 * Checked, and printed: no answer is a 5xx; none is left without an answer (hung: no answer within 30 s); the process
 * is alive at the end; every message of a request answered 200 is delivered exactly once (by message id; messages sent
 * without an id are counted), none of a refused request ever; answers by status and by family of input. Answers that
 * differ from what the REFERENCE says (a 200 where it requires a 4xx, or the reverse) are listed beside, not counted as
 * failures of the soak: each is a finding to read. Exit status 1 when a check fails. Writes bench/results/soak.{md,json}.
 */
import fc from "fast-check"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Pool } from "undici"
import { admin } from "./support/fuzzAdmin.js"
import type { Case, FuzzContext, HttpCase } from "./support/fuzzCase.js"
import { auth, headers, methodsAndPaths, operational, raw, retry } from "./support/fuzzRequests.js"
import { type Answer, sendCase } from "./support/fuzzSend.js"
import {
  encoded,
  garbled,
  invalidEnvelope,
  invalidMessage,
  type Maker,
  oversized,
  validBatch,
  validSingle
} from "./support/fuzzTracking.js"
import { arg, sleep, startSink, writeResults } from "./support/processes.js"
import { benchSetup, buildServer, peakRssOf, startHookrelay } from "./support/servers.js"
import { soakReport } from "./support/soakReport.js"

const inputs = arg("inputs", 100_000)
const seed = arg("seed", 37)
const concurrency = arg("concurrency", 16)
const answerTimeoutMillis = 30_000
const sourceId = "soak"
const writeKey = "wk-soak"
const adminToken = "soak-admin-token"

/** The families of inputs and how often each is drawn. */
const families: fc.Arbitrary<Maker> = fc.oneof(
  { weight: 24, arbitrary: validSingle },
  { weight: 12, arbitrary: validBatch },
  { weight: 14, arbitrary: invalidMessage },
  { weight: 3, arbitrary: invalidEnvelope },
  { weight: 9, arbitrary: garbled },
  { weight: 6, arbitrary: encoded },
  { weight: 1, arbitrary: oversized },
  { weight: 6, arbitrary: auth },
  { weight: 5, arbitrary: headers },
  { weight: 5, arbitrary: methodsAndPaths },
  { weight: 4, arbitrary: retry },
  { weight: 3, arbitrary: raw },
  { weight: 2, arbitrary: operational },
  { weight: 10, arbitrary: admin }
)

/** The makers of inputs `from`…`from + count`, drawn in chunks of a thousand, each chunk from a seed of its own. */
const chunkSize = 1000
const makersOf = (chunk: number): ReadonlyArray<Maker> =>
  fc.sample(families, { seed: seed * 100_003 + chunk, numRuns: chunkSize })

const main = async () => {
  buildServer()
  const sink = await startSink({ SINK_COUNT_IDS: "1" })
  const setup = benchSetup({ sourceId, writeKey, hookUrl: `${sink.url}/hook` })
  const serverLog = join(setup.directory, "server.log")
  const server = await startHookrelay({ env: { ...setup.env, HOOKRELAY_ADMIN_TOKEN: adminToken }, stdout: serverLog })
  const exited: { code: number | null; signal: string | null } = { code: null, signal: null }
  server.child.once("exit", (code, signal) => Object.assign(exited, { code, signal }))
  const pool = new Pool(server.url, {
    connections: concurrency,
    headersTimeout: answerTimeoutMillis,
    bodyTimeout: answerTimeoutMillis,
    keepAliveTimeout: 30_000
  })

  let counter = 0
  const remembered: Array<HttpCase> = []
  const context: FuzzContext = {
    writeKey,
    sourceId,
    adminToken,
    nextId: () => `s${seed}-${String(counter++).padStart(8, "0")}`,
    remember: (fuzzCase) => {
      if (remembered.length < 500) remembered.push(fuzzCase)
      else remembered[counter % 500] = fuzzCase
    },
    recall: (pick) => remembered.length === 0 ? undefined : remembered[pick % remembered.length]
  }

  const answers: Array<{ readonly fuzzCase: Case; readonly answer: Answer }> = []
  let next = 0
  let makers: ReadonlyArray<Maker> = []
  let makersChunk = -1
  const port = Number(new URL(server.url).port)
  const started = performance.now()
  const worker = async () => {
    while (next < inputs) {
      const index = next++
      const chunk = Math.floor(index / chunkSize)
      if (chunk !== makersChunk) {
        makers = makersOf(chunk)
        makersChunk = chunk
      }
      // Made in order of index (a retry recalls what was made before it), so the run is the same at any concurrency.
      const fuzzCase = makers[index % chunkSize]!(context)
      answers.push({ fuzzCase, answer: await sendCase(pool, port, fuzzCase, answerTimeoutMillis) })
      if (answers.length % 10_000 === 0) {
        console.log(`${answers.length} answered in ${((performance.now() - started) / 1000).toFixed(0)} s`)
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const sendSeconds = (performance.now() - started) / 1000

  // Delivery: wait until every message expected has arrived, or nothing has arrived for 60 s.
  const expected = expectations(answers)
  const deliveryStarted = performance.now()
  let last = -1
  let lastProgressAt = performance.now()
  while (true) {
    const received = await sink.counts()
    const total = Object.values(received.counts).reduce((sum, n) => sum + n, 0) + received.deletes
    if (total >= expected.deliveries) break
    if (total !== last) {
      last = total
      lastProgressAt = performance.now()
    } else if (performance.now() - lastProgressAt > 60_000) break
    await sleep(500)
  }
  // Late duplicates: a delivery repeated after the last expected one would show here.
  await sleep(3000)
  const deliverySeconds = (performance.now() - deliveryStarted) / 1000
  const received = await sink.counts()

  // What the server says of a few messages that did not arrive (their jobs and attempts), for the report.
  const missing = [...expected.accepted].filter(([id, deliver]) => deliver && received.counts[id] === undefined)
  const missingViews = await Promise.all(
    missing.slice(0, 3).map(([id]) =>
      fetch(`${server.url}/admin/messages/${encodeURIComponent(id)}`, {
        headers: { authorization: `Bearer ${adminToken}` },
        signal: AbortSignal.timeout(5000)
      }).then((response) => response.text(), (error: Error) => error.message).then((view) => ({
        id,
        view: view.slice(0, 1500)
      }))
    )
  )
  const healthz = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(5000) }).then(
    (r) => r.status,
    () => 0
  )
  const alive = exited.code === null && exited.signal === null && healthz === 200
  const peakRss = alive ? peakRssOf(server.child.pid!) : 0
  const logLines = readFileSync(serverLog, "utf8").split("\n").filter((line) => line.length > 0)
  await pool.close()
  if (alive) await server.stop()
  await sink.stop()
  setup.remove()

  const report = soakReport({
    inputs,
    seed,
    concurrency,
    sendSeconds,
    deliverySeconds,
    answers,
    expected,
    received,
    alive,
    exit: exited,
    peakRss,
    logLines
  })
  console.log(report.markdown)
  console.log(
    JSON.stringify({ fiveHundreds: report.json.fiveHundreds, samples: report.json.samples, missingViews }, null, 2)
  )
  if (inputs === 100_000 && seed === 37) writeResults("soak", report.markdown, report.json)
  process.exit(report.passed ? 0 : 1)
}

/** What the answers promise: each id answered 200 somewhere (and whether it is to be delivered), the rest refused. */
export const expectations = (answers: ReadonlyArray<{ readonly fuzzCase: Case; readonly answer: Answer }>) => {
  const accepted = new Map<string, boolean>()
  const refused = new Set<string>()
  let anonymous = 0
  let deletions = 0
  for (const { answer, fuzzCase } of answers) {
    if (answer.kind === "answered" && fuzzCase.deletion === true && answer.status === 202) deletions += 1
    if (answer.kind === "answered" && answer.status === 200) {
      for (const carried of fuzzCase.carried) accepted.set(carried.id, carried.deliver)
      anonymous += fuzzCase.anonymous
    } else {
      for (const carried of fuzzCase.carried) refused.add(carried.id)
    }
  }
  for (const id of accepted.keys()) refused.delete(id)
  const deliverable = [...accepted.values()].filter(Boolean).length
  return { accepted, refused, anonymous, deletions, deliveries: deliverable + anonymous + deletions, deliverable }
}

export type Expectations = ReturnType<typeof expectations>

await main()

/**
 * Signing's cost per delivered job, without a network: the one delivery program (`deliverWith`) runs each job's first
 * attempt against a transport that answers 200 at once, so what differs between the variants is header building and
 * signing. The baseline is the same program of a git ref (default `main`, `BASELINE_REF=<ref>`) signing `X-Signature`,
 * run in alternating rounds with this tree's variants; ratios are per round against that round's baseline. Writes
 * bench/results/signing.{md,json}.
 *
 *   node --expose-gc --import tsx bench/signing.ts [rounds]
 */
import { Clock, Effect } from "effect"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Current from "../src/delivery/Deliver.js"
import { generateSecret, generateSigningKeyPair } from "../src/delivery/StandardWebhooks.js"
import { response } from "../src/delivery/Transport.js"
import { encodePrivateKey } from "../src/domain/Signing.js"
import { repoRoot } from "./support/compile.js"

const baselineRef = process.env.BASELINE_REF ?? "main"
const rounds = Number(process.argv[2] ?? 7)
const jobsPerRound = 50_000

type DeliverWith = typeof Current.deliverWith

const loadBaseline = async (): Promise<{ readonly deliverWith: DeliverWith; readonly commit: string }> => {
  const commit = execFileSync("git", ["-C", repoRoot, "rev-parse", "--short", baselineRef], { encoding: "utf8" }).trim()
  const dir = mkdtempSync(join(repoRoot, "bench", ".baseline-signing-"))
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }))
  execFileSync("sh", ["-c", `git -C "${repoRoot}" archive ${baselineRef} src | tar -x -C "${dir}"`])
  const module = (await import(join(dir, "src/delivery/Deliver.ts"))) as typeof Current
  return { deliverWith: module.deliverWith, commit }
}

const body = new TextEncoder().encode(JSON.stringify({
  version: 1,
  type: "track",
  messageId: "node-next-1763715784001-6f1c2a3b-8d4e-4f5a-9b6c-1",
  userId: "user-1001",
  event: "Order Completed",
  properties: { orderId: "o-1001", total: 42.5, currency: "EUR" },
  timestamp: "2026-11-21T09:03:04.001Z",
  receivedAt: "2026-11-21T09:03:04.120Z",
  context: {}
}))

const endpoints = [{ url: "http://127.0.0.1:9000/hook" }]
const sharedSecret = "whsec_benchmark_shared_secret"
const now = Date.parse("2026-11-21T12:00:00Z")
const later = new Date(now + 86_400_000).toISOString()
const signingKey = encodePrivateKey(generateSigningKeyPair().privateKey)

// One settings object per variant, shared by its jobs as a claim's are.
const variants = {
  "X-Signature (this tree)": { enabled: true, sharedSecret, endpoints },
  "standard, 1 secret": {
    enabled: true,
    endpoints,
    signing: "standard",
    signingSecrets: [{ secret: generateSecret() }]
  },
  "standard, 2 secrets (rotating)": {
    enabled: true,
    endpoints,
    signing: "standard",
    signingSecrets: [{ secret: generateSecret() }, { secret: generateSecret(), expiresAt: later }]
  },
  "standard, 1 secret + v1a (ed25519)": {
    enabled: true,
    endpoints,
    signing: "standard",
    signingSecrets: [{ secret: generateSecret() }],
    asymmetric: true,
    signingKey
  },
  "both, 1 secret": {
    enabled: true,
    sharedSecret,
    endpoints,
    signing: "both",
    signingSecrets: [{ secret: generateSecret() }]
  }
} as const

const ok = response(200)
const transport = { post: () => Effect.succeed(ok) }
// A fixed clock: every job's attempt at the same instant, as a burst of jobs within one second is.
const system = Effect.runSync(Effect.clockWith(Effect.succeed))
const clock: Clock.Clock = {
  currentTimeMillisUnsafe: () => now,
  currentTimeMillis: Effect.succeed(now),
  currentTimeNanosUnsafe: () => BigInt(now) * 1_000_000n,
  currentTimeNanos: Effect.succeed(BigInt(now) * 1_000_000n),
  monotonicTimeNanosUnsafe: () => system.monotonicTimeNanosUnsafe(),
  monotonicTimeNanos: system.monotonicTimeNanos,
  sleep: (duration) => system.sleep(duration)
}
const services = { transport, clock }

const collectGarbage = (globalThis as { gc?: () => void }).gc

/**
 * CPU µs per job over `jobsPerRound` jobs of one variant: this process's CPU time, steadier than wall time on a
 * machine shared with other work. Garbage of the previous variant is collected first, when `--expose-gc` allows.
 */
const measure = (deliverWith: DeliverWith, settings: unknown): number => {
  collectGarbage?.()
  const started = process.cpuUsage()
  for (let i = 0; i < jobsPerRound; i++) {
    Effect.runSync(deliverWith(services, {
      jobId: `job-${i}`,
      messageId: `message-${i}`,
      body,
      settings: settings as Current.DeliveryJob["settings"]
    }))
  }
  const used = process.cpuUsage(started)
  return (used.user + used.system) / jobsPerRound
}

const main = async () => {
  const baseline = await loadBaseline()
  const names = Object.keys(variants) as Array<keyof typeof variants>
  const baselineSettings = { enabled: true, sharedSecret, endpoints }
  // Warm-up, unmeasured.
  measure(baseline.deliverWith, baselineSettings)
  for (const name of names) measure(Current.deliverWith, variants[name])

  const perRound: Array<Record<string, number>> = []
  for (let round = 0; round < rounds; round++) {
    // Each round starts at another variant: the place in a round weighs on the figures as much as the variant.
    const order = ["baseline", ...names]
    const rotated = [...order.slice(round % order.length), ...order.slice(0, round % order.length)]
    const result: Record<string, number> = {}
    for (const name of rotated) {
      result[name] = name === "baseline"
        ? measure(baseline.deliverWith, baselineSettings)
        : measure(Current.deliverWith, variants[name as keyof typeof variants])
    }
    perRound.push(result)
  }
  const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  const rows = [
    ["baseline", `X-Signature (${baselineRef}, ${baseline.commit})`] as const,
    ...names.map((n) => [n, n] as const)
  ]
  const table = rows.map(([key, label]) => {
    const micros = median(perRound.map((r) => r[key]!))
    const ratios = perRound.map((r) => r[key]! / r.baseline!)
    return { variant: label, microsPerJob: micros, medianRatio: median(ratios), ratios }
  })
  const lines = [
    "# Signing benchmark",
    "",
    `${
      new Date().toISOString()
    }, Node ${process.version}. Produced by \`npm run bench -- signing\` (\`bench/signing.ts\`).`,
    "",
    `The delivery program's first attempt of ${jobsPerRound} jobs per round (a ${body.length}-byte track body, one URL,`,
    "a transport that answers 200 at once, one settings object per variant), under tsx, in " + rounds + " rounds,",
    "each starting at the next variant. CPU µs per job (this process) is the median; the ratio is per round against the baseline of",
    "the same round.",
    "",
    "| variant | CPU µs/job | ratio to baseline (median) | every round's ratio |",
    "|---|---:|---:|---|",
    ...table.map((row) =>
      `| ${row.variant} | ${row.microsPerJob.toFixed(2)} | ${row.medianRatio.toFixed(2)}× | ${
        row.ratios.map((r) => r.toFixed(2)).join(", ")
      } |`
    ),
    ""
  ]
  mkdirSync(join(repoRoot, "bench", "results"), { recursive: true })
  writeFileSync(join(repoRoot, "bench", "results", "signing.md"), lines.join("\n"))
  writeFileSync(
    join(repoRoot, "bench", "results", "signing.json"),
    JSON.stringify({ baselineRef, commit: baseline.commit, table }, null, 2)
  )
  console.log(lines.join("\n"))
}

void main()

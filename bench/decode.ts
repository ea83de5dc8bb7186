/**
 * Message decoding, per message: this tree's `decodeMessage` against the one of a baseline git ref (default `main`,
 * `BASELINE_REF=<ref>` to change), both decoding the same batches of 100 analytics-node style messages, in alternating
 * rounds. Also shown: the message schemas decoded by Schema alone (every error, unknown fields preserved), without
 * `decodeMessage`'s checks around it. Writes bench/results/decode.{md,json}.
 *
 *   npx tsx bench/decode.ts [rounds]
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { isDeepStrictEqual } from "node:util"
import { decodeWithIssues } from "../src/domain/Issues.js"
import * as Current from "../src/domain/Message.js"
import { repoRoot } from "./support/compile.js"

/** A decoder's answer: Effect 4's `Result` (`Success`), or a baseline's Effect 3 `Either` (`Right`). */
type Decode = (input: unknown) => { readonly _tag: string }
const isDecoded = (answer: { readonly _tag: string }) => answer._tag === "Success" || answer._tag === "Right"
/** The message a decoder gave (`Result.success` or `Either.right`). */
const valueOf = (answer: { readonly _tag: string }) =>
  (answer as { readonly success?: unknown }).success ?? (answer as { readonly right?: unknown }).right

const baselineRef = process.env.BASELINE_REF ?? "main"
const rounds = Number(process.argv[2] ?? 7)
const roundMillis = 300

/** The baseline's `src/domain/Message.ts` and the domain modules it imports, written to a scratch folder. */
const loadBaseline = async (): Promise<{ readonly decode: Decode; readonly commit: string }> => {
  const commit = execFileSync("git", ["-C", repoRoot, "rev-parse", "--short", baselineRef], { encoding: "utf8" }).trim()
  const dir = mkdtempSync(join(repoRoot, "bench", ".baseline-"))
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }))
  const pending = ["Message"]
  const done = new Set<string>()
  while (pending.length > 0) {
    const name = pending.pop()!
    if (done.has(name)) continue
    done.add(name)
    const text = execFileSync("git", ["-C", repoRoot, "show", `${baselineRef}:src/domain/${name}.ts`], {
      encoding: "utf8"
    })
    for (const [, imported] of text.matchAll(/from "\.\/([A-Za-z]+)\.js"/g)) pending.push(imported!)
    writeFileSync(join(dir, `${name}.ts`), text)
  }
  const module = (await import(join(dir, "Message.ts"))) as typeof Current
  return { decode: (input) => module.decodeMessage(input), commit }
}

const library = { name: "@segment/analytics-node", version: "2.1.2" }
const metadata = { nodeVersion: "20.11.1", jsRuntime: "node" }

/** An analytics-node style message: ids, canonical timestamp, context.library, properties or traits. */
const message = (index: number, numericIds: boolean): Record<string, unknown> => {
  const timestamp = new Date(Date.UTC(2026, 10, 21, 9, 3, 4, index)).toISOString()
  const user = index % 4 === 3
    ? { anonymousId: `anon-${index.toString(16).padStart(8, "0")}-4b1e-9d2c-7f3a5e8c1b20` }
    : { userId: numericIds && index % 10 === 0 ? 100_000 + index : `user-${1000 + index}` }
  const common = {
    ...user,
    messageId: `node-next-1763715784${String(index).padStart(3, "0")}-6f1c2a3b-8d4e-4f5a-9b6c-${index}`,
    timestamp,
    context: { library, ip: "203.0.113.7", locale: "en-US", traits: { plan: "pro" } },
    integrations: index % 5 === 0 ? { All: true, Mixpanel: false } : {},
    _metadata: metadata
  }
  switch (index % 5) {
    case 0:
    case 1:
    case 2:
      return {
        type: "track",
        event: ["Order Completed", "Product Viewed", "Signed Up"][index % 3],
        ...common,
        properties: {
          orderId: `o-${index}`,
          revenue: 25.5 + index,
          currency: "USD",
          products: [{ sku: "sku-1", price: 12.75, quantity: 2 }]
        }
      }
    case 3:
      return {
        type: "identify",
        ...common,
        traits: { email: `user${index}@example.com`, name: "Ada Lovelace", plan: "pro", createdAt: timestamp }
      }
    default:
      return {
        type: "page",
        ...common,
        name: "Pricing",
        category: "Docs",
        properties: { path: "/pricing", url: "https://example.com/pricing", title: "Pricing", referrer: "" }
      }
  }
}

const batch = (numericIds: boolean) => Array.from({ length: 100 }, (_, index) => message(index, numericIds))

// Schema alone: the same schemas, decoded by Schema itself with every error and unknown fields kept.
const schemaAlone = (() => {
  const decoders: Record<string, Decode> = {
    identify: decodeWithIssues(Current.Identify),
    track: decodeWithIssues(Current.Track),
    page: decodeWithIssues(Current.Page),
    screen: decodeWithIssues(Current.Screen),
    group: decodeWithIssues(Current.Group),
    alias: decodeWithIssues(Current.Alias)
  }
  return (input: unknown) => decoders[(input as { type: string }).type]!(input)
})()

let sink = 0
/**
 * Messages decoded per second of the process's CPU time, over `roundMillis` of wall time: CPU time, not wall time,
 * so that other processes on a shared machine do not count as decoding time.
 */
const measure = (decode: Decode, messages: ReadonlyArray<unknown>): number => {
  let decoded = 0
  const cpu = process.cpuUsage()
  const end = process.hrtime.bigint() + BigInt(roundMillis) * 1_000_000n
  while (process.hrtime.bigint() < end) {
    for (const input of messages) {
      if (isDecoded(decode(input))) sink++
    }
    decoded += messages.length
  }
  const used = process.cpuUsage(cpu)
  return decoded / ((used.user + used.system) / 1e6)
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

const baseline = await loadBaseline()
const variants: ReadonlyArray<readonly [string, Decode]> = [
  [`old (${baselineRef} ${baseline.commit})`, baseline.decode],
  ["new (this tree)", (input) => Current.decodeMessage(input)],
  ["Schema alone", schemaAlone]
]

const results: Array<Record<string, unknown>> = []
for (const [label, messages] of [["string ids", batch(false)], ["10 % numeric userId", batch(true)]] as const) {
  for (const input of messages) {
    const outputs = variants.map(([, decode]) => decode(input))
    if (!outputs.every((output) => isDecoded(output) && isDeepStrictEqual(valueOf(output), valueOf(outputs[0]!)))) {
      throw new Error(`the decoders disagree on ${JSON.stringify(input)}`)
    }
  }
  for (const [, decode] of variants) measure(decode, messages)
  const rates: Array<Array<number>> = variants.map(() => [])
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [0, 1, 2] : [2, 1, 0]
    for (const index of order) rates[index]!.push(measure(variants[index]![1], messages))
  }
  const medians = rates.map(median)
  const old = medians[0]!
  console.log(`\n${label}: 100 messages, ${rounds} alternating rounds of ${roundMillis} ms each`)
  variants.forEach(([name], index) => {
    const rate = medians[index]!
    const line =
      `${name.padEnd(22)} ${(rate / 1e3).toFixed(0).padStart(6)} k msg/CPU-s  ${(1e6 / rate).toFixed(2)} µs/msg` +
      `  ×${(rate / old).toFixed(2)} of old  (rounds: ${rates[index]!.map((r) => (r / 1e3).toFixed(0)).join(" ")})`
    console.log(line)
    results.push({
      batch: label,
      decoder: name,
      messagesPerSecond: Math.round(rate),
      microsPerMessage: Number((1e6 / rate).toFixed(3)),
      ratioToOld: Number((rate / old).toFixed(3)),
      rounds: rates[index]!.map(Math.round)
    })
  })
}

const outDir = join(repoRoot, "bench", "results")
mkdirSync(outDir, { recursive: true })
writeFileSync(join(outDir, "decode.json"), JSON.stringify({ node: process.version, rounds, results }, null, 2) + "\n")
const rows = results.map((r) =>
  `| ${String(r.batch)} | ${String(r.decoder)} | ${Number(r.messagesPerSecond).toLocaleString("en")} | ` +
  `${String(r.microsPerMessage)} | ${String(r.ratioToOld)} |`
)
writeFileSync(
  join(outDir, "decode.md"),
  [
    "# Message decoding",
    "",
    `\`npx tsx bench/decode.ts\`: \`decodeMessage\` on batches of 100 analytics-node style messages, ${rounds}` +
    ` alternating rounds of ${roundMillis} ms, median;` +
    ` per second of the process's CPU time; node ${process.version}.`,
    "",
    "| batch | decoder | messages per CPU second | CPU µs/message | × old |",
    "| --- | --- | ---: | ---: | ---: |",
    ...rows,
    ""
  ].join("\n")
)
if (sink < 0) console.log(sink)

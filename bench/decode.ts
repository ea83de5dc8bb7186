/**
 * Message decoding, per message, compiled on plain node as the server runs: `decodeMessage` (Schema 4's own
 * decoding) on batches of 100 analytics-node style messages, beside `JSON.parse` of the same batch's text (which every
 * request pays anyway) and the message schemas decoded by Schema alone (no checks around them); in a second process,
 * the same with `effect/schema`'s SchemaJITCompiler enabled (unstable). CPU ns and heap bytes allocated per message,
 * alternating rounds, median. Writes bench/results/decode.{md,json}.
 *
 *   npx tsx bench/decode.ts [rounds]
 */
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { isDeepStrictEqual } from "node:util"
import { allocatedBytes } from "./support/allocations.js"
import { runCompiled } from "./support/compile.js"
import { writeResults } from "./support/processes.js"

const jit = process.argv.includes("--jit")
const rounds = Number(process.argv.slice(2).find((arg) => /^\d+$/.test(arg)) ?? 7)
const roundMillis = 300

interface Row {
  readonly batch: string
  readonly decoder: string
  readonly nsPerMessage: number
  readonly bytesPerMessage: number
  readonly rounds: ReadonlyArray<number>
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

/** A batch request's body text and its messages as the server holds them: parsed from that text. */
const batch = (numericIds: boolean) => {
  const text = JSON.stringify({ batch: Array.from({ length: 100 }, (_, index) => message(index, numericIds)) })
  return { text, messages: (JSON.parse(text) as { batch: ReadonlyArray<unknown> }).batch }
}

let sink = 0
/** CPU ns per message (user + system, so other processes on the shared machine do not count) over `roundMillis`. */
const measure = (work: () => void, count: number): number => {
  let done = 0
  const cpu = process.cpuUsage()
  const end = process.hrtime.bigint() + BigInt(roundMillis) * 1_000_000n
  while (process.hrtime.bigint() < end) {
    work()
    done += count
  }
  const used = process.cpuUsage(cpu)
  return ((used.user + used.system) * 1e3) / done
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** Measures the variants of this process (JIT enabled or not) on both batches. */
const measureAll = async (): Promise<ReadonlyArray<Row>> => {
  if (jit) await import("effect/schema/SchemaJITCompiler/enable")
  const { decodeWithIssues } = await import("../src/domain/Issues.js")
  const Message = await import("../src/domain/Message.js")
  const schemaDecoders: Record<string, (input: unknown) => { readonly _tag: string }> = {
    identify: decodeWithIssues(Message.Identify),
    track: decodeWithIssues(Message.Track),
    page: decodeWithIssues(Message.Page)
  }
  const suffix = jit ? ", JIT" : ""
  const rows: Array<Row> = []
  for (const [label, numericIds] of [["string ids", false], ["10 % numeric userId", true]] as const) {
    const { messages, text } = batch(numericIds)
    const variants: ReadonlyArray<readonly [string, () => void]> = [
      ["JSON.parse of the batch text", () => {
        sink += (JSON.parse(text) as { batch: ReadonlyArray<unknown> }).batch.length
      }],
      [`decodeMessage (Schema 4${suffix})`, () => {
        for (const input of messages) if (Message.decodeMessage(input)._tag === "Success") sink++
      }],
      [`Schema alone${suffix}`, () => {
        for (const input of messages) {
          if (schemaDecoders[(input as { type: string }).type]!(input)._tag === "Success") sink++
        }
      }]
    ]
    for (const input of messages) {
      const decoded = Message.decodeMessage(input)
      const alone = schemaDecoders[(input as { type: string }).type]!(input)
      if (decoded._tag !== "Success" || alone._tag !== "Success" || !isDeepStrictEqual(decoded, alone)) {
        throw new Error(`the decoders disagree on ${JSON.stringify(input)}`)
      }
    }
    for (const [, work] of variants) measure(work, messages.length)
    const samples: Array<Array<number>> = variants.map(() => [])
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [0, 1, 2] : [2, 1, 0]
      for (const index of order) samples[index]!.push(measure(variants[index]![1], messages.length))
    }
    for (const [index, [name, work]] of variants.entries()) {
      const repeats = 200
      const bytes = await allocatedBytes(() => {
        for (let repeat = 0; repeat < repeats; repeat++) work()
      })
      rows.push({
        batch: label,
        decoder: name,
        nsPerMessage: Math.round(median(samples[index]!)),
        bytesPerMessage: Math.round(bytes / (repeats * messages.length)),
        rounds: samples[index]!.map(Math.round)
      })
    }
  }
  return rows
}

/** The JIT variant in a process of its own: enabling it changes every schema compiled afterwards. */
const measureJit = () =>
  new Promise<ReadonlyArray<Row>>((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ["--jit", String(rounds)], { stdio: "inherit" })
    let rows: ReadonlyArray<Row> | undefined
    child.once("message", (message) => {
      rows = message as ReadonlyArray<Row>
    })
    child.once("error", reject)
    child.once("exit", (code) => rows === undefined ? reject(new Error(`the JIT run exited ${code}`)) : resolve(rows))
  })

const main = async () => {
  const rows = [...(await measureAll()), ...(await measureJit())]
  const parseNs = (batchLabel: string, jitRun: boolean) =>
    rows.find((row) =>
      row.batch === batchLabel && row.decoder.startsWith("JSON.parse") &&
      rows.indexOf(row) >= (jitRun ? rows.length / 2 : 0)
    )!.nsPerMessage
  const table = rows.map((row, index) => {
    const ratio = row.nsPerMessage / parseNs(row.batch, index >= rows.length / 2)
    return `| ${row.batch} | ${row.decoder}${
      index >= rows.length / 2 && row.decoder.startsWith("JSON") ? " (JIT run)" : ""
    } | ` +
      `${(row.nsPerMessage / 1e3).toFixed(2)} | ${ratio.toFixed(2)}× | ${row.bytesPerMessage.toLocaleString("en")} |`
  })
  const markdown = [
    "# Message decoding",
    "",
    "The Effect 3 build's figures were: the hand-made `StructDecoder` ~0.72 µs a message, Schema 3 ~7.4 µs.",
    "",
    `\`npm run bench -- decode\` (\`bench/decode.ts\`, compiled, plain node ${process.version}): batches of 100` +
    " analytics-node style messages (track, identify, page, with context), parsed from a batch body's text as the" +
    ` server holds them; CPU time per message (user + system), median of ${rounds} alternating rounds of` +
    ` ${roundMillis} ms; heap bytes allocated per message (V8 sampling heap profile, garbage included). "×` +
    " JSON.parse\" compares with parsing the same messages' text, which every request pays anyway. The JIT rows" +
    " (`effect/schema/SchemaJITCompiler/enable`, unstable) ran in a second process, with their own JSON.parse row.",
    "",
    "| batch | decoder | CPU µs/message | × JSON.parse | bytes allocated/message |",
    "| --- | --- | ---: | ---: | ---: |",
    ...table,
    ""
  ].join("\n")
  writeResults("decode", markdown, { node: process.version, rounds, roundMillis, results: rows })
  console.log(markdown)
}

const fromSource = import.meta.url.endsWith(".ts")
;(fromSource
  ? runCompiled("hookrelay-decode", ["src", "bench/support"], "bench/decode.ts")
  : jit
  ? measureAll().then((rows) => new Promise<number>((resolve) => process.send!(rows, () => resolve(0))))
  : main().then(() => 0)).then((code) => {
    if (sink < 0) console.log(sink)
    process.exit(code)
  }, (error) => {
    console.error(error)
    process.exit(1)
  })

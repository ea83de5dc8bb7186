/**
 * The soak's figures (`bench/soak.ts`): answers by status and by family of input, what was accepted against what the
 * receiver got, the server's state at the end; the checks that fail the run, and the answers that differ from the
 * REFERENCE.
 */
import type { Case } from "./fuzzCase.js"
import type { Answer } from "./fuzzSend.js"
import type { SinkCounts } from "./processes.js"

interface Input {
  readonly inputs: number
  readonly seed: number
  readonly concurrency: number
  readonly sendSeconds: number
  readonly deliverySeconds: number
  readonly answers: ReadonlyArray<{ readonly fuzzCase: Case; readonly answer: Answer }>
  readonly expected: {
    readonly accepted: ReadonlyMap<string, boolean>
    readonly refused: ReadonlySet<string>
    readonly anonymous: number
    readonly deletions: number
    readonly deliverable: number
  }
  readonly received: SinkCounts
  readonly alive: boolean
  readonly exit: { readonly code: number | null; readonly signal: string | null }
  readonly peakRss: number
  readonly logLines: ReadonlyArray<string>
}

const outcomeOf = (answer: Answer) => answer.kind === "answered" ? String(answer.status) : answer.kind

const increment = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)

const sorted = (map: ReadonlyMap<string, number>) => Object.fromEntries([...map].sort(([a], [b]) => a.localeCompare(b)))

export const soakReport = (input: Input) => {
  const byStatus = new Map<string, number>()
  const byFamily = new Map<string, Map<string, number>>()
  const fiveHundreds: Array<{ label: string; status: number; body: string }> = []
  const differences = new Map<string, { count: number; sample: string }>()
  for (const { answer, fuzzCase } of input.answers) {
    const outcome = outcomeOf(answer)
    increment(byStatus, outcome)
    const family = byFamily.get(fuzzCase.label) ?? new Map<string, number>()
    byFamily.set(fuzzCase.label, increment(family, outcome))
    if (answer.kind === "answered" && answer.status >= 500 && fiveHundreds.length < 20) {
      fiveHundreds.push({ label: fuzzCase.label, status: answer.status, body: answer.body })
    }
    const status = answer.kind === "answered" ? answer.status : undefined
    const differs = fuzzCase.expect === "200"
      ? status !== 200
      : fuzzCase.expect === "4xx" && (status === undefined || status < 400 || status >= 500)
    if (differs && answer.kind !== "reset" && answer.kind !== "closed") {
      const key = `${fuzzCase.label}: expected ${fuzzCase.expect}, got ${outcome}`
      const entry = differences.get(key) ??
        { count: 0, sample: answer.kind === "answered" ? answer.body.slice(0, 160) : "" }
      differences.set(key, { ...entry, count: entry.count + 1 })
    }
  }

  const counts = input.received.counts
  let duplicates = 0
  let deliveredOnce = 0
  let lost = 0
  let unwanted = 0
  let unknownIds = 0
  const lostSample: Array<string> = []
  const unwantedSample: Array<string> = []
  for (const [id, deliver] of input.expected.accepted) {
    const n = counts[id] ?? 0
    if (!deliver) {
      if (n > 0) {
        unwanted += n
        if (unwantedSample.length < 5) unwantedSample.push(`${id} (integrations said no)`)
      }
    } else if (n === 0) {
      lost += 1
      if (lostSample.length < 5) lostSample.push(id)
    } else deliveredOnce += 1
  }
  for (const [id, n] of Object.entries(counts)) {
    if (n > 1) duplicates += n - 1
    if (input.expected.refused.has(id)) {
      unwanted += n
      if (unwantedSample.length < 5) unwantedSample.push(`${id} (its request was refused)`)
    } else if (!input.expected.accepted.has(id)) unknownIds += 1
  }
  const anonymousDelivered = unknownIds
  const sent = input.answers.length
  const answered = input.answers.filter(({ answer }) => answer.kind === "answered").length
  const count = (kind: Answer["kind"]) => input.answers.filter(({ answer }) => answer.kind === kind).length
  const hung = count("hung")
  const fiveHundredCount = [...byStatus].filter(([status]) => /^5\d\d$/.test(status)).reduce((sum, [, n]) => sum + n, 0)
  const errorLogs = input.logLines.filter((line) => /"logLevel":"(ERROR|FATAL)"/.test(line))

  const checks = {
    "no 5xx answer": fiveHundredCount === 0,
    "no request left without an answer": hung === 0,
    "the process alive at the end": input.alive,
    "every accepted message delivered": lost === 0 && anonymousDelivered >= input.expected.anonymous,
    "none delivered twice": duplicates === 0 && anonymousDelivered <= input.expected.anonymous,
    "nothing refused or deselected delivered": unwanted === 0,
    "one delete notification per deletion": input.received.deletes === input.expected.deletions
  }
  const passed = Object.values(checks).every(Boolean)

  const json = {
    inputs: input.inputs,
    seed: input.seed,
    concurrency: input.concurrency,
    sendSeconds: Math.round(input.sendSeconds),
    deliverySeconds: Math.round(input.deliverySeconds),
    requests: {
      sent,
      answered,
      hung,
      reset: count("reset"),
      closedWithoutAnswer: count("closed"),
      notSent: count("not sent")
    },
    byStatus: sorted(byStatus),
    messages: {
      acceptedWithId: input.expected.accepted.size,
      acceptedToDeliver: input.expected.deliverable,
      deliveredOnce,
      duplicates,
      lost,
      deliveredThoughRefusedOrDeselected: unwanted,
      acceptedWithoutId: input.expected.anonymous,
      deliveredWithServerMadeId: anonymousDelivered,
      deletionsAccepted: input.expected.deletions,
      deleteNotifications: input.received.deletes,
      receiverBodiesWithoutId: input.received.unparsed
    },
    server: {
      alive: input.alive,
      exit: input.exit,
      peakRssMb: Math.round(input.peakRss / 1024 / 1024),
      errorLogLines: errorLogs.length
    },
    checks,
    passed,
    fiveHundreds,
    differencesFromSpec: Object.fromEntries([...differences].sort(([, a], [, b]) => b.count - a.count)),
    samples: {
      lost: lostSample,
      unwanted: unwantedSample,
      errorLogs: errorLogs.slice(0, 5),
      notSent: input.answers.flatMap(({ answer, fuzzCase }) =>
        answer.kind === "not sent" || answer.kind === "reset" ? [`${fuzzCase.label}: ${answer.error}`] : []
      ).slice(0, 5)
    },
    byFamily: Object.fromEntries(
      [...byFamily].sort(([a], [b]) => a.localeCompare(b)).map(([label, map]) => [label, sorted(map)])
    )
  }

  const statusColumns = [...byStatus.keys()].sort()
  const markdown = [
    "# Soak: generated inputs through the tracking and admin APIs",
    "",
    `Produced by \`npx tsx bench/soak.ts\` (\`npm run bench -- soak\`): ${sent} inputs drawn by fast-check from seed ${input.seed}, ${input.concurrency} at a time, to a server process (\`dist/main.js\`, SQLite) delivering to a loopback receiver. The inputs are in \`bench/support/fuzz*.ts\`.`,
    "",
    `Sent in ${json.sendSeconds} s; deliveries settled ${json.deliverySeconds} s after the last answer.`,
    "",
    "## Checks",
    "",
    ...Object.entries(checks).map(([name, ok]) => `- ${ok ? "pass" : "**FAIL**"}: ${name}`),
    "",
    "## Requests",
    "",
    "| sent | answered | hung | reset by the server | closed without an answer | refused by the client library |",
    "|---:|---:|---:|---:|---:|---:|",
    `| ${sent} | ${answered} | ${hung} | ${json.requests.reset} | ${json.requests.closedWithoutAnswer} | ${json.requests.notSent} |`,
    "",
    `By status: ${statusColumns.map((status) => `${status} × ${byStatus.get(status)}`).join(", ")}.`,
    "",
    "## Messages",
    "",
    "| accepted (with id) | to deliver | delivered once | duplicates | lost | delivered though refused or deselected | accepted without id | delivered with a server-made id | deletions / delete notifications |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    `| ${json.messages.acceptedWithId} | ${json.messages.acceptedToDeliver} | ${deliveredOnce} | ${duplicates} | ${lost} | ${unwanted} | ${input.expected.anonymous} | ${anonymousDelivered} | ${input.expected.deletions} / ${input.received.deletes} |`,
    "",
    `Server at the end: ${
      input.alive ? "alive" : `**gone** (exit ${JSON.stringify(input.exit)})`
    }, peak RSS ${json.server.peakRssMb} MB, ${errorLogs.length} error log lines.`,
    "",
    "## Answers that differ from the REFERENCE",
    "",
    differences.size === 0
      ? "None."
      : [
        "| input: expected, got | count | sample answer |",
        "|---|---:|---|",
        ...[...differences].sort(([, a], [, b]) => b.count - a.count).map(([key, { count: n, sample }]) =>
          `| ${key} | ${n} | \`${sample.replace(/\|/g, "\\|").replace(/`/g, "'")}\` |`
        )
      ].join("\n"),
    "",
    "## Answers by family of input",
    "",
    "| input | answers |",
    "|---|---|",
    ...[...byFamily].sort(([a], [b]) => a.localeCompare(b)).map(([label, map]) =>
      `| ${label} | ${
        [...map].sort(([a], [b]) => a.localeCompare(b)).map(([status, n]) => `${status} × ${n}`).join(", ")
      } |`
    ),
    ""
  ].join("\n")
  return { markdown, json, passed }
}

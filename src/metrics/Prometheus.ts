import { Effect, Metric } from "effect"

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")

const labels = (attributes: Metric.Metric.AttributeSet | undefined, extra?: string) => {
  const parts = Object.entries(attributes ?? {}).map(([key, value]) => `${key}="${escapeLabel(value)}"`)
  if (extra !== undefined) parts.push(extra)
  return parts.length === 0 ? "" : `{${parts.join(",")}}`
}

const formatNumber = (value: number | bigint) =>
  typeof value === "bigint" ? value.toString() : Number.isFinite(value) ? String(value) : value > 0 ? "+Inf" : "-Inf"

const renderSnapshot = (snapshot: Metric.Metric.Snapshot, lines: Array<string>, typed: Set<string>) => {
  const name = snapshot.id
  const attributes = snapshot.attributes
  const declare = (type: string) => {
    if (typed.has(name)) return
    typed.add(name)
    if (snapshot.description !== undefined) lines.push(`# HELP ${name} ${snapshot.description}`)
    lines.push(`# TYPE ${name} ${type}`)
  }
  switch (snapshot.type) {
    case "Counter":
      declare("counter")
      lines.push(`${name}${labels(attributes)} ${formatNumber(snapshot.state.count)}`)
      break
    case "Gauge":
      declare("gauge")
      lines.push(`${name}${labels(attributes)} ${formatNumber(snapshot.state.value)}`)
      break
    case "Histogram": {
      const state = snapshot.state
      declare("histogram")
      for (const [bound, count] of state.buckets) {
        lines.push(`${name}_bucket${labels(attributes, `le="${formatNumber(bound)}"`)} ${count}`)
      }
      if (!state.buckets.some(([bound]) => bound === Number.POSITIVE_INFINITY)) {
        lines.push(`${name}_bucket${labels(attributes, "le=\"+Inf\"")} ${state.count}`)
      }
      lines.push(`${name}_sum${labels(attributes)} ${formatNumber(state.sum)}`)
      lines.push(`${name}_count${labels(attributes)} ${state.count}`)
      break
    }
  }
}

/** Renders every hookrelay metric in the Prometheus text exposition format (version 0.0.4). */
export const renderPrometheus: Effect.Effect<string> = Effect.map(Metric.snapshot, (snapshot) => {
  const lines: Array<string> = []
  const typed = new Set<string>()
  const ours = snapshot
    .filter((metric) => metric.id.startsWith("hookrelay_"))
    .sort((a, b) => a.id.localeCompare(b.id))
  for (const metric of ours) renderSnapshot(metric, lines, typed)
  return `${lines.join("\n")}\n`
})

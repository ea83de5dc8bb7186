import { Effect, Metric, MetricState } from "effect"
import type { MetricPair } from "effect"

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")

const labels = (tags: ReadonlyArray<{ readonly key: string; readonly value: string }>, extra?: string) => {
  const parts = tags.map((tag) => `${tag.key}="${escapeLabel(tag.value)}"`)
  if (extra !== undefined) parts.push(extra)
  return parts.length === 0 ? "" : `{${parts.join(",")}}`
}

const formatNumber = (value: number | bigint) =>
  typeof value === "bigint" ? value.toString() : Number.isFinite(value) ? String(value) : value > 0 ? "+Inf" : "-Inf"

const renderPair = (pair: MetricPair.MetricPair.Untyped, lines: Array<string>, typed: Set<string>) => {
  const name = pair.metricKey.name
  const tags = pair.metricKey.tags
  const state = pair.metricState
  const declare = (type: string) => {
    if (typed.has(name)) return
    typed.add(name)
    const description = pair.metricKey.description
    if (description._tag === "Some") lines.push(`# HELP ${name} ${description.value}`)
    lines.push(`# TYPE ${name} ${type}`)
  }
  if (MetricState.isCounterState(state)) {
    declare("counter")
    lines.push(`${name}${labels(tags)} ${formatNumber(state.count)}`)
  } else if (MetricState.isGaugeState(state)) {
    declare("gauge")
    lines.push(`${name}${labels(tags)} ${formatNumber(state.value)}`)
  } else if (MetricState.isHistogramState(state)) {
    declare("histogram")
    for (const [bound, count] of state.buckets) {
      lines.push(`${name}_bucket${labels(tags, `le="${formatNumber(bound)}"`)} ${count}`)
    }
    if (!state.buckets.some(([bound]) => bound === Number.POSITIVE_INFINITY)) {
      lines.push(`${name}_bucket${labels(tags, "le=\"+Inf\"")} ${state.count}`)
    }
    lines.push(`${name}_sum${labels(tags)} ${formatNumber(state.sum)}`)
    lines.push(`${name}_count${labels(tags)} ${state.count}`)
  }
}

/** Renders every hookrelay metric in the Prometheus text exposition format (version 0.0.4). */
export const renderPrometheus: Effect.Effect<string> = Effect.map(Metric.snapshot, (snapshot) => {
  const lines: Array<string> = []
  const typed = new Set<string>()
  const ours = snapshot
    .filter((pair) => pair.metricKey.name.startsWith("hookrelay_"))
    .sort((a, b) => a.metricKey.name.localeCompare(b.metricKey.name))
  for (const pair of ours) renderPair(pair, lines, typed)
  return `${lines.join("\n")}\n`
})

import { describe, expect, it } from "@effect/vitest"
import { Effect, Metric } from "effect"
import {
  attemptsWithOutcome,
  backlogWithStatus,
  ingestCommitLatency,
  messagesIngested
} from "../../src/metrics/Metrics.js"
import { renderPrometheus } from "../../src/metrics/Prometheus.js"

/** The Prometheus text of /metrics (exposition format 0.0.4), over a registry of the test's own. */
describe("renderPrometheus", () => {
  it.effect("writes HELP and TYPE once per name, labels in their order, cumulative buckets ending at +Inf", () =>
    Effect.gen(function*() {
      yield* Metric.update(messagesIngested, 3)
      yield* Metric.update(attemptsWithOutcome("success"), 2)
      yield* Metric.update(attemptsWithOutcome("permanent"), 1)
      yield* Metric.update(backlogWithStatus("pending"), 4)
      yield* Metric.update(
        Metric.withAttributes(Metric.gauge("hookrelay_test_gauge"), { a: "x\"y\\z\nw", b: "2" }),
        1.5
      )
      yield* Metric.update(ingestCommitLatency, 0.003)
      yield* Metric.update(ingestCommitLatency, 20)
      yield* Metric.update(Metric.counter("other_total"), 1)
      expect(yield* renderPrometheus).toBe(
        [
          "# HELP hookrelay_attempts_total HTTP attempts to webhook URLs by outcome",
          "# TYPE hookrelay_attempts_total counter",
          "hookrelay_attempts_total{outcome=\"success\"} 2",
          "hookrelay_attempts_total{outcome=\"permanent\"} 1",
          "# HELP hookrelay_backlog_jobs Delivery jobs not yet finished",
          "# TYPE hookrelay_backlog_jobs gauge",
          "hookrelay_backlog_jobs{status=\"pending\"} 4",
          "# HELP hookrelay_ingest_commit_seconds Seconds from handing a request's messages to the store until they were committed",
          "# TYPE hookrelay_ingest_commit_seconds histogram",
          ...[
            ["0.0005", 0],
            ["0.001", 0],
            ["0.0025", 0],
            ["0.005", 1],
            ["0.01", 1],
            ["0.025", 1],
            ["0.05", 1],
            ["0.1", 1],
            ["0.25", 1],
            ["0.5", 1],
            ["1", 1],
            ["2.5", 1],
            ["5", 1],
            ["10", 1],
            ["+Inf", 2]
          ].map(([le, count]) => `hookrelay_ingest_commit_seconds_bucket{le="${le}"} ${count}`),
          "hookrelay_ingest_commit_seconds_sum 20.003",
          "hookrelay_ingest_commit_seconds_count 2",
          "# HELP hookrelay_messages_ingested_total Messages accepted by the tracking API or Relay.ingest",
          "# TYPE hookrelay_messages_ingested_total counter",
          "hookrelay_messages_ingested_total 3",
          "# TYPE hookrelay_test_gauge gauge",
          "hookrelay_test_gauge{a=\"x\\\"y\\\\z\\nw\",b=\"2\"} 1.5",
          ""
        ].join("\n")
      )
    }).pipe(Effect.provideService(Metric.MetricRegistry, new Map())))

  it.effect("writes nothing but a newline when no hookrelay metric was recorded", () =>
    Effect.gen(function*() {
      expect(yield* renderPrometheus).toBe("\n")
    }).pipe(Effect.provideService(Metric.MetricRegistry, new Map())))
})

import { Metric } from "effect"

/** Messages accepted by ingest (duplicates excluded). */
export const messagesIngested = Metric.counter("hookrelay_messages_ingested_total", {
  description: "Messages accepted by the tracking API or Relay.ingest",
  incremental: true
})

/** Jobs that reached a webhook. */
export const jobsDelivered = Metric.counter("hookrelay_jobs_delivered_total", {
  description: "Delivery jobs that one of their webhook URLs accepted",
  incremental: true
})

/** Jobs dead-lettered after every URL failed or ran out of window. */
export const jobsDead = Metric.counter("hookrelay_jobs_dead_total", {
  description: "Delivery jobs dead-lettered",
  incremental: true
})

/** Attempts, tagged by outcome (success, retryable, permanent). */
export const attempts = Metric.counter("hookrelay_attempts_total", {
  description: "HTTP attempts to webhook URLs by outcome",
  incremental: true
})

const attemptOutcomes = ["success", "retryable", "permanent", "aborted"] as const
// Labelled once, not once per attempt: each labelled metric caches its series key.
const attemptsByOutcome = Object.fromEntries(
  attemptOutcomes.map((outcome) => [outcome, Metric.withAttributes(attempts, { outcome })])
) as Record<(typeof attemptOutcomes)[number], typeof attempts>

export const attemptsWithOutcome = (outcome: (typeof attemptOutcomes)[number]) => attemptsByOutcome[outcome]

/** Time the dispatcher held its claims back while ingest saturated the process (`IngestPressure`). */
export const claimsHeldForIngest = Metric.counter("hookrelay_delivery_held_for_ingest_seconds_total", {
  description: "Seconds the dispatcher held its claims back while ingest saturated the event loop",
  incremental: true
})

/** Seconds from ingest to the receiver's 2xx. */
export const deliveryLatency = Metric.histogram("hookrelay_delivery_latency_seconds", {
  description: "Seconds from a message's receipt to its delivery",
  boundaries: Metric.boundariesFromIterable([
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    300,
    900,
    3600,
    14400
  ])
})

/** Seconds an ingest commit took: from handing a request's messages to the store until they were durably stored. */
export const ingestCommitLatency = Metric.histogram("hookrelay_ingest_commit_seconds", {
  description: "Seconds from handing a request's messages to the store until they were committed",
  boundaries: Metric.boundariesFromIterable([
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10
  ])
})

/** Jobs waiting or in flight, by status; set by the dispatcher's periodic count. */
export const backlog = Metric.gauge("hookrelay_backlog_jobs", { description: "Delivery jobs not yet finished" })

export const backlogWithStatus = (status: "pending" | "delivering" | "dead") =>
  Metric.withAttributes(backlog, { status })

/** Stored secrets decrypted: once per distinct stored value, so it moves when settings change, not per delivery. */
export const secretDecryptions = Metric.counter("hookrelay_secret_decryptions_total", {
  description: "Stored secrets decrypted (each distinct sealed value once per process)",
  incremental: true
})

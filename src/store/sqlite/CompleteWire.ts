import type { AttemptRecord, Completion } from "../Model.js"
import type { CompleteRequest } from "./SqliteRequests.js"

/**
 * A completion batch as it crosses to the SQLite thread: its numbers in one buffer, handed over without a copy, and
 * its texts in one flat array. Cloned as objects (a completion and an attempt record per job, each property written
 * with its name), serializing it was the largest part of the dispatcher's event loop after the HTTP client, and
 * deserializing it a cost of the SQLite thread per job as well (bench/NOTES.md, "Wire codecs to the thread").
 */
export interface CompleteWire {
  readonly owner: string
  readonly completions: number
  readonly attempts: number
  /** Per completion `completionNumbers` numbers, then per attempt `attemptNumbers`; `NaN` stands for none. */
  readonly numbers: Float64Array<ArrayBuffer>
  /** Per completion `completionTexts` texts, then per attempt `attemptTexts`. */
  readonly texts: Array<string | null>
}

// Per completion: kind, time (delivered or dead at, or next due), first attempt, a delivered job's creation time; job id,
// last error, endpoint state, a delivered job's source and destination.
const completionNumbers = 4
const completionTexts = 5
// Per attempt: attempt number, started at, duration, status code; job id, URL, error, outcome, response snippet.
const attemptNumbers = 4
const attemptTexts = 5

const delivered = 0
const retry = 1
const dead = 2

const orNaN = (value: number | null | undefined): number => value ?? NaN
const numberOrUndefined = (value: number): number | undefined => Number.isNaN(value) ? undefined : value
const numberOrNull = (value: number): number | null => Number.isNaN(value) ? null : value

// `null` is a state of its own (it is stored as the JSON `null`); only a missing state leaves the stored one alone.
const encodeState = (state: unknown): string | null => state === undefined ? null : JSON.stringify(state) ?? null
const decodeState = (text: string | null): unknown => text === null ? undefined : JSON.parse(text)

/** Encodes a batch (in the main thread); transfer `numbers.buffer` with the message. */
export const encodeComplete = (request: CompleteRequest): CompleteWire => {
  const { attempts, completions } = request
  const numbers = new Float64Array(completions.length * completionNumbers + attempts.length * attemptNumbers)
  const texts = new Array<string | null>(completions.length * completionTexts + attempts.length * attemptTexts)
  let n = 0
  let t = 0
  for (const completion of completions) {
    switch (completion._tag) {
      case "Delivered":
        numbers[n++] = delivered
        numbers[n++] = completion.at
        numbers[n++] = orNaN(completion.firstAttemptAt)
        numbers[n++] = orNaN(completion.createdAt)
        texts[t++] = completion.jobId
        texts[t++] = null
        break
      case "Retry":
        numbers[n++] = retry
        numbers[n++] = completion.nextDueAt
        numbers[n++] = completion.firstAttemptAt
        numbers[n++] = NaN
        texts[t++] = completion.jobId
        texts[t++] = completion.lastError
        break
      case "Dead":
        numbers[n++] = dead
        numbers[n++] = completion.at
        numbers[n++] = orNaN(completion.firstAttemptAt)
        numbers[n++] = NaN
        texts[t++] = completion.jobId
        texts[t++] = completion.lastError
        break
    }
    texts[t++] = encodeState(completion.endpointState)
    texts[t++] = completion._tag === "Delivered" ? completion.sourceId ?? null : null
    texts[t++] = completion._tag === "Delivered" ? completion.destinationId ?? null : null
  }
  for (const record of attempts) {
    numbers[n++] = record.attempt
    numbers[n++] = record.startedAt
    numbers[n++] = record.durationMs
    numbers[n++] = orNaN(record.statusCode)
    texts[t++] = record.jobId
    texts[t++] = record.url
    texts[t++] = record.error ?? null
    texts[t++] = record.outcome
    texts[t++] = record.responseSnippet ?? null
  }
  return { owner: request.owner, completions: completions.length, attempts: attempts.length, numbers, texts }
}

/** The batch of a wire (in the SQLite thread), completions and attempts in their order. */
export const decodeComplete = (wire: CompleteWire): CompleteRequest => {
  const { numbers, texts } = wire
  const completions = new Array<Completion>(wire.completions)
  const attempts = new Array<AttemptRecord>(wire.attempts)
  let n = 0
  let t = 0
  for (let i = 0; i < completions.length; i++) {
    const kind = numbers[n++]!
    const time = numbers[n++]!
    const first = numbers[n++]!
    const createdAt = numberOrUndefined(numbers[n++]!)
    const jobId = texts[t++]!
    const lastError = texts[t++] ?? null
    const endpointState = decodeState(texts[t++] ?? null)
    const sourceId = texts[t++] ?? undefined
    const destinationId = texts[t++] ?? undefined
    completions[i] = kind === delivered
      ? {
        _tag: "Delivered",
        jobId,
        at: time,
        firstAttemptAt: numberOrUndefined(first),
        endpointState,
        sourceId,
        destinationId,
        createdAt
      }
      : kind === retry
      ? { _tag: "Retry", jobId, nextDueAt: time, firstAttemptAt: first, endpointState, lastError }
      : { _tag: "Dead", jobId, at: time, lastError, firstAttemptAt: numberOrUndefined(first), endpointState }
  }
  for (let i = 0; i < attempts.length; i++) {
    attempts[i] = {
      attempt: numbers[n++]!,
      startedAt: numbers[n++]!,
      durationMs: numbers[n++]!,
      statusCode: numberOrNull(numbers[n++]!),
      jobId: texts[t++]!,
      url: texts[t++]!,
      error: texts[t++] ?? null,
      outcome: texts[t++] as AttemptRecord["outcome"],
      responseSnippet: texts[t++] ?? null
    }
  }
  return { owner: wire.owner, completions, attempts }
}

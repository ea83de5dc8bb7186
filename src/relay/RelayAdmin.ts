import { Clock, Duration, Effect, Option } from "effect"
import { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import { UnknownDestination } from "../domain/DestinationErrors.js"
import { destinationById } from "../domain/Destinations.js"
import { UnknownSource } from "../domain/IngestErrors.js"
import type { FieldIssue } from "../domain/Issues.js"
import { checkSource, type EgressPolicyShape } from "../network/EgressPolicy.js"
import type { DeadLettersShape } from "../store/DeadLetters.js"
import type { MessageLogShape } from "../store/MessageLog.js"
import type { OutboxSignalShape } from "../store/OutboxSignal.js"
import type { makeSourceCache } from "../store/SourceCache.js"
import type { SourcesShape } from "../store/Sources.js"
import { StoreError } from "../store/StoreError.js"
import type { StoreHealthShape } from "../store/StoreHealth.js"
import type { UsageShape } from "../store/Usage.js"
import {
  defaultUsageDays,
  maxSearchLimit,
  maxUsageDays,
  type RelayMessagesShape,
  type RelayShape,
  type RelaySourcesShape
} from "./Relay.js"
import { rotateSourceSecret, saveSource } from "./RelaySigning.js"

/** How long `/readyz` waits for the store's answer before it calls the store unreachable. */
export const readinessProbeTimeout = Duration.seconds(2)

type SourceCache = ReturnType<typeof makeSourceCache>

/** A source by id through the cache, or `UnknownSource`. */
export const requireSource = (sources: SourceCache) => (sourceId: string) =>
  Effect.flatMap(
    sources.byId(sourceId),
    Option.match({
      onNone: () => Effect.fail(new UnknownSource({ sourceId })),
      onSome: Effect.succeed
    })
  )

/** The sources' admin: write-key authentication and source CRUD, keeping the source cache true. */
export const makeSourceAdmin = (stored: SourcesShape, sources: SourceCache, egress: EgressPolicyShape) => {
  const authenticate: RelayShape["authenticate"] = (writeKey) =>
    Effect.flatMap(
      sources.byWriteKey(writeKey),
      Option.match({
        onNone: () => Effect.fail(new UnknownSource({})),
        onSome: (source) => Effect.succeed(source)
      })
    )

  // The SSRF guard's save-time check (REFERENCE §8) first: a refused endpoint URL stores nothing.
  const putSource: RelaySourcesShape["putSource"] = (source) =>
    Effect.andThen(
      checkSource(egress, source),
      Effect.flatMap(Clock.currentTimeMillis, (now) => saveSource(stored, source, now))
    ).pipe(
      Effect.tap(sources.invalidate())
    )

  const getSource: RelaySourcesShape["getSource"] = (sourceId) =>
    Effect.flatMap(
      stored.getSource(sourceId),
      Option.match({ onNone: () => Effect.fail(new UnknownSource({ sourceId })), onSome: Effect.succeed })
    )

  const deleteSource: RelaySourcesShape["deleteSource"] = (sourceId) =>
    Effect.flatMap(stored.deleteSource(sourceId), (deleted) =>
      deleted
        ? sources.invalidate()
        : Effect.fail(new UnknownSource({ sourceId })))

  const rotateSecret: RelaySourcesShape["rotateSecret"] = (sourceId, keepOldFor) =>
    Effect.tap(rotateSourceSecret(stored, sourceId, keepOldFor), sources.invalidate())

  return { authenticate, putSource, getSource, deleteSource, rotateSecret }
}

/** The admin's reads that take parameters (usage, message search), checked before the store is asked. */
export const makeQueries = (
  counts: UsageShape,
  messages: MessageLogShape,
  sourceById: ReturnType<typeof requireSource>
) => {
  const usage: RelayMessagesShape["usage"] = (sourceId, days = defaultUsageDays, destinationId) =>
    Effect.gen(function*() {
      if (!Number.isInteger(days) || days < 1 || days > maxUsageDays) {
        return yield* new InvalidAdminRequest({
          errors: [{ path: "days", message: `must be a whole number from 1 to ${maxUsageDays}` }]
        })
      }
      const source = yield* sourceById(sourceId)
      if (destinationId !== undefined && destinationById(source.destinations, destinationId) === undefined) {
        return yield* new UnknownDestination({ sourceId: source.id, destinationId })
      }
      return yield* counts.usage(source.id, yield* Clock.currentTimeMillis, days, destinationId)
    })

  const searchMessages: RelayMessagesShape["searchMessages"] = (search) =>
    Effect.gen(function*() {
      const errors: Array<FieldIssue> = []
      if (search.userId === undefined && search.sourceId === undefined) {
        errors.push({ path: "userId", message: "is required unless sourceId is given" })
      }
      if (search.userId === "") errors.push({ path: "userId", message: "must not be empty" })
      if (search.sourceId === "") errors.push({ path: "sourceId", message: "must not be empty" })
      if (!Number.isInteger(search.limit) || search.limit < 1 || search.limit > maxSearchLimit) {
        errors.push({ path: "limit", message: `must be a whole number from 1 to ${maxSearchLimit}` })
      }
      if (errors.length > 0) return yield* new InvalidAdminRequest({ errors })
      return yield* messages.searchMessages(search)
    })

  return { usage, searchMessages }
}

/**
 * Puts a dead letter back in the outbox as a due job, and wakes the dispatcher when it did. A dead letter whose
 * destination the source no longer has is refused (REFERENCE §1a): it would only die again.
 */
export const replayDeadLetter = (
  deadLetters: DeadLettersShape,
  messages: MessageLogShape,
  sources: SourcesShape,
  signal: OutboxSignalShape
): RelayMessagesShape["replayDeadLetter"] =>
(jobId) =>
  Effect.gen(function*() {
    const job = yield* messages.getJob(jobId)
    if (Option.isSome(job) && job.value.status === "dead") {
      const { destinationId, sourceId } = job.value
      const source = yield* sources.getSource(sourceId)
      if (Option.isNone(source) || destinationById(source.value.destinations, destinationId) === undefined) {
        return yield* new UnknownDestination({ sourceId, destinationId })
      }
    }
    const replayed = yield* deadLetters.replayDeadLetter(jobId, yield* Clock.currentTimeMillis)
    if (replayed) yield* signal.notify
    return replayed
  })

/** `/readyz`: a cheap read (a source id no source has) shows an unreachable store; a full one shows in the writes it refused. */
export const storeStatus = (sources: SourcesShape, health: StoreHealthShape): RelayShape["storeStatus"] =>
  sources.getSource("").pipe(
    Effect.timeout(readinessProbeTimeout),
    Effect.catchTag("TimeoutError", () =>
      health.observe(
        "getSource",
        new StoreError({
          operation: "getSource",
          cause: Object.assign(new Error("no answer"), { code: "ETIMEDOUT" })
        })
      )),
    Effect.ignore,
    Effect.andThen(health.status)
  )

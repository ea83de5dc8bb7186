import { Clock, Duration, Effect, Either, Layer, Metric, Option } from "effect"
import { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import * as Audiences from "../audiences/Audiences.js"
import { DeliveryOutcomes } from "../delivery/Outcomes.js"
import { validateBatch } from "../domain/Batch.js"
import { deliveredBody, encodeBody } from "../domain/DeliveredBody.js"
import { UnknownSource } from "../domain/IngestErrors.js"
import type { FieldIssue } from "../domain/Issues.js"
import { uuidv7 } from "../domain/MessageId.js"
import { skipReason } from "../domain/Routing.js"
import { stampMessage } from "../domain/Stamp.js"
import { ingestCommitLatency, messagesIngested } from "../metrics/Metrics.js"
import { checkSource, currentOrDefault as currentEgressPolicy } from "../network/EgressPolicy.js"
import { IngestAdmission } from "../overload/IngestAdmission.js"
import { IngestPressure } from "../overload/IngestPressure.js"
import type { EnqueueEntry } from "../store/Model.js"
import { OutboxSignal } from "../store/OutboxSignal.js"
import { makeSourceCache } from "../store/SourceCache.js"
import { Store } from "../store/Store.js"
import { StoreError } from "../store/StoreError.js"
import * as StoreHealth from "../store/StoreHealth.js"
import { defaultUsageDays, type IngestOptions, maxSearchLimit, maxUsageDays, Relay, type RelayShape } from "./Relay.js"

/** How long `/readyz` waits for the store's answer before it calls the store unreachable. */
export const readinessProbeTimeout = Duration.seconds(2)

export const make = Effect.gen(function*() {
  const observedStore = yield* Effect.serviceOption(StoreHealth.StoreHealth)
  // Built over a bare `Store` (not through `layerEngine`): this engine observes its own calls.
  const health = Option.isSome(observedStore) ? observedStore.value : yield* StoreHealth.make
  const store = Option.isSome(observedStore) ? yield* Store : StoreHealth.observed(yield* Store, health)
  const egress = yield* currentEgressPolicy
  const signal = yield* OutboxSignal
  const deliveryOutcomes = yield* DeliveryOutcomes
  const admission = yield* IngestAdmission
  // Tells the dispatcher (when the engine has one in this process) that ingest is busy; see `IngestPressure`.
  const ingesting = Option.match(yield* Effect.serviceOption(IngestPressure), {
    onNone: () => <A, E, R>(commit: Effect.Effect<A, E, R>) => commit,
    onSome: (pressure) => pressure.ingesting
  })
  const sources = makeSourceCache(store)
  const audiences = yield* Audiences.make()
  const clock = yield* Effect.clock

  // Recorded in a synchronous step on success (a failed commit is a 5xx, not a latency): an `Effect` metric update and a
  // timed span would add fiber steps to every tracking request (bench/NOTES.md, "Fiber steps of a tracking request").
  const timed = <A, E, R>(commit: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      const started = clock.unsafeCurrentTimeNanos()
      return Effect.map(commit, (result) => {
        ingestCommitLatency.unsafeUpdate(Number(clock.unsafeCurrentTimeNanos() - started) / 1e9, [])
        return result
      })
    })

  const sourceById = (sourceId: string) =>
    Effect.flatMap(
      sources.byId(sourceId),
      Option.match({
        onNone: () => Effect.fail(new UnknownSource({ sourceId })),
        onSome: Effect.succeed
      })
    )

  const ingest: RelayShape["ingest"] = (sourceId, items, options: IngestOptions = {}) =>
    Effect.gen(function*() {
      const source = yield* sourceById(sourceId)
      const messages = yield* Either.match(
        validateBatch(items, options.defaults, options.expectedType, options.sizeBound),
        {
          onLeft: Effect.fail,
          onRight: Effect.succeed
        }
      )
      const receivedAt = yield* Clock.currentTimeMillis
      const messageIds: Array<string> = []
      const entries: Array<EnqueueEntry> = messages.map((message) => {
        const stamped = stampMessage(message, {
          receivedAt,
          generatedMessageId: message.messageId ?? uuidv7(receivedAt),
          batchSentAt: options.batchSentAt
        })
        messageIds.push(stamped.messageId)
        const skipped = skipReason(source.webhooks, stamped)
        return {
          messageId: stamped.messageId,
          userId: stamped.userId,
          type: stamped.type,
          event: typeof stamped.event === "string" ? stamped.event : undefined,
          body: skipped === undefined ? encodeBody(deliveredBody(stamped)) : undefined,
          filtered: skipped === "filtered"
        }
      })
      // Refused (503) before the transaction starts when overloaded; never after it committed.
      const result = yield* admission.admit(
        ingesting(timed(store.enqueue(source.id, entries, receivedAt, { countApiCall: options.apiCall ?? false })))
      )
      if (result.jobsCreated > 0) yield* signal.notify
      yield* Metric.incrementBy(messagesIngested, result.accepted)
      return {
        accepted: messages.length,
        duplicates: result.duplicates,
        jobs: result.jobsCreated,
        messageIds
      }
    })

  const authenticate: RelayShape["authenticate"] = (writeKey) =>
    Effect.flatMap(
      sources.byWriteKey(writeKey),
      Option.match({
        onNone: () => Effect.fail(new UnknownSource({})),
        onSome: (source) => Effect.succeed(source)
      })
    )

  // The SSRF guard's save-time check (SPEC §8) first: a refused endpoint URL stores nothing.
  const putSource: RelayShape["putSource"] = (source) =>
    Effect.zipRight(
      checkSource(egress, source),
      Effect.flatMap(Clock.currentTimeMillis, (now) => store.upsertSource(source, now))
    ).pipe(
      Effect.zipLeft(sources.invalidate())
    )

  const usage: RelayShape["usage"] = (sourceId, days = defaultUsageDays) =>
    Effect.gen(function*() {
      if (!Number.isInteger(days) || days < 1 || days > maxUsageDays) {
        return yield* new InvalidAdminRequest({
          errors: [{ path: "days", message: `must be a whole number from 1 to ${maxUsageDays}` }]
        })
      }
      const source = yield* sourceById(sourceId)
      return yield* store.usage(source.id, yield* Clock.currentTimeMillis, days)
    })

  const searchMessages: RelayShape["searchMessages"] = (search) =>
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
      return yield* store.searchMessages(search)
    })

  const deleteSource: RelayShape["deleteSource"] = (sourceId) =>
    Effect.flatMap(store.deleteSource(sourceId), (deleted) =>
      deleted
        ? sources.invalidate()
        : Effect.fail(new UnknownSource({ sourceId })))

  return Relay.of({
    ingest,
    authenticate,
    putSource,
    getSource: (sourceId) =>
      Effect.flatMap(
        store.getSource(sourceId),
        Option.match({ onNone: () => Effect.fail(new UnknownSource({ sourceId })), onSome: Effect.succeed })
      ),
    listSources: store.listSources(),
    deleteSource,
    messageJobs: store.jobsForMessage,
    deadLetters: store.listDeadLetters,
    replayDeadLetter: (jobId) =>
      Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) => store.replayDeadLetter(jobId, now)),
        Effect.tap((replayed) => (replayed ? signal.notify : Effect.void))
      ),
    backlog: store.backlog(),
    usage,
    searchMessages,
    deleteUser: audiences.deleteUser,
    getDeletion: audiences.getDeletion,
    syncAudience: audiences.syncAudience,
    syncComputedTrait: audiences.syncComputedTrait,
    outcomes: deliveryOutcomes.stream,
    // A cheap read (a source id no source has) shows an unreachable store; a full one shows in the writes it refused.
    storeStatus: store.getSource("").pipe(
      Effect.timeout(readinessProbeTimeout),
      Effect.catchTag("TimeoutException", () =>
        health.observe(
          "getSource",
          new StoreError({
            operation: "getSource",
            cause: Object.assign(new Error("no answer"), { code: "ETIMEDOUT" })
          })
        )),
      Effect.ignore,
      Effect.zipRight(health.status)
    )
  })
})

/** The engine over the `Store` in context; the dispatcher is a layer of its own (`Dispatcher.layer`). */
export const layer = Layer.effect(Relay, make)

import { Clock, Effect, Either, Layer, Metric, Option } from "effect"
import * as Audiences from "../audiences/Audiences.js"
import { DeliveryOutcomes } from "../delivery/Outcomes.js"
import { validateBatch } from "../domain/Batch.js"
import { deliveredBody, encodeBody } from "../domain/DeliveredBody.js"
import { UnknownSource } from "../domain/IngestErrors.js"
import { uuidv7 } from "../domain/MessageId.js"
import { skipReason } from "../domain/Routing.js"
import { stampMessage } from "../domain/Stamp.js"
import { messagesIngested } from "../metrics/Metrics.js"
import type { EnqueueEntry } from "../store/Model.js"
import { OutboxSignal } from "../store/OutboxSignal.js"
import { makeSourceCache } from "../store/SourceCache.js"
import { Store } from "../store/Store.js"
import { type IngestOptions, Relay, type RelayShape } from "./Relay.js"

export const make = Effect.gen(function*() {
  const store = yield* Store
  const signal = yield* OutboxSignal
  const deliveryOutcomes = yield* DeliveryOutcomes
  const sources = makeSourceCache(store)
  const audiences = yield* Audiences.make()

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
      const messages = yield* Either.match(validateBatch(items, options.defaults, options.expectedType), {
        onLeft: Effect.fail,
        onRight: Effect.succeed
      })
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
          body: skipped === undefined ? encodeBody(deliveredBody(stamped)) : undefined
        }
      })
      const result = yield* store.enqueue(source.id, entries, receivedAt, { countApiCall: options.apiCall ?? false })
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

  const putSource: RelayShape["putSource"] = (source) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => store.upsertSource(source, now)).pipe(
      Effect.zipLeft(sources.invalidate())
    )

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
    deleteUser: audiences.deleteUser,
    getDeletion: audiences.getDeletion,
    syncAudience: audiences.syncAudience,
    syncComputedTrait: audiences.syncComputedTrait,
    outcomes: deliveryOutcomes.stream
  })
})

/** The engine over the `Store` in context; the dispatcher is a layer of its own (`Dispatcher.layer`). */
export const layer = Layer.effect(Relay, make)

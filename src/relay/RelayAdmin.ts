import { Clock, Duration, Effect, Option } from "effect"
import { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import { UnknownSource } from "../domain/IngestErrors.js"
import type { FieldIssue } from "../domain/Issues.js"
import { checkSource, type EgressPolicyShape } from "../network/EgressPolicy.js"
import type { StoreShape } from "../store/Model.js"
import type { OutboxSignalShape } from "../store/OutboxSignal.js"
import type { makeSourceCache } from "../store/SourceCache.js"
import { StoreError } from "../store/StoreError.js"
import type { StoreHealthShape } from "../store/StoreHealth.js"
import { defaultUsageDays, maxSearchLimit, maxUsageDays, type RelayShape } from "./Relay.js"
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
export const makeSourceAdmin = (store: StoreShape, sources: SourceCache, egress: EgressPolicyShape) => {
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
    Effect.andThen(
      checkSource(egress, source),
      Effect.flatMap(Clock.currentTimeMillis, (now) => saveSource(store, source, now))
    ).pipe(
      Effect.tap(sources.invalidate())
    )

  const getSource: RelayShape["getSource"] = (sourceId) =>
    Effect.flatMap(
      store.getSource(sourceId),
      Option.match({ onNone: () => Effect.fail(new UnknownSource({ sourceId })), onSome: Effect.succeed })
    )

  const deleteSource: RelayShape["deleteSource"] = (sourceId) =>
    Effect.flatMap(store.deleteSource(sourceId), (deleted) =>
      deleted
        ? sources.invalidate()
        : Effect.fail(new UnknownSource({ sourceId })))

  const rotateSecret: RelayShape["rotateSecret"] = (sourceId, keepOldFor) =>
    Effect.tap(rotateSourceSecret(store, sourceId, keepOldFor), sources.invalidate())

  return { authenticate, putSource, getSource, deleteSource, rotateSecret }
}

/** The admin's reads that take parameters (usage, message search), checked before the store is asked. */
export const makeQueries = (store: StoreShape, sourceById: ReturnType<typeof requireSource>) => {
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

  return { usage, searchMessages }
}

/** Puts a dead letter back in the outbox as a due job, and wakes the dispatcher when it did. */
export const replayDeadLetter =
  (store: StoreShape, signal: OutboxSignalShape): RelayShape["replayDeadLetter"] => (jobId) =>
    Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => store.replayDeadLetter(jobId, now)),
      Effect.tap((replayed) => (replayed ? signal.notify : Effect.void))
    )

/** `/readyz`: a cheap read (a source id no source has) shows an unreachable store; a full one shows in the writes it refused. */
export const storeStatus = (store: StoreShape, health: StoreHealthShape): RelayShape["storeStatus"] =>
  store.getSource("").pipe(
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

import { Clock, Effect, Option, Result } from "effect"
import { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import type { DeliveryOutcomesShape } from "../delivery/Outcomes.js"
import { destinationDeletedReason, UnknownDestination } from "../domain/DestinationErrors.js"
import { destinationById, settingsOf } from "../domain/Destinations.js"
import { UnknownSource } from "../domain/IngestErrors.js"
import type { FieldIssue } from "../domain/Issues.js"
import { type Destination, maxDestinations } from "../domain/Settings.js"
import { BlockedEndpoints, checkSource, type EgressPolicyShape } from "../network/EgressPolicy.js"
import type { makeSourceCache } from "../store/SourceCache.js"
import type { SourcesShape } from "../store/Sources.js"
import type { UsageShape } from "../store/Usage.js"
import { completeSigning, rotateDestinationSecret } from "./RelaySigning.js"
import type { RelayDestinationsShape, SavedDestination } from "./services/RelayDestinations.js"

/**
 * The SSRF guard's save-time check (REFERENCE §8) of one destination's endpoints, each refusal naming its field in the
 * destination's body (`endpoints[0].url`).
 */
const checkDestination = (egress: EgressPolicyShape, destination: Destination) =>
  checkSource(egress, { webhooks: settingsOf(destination) }).pipe(
    Effect.mapError((blocked) =>
      new BlockedEndpoints({
        errors: blocked.errors.map((issue): FieldIssue => ({ ...issue, path: issue.path.slice("webhooks.".length) }))
      })
    )
  )

const tooMany = new InvalidAdminRequest({
  errors: [{ path: "destinationId", message: `the source has ${maxDestinations} destinations, the most it may have` }]
})

/** `RelayDestinations` over the store, keeping the source cache true (REFERENCE §1a). */
export const makeDestinationAdmin = (
  stored: SourcesShape,
  cache: ReturnType<typeof makeSourceCache>,
  usage: UsageShape,
  egress: EgressPolicyShape,
  outcomes: DeliveryOutcomesShape
): RelayDestinationsShape => {
  const sourceOf = (sourceId: string) =>
    Effect.flatMap(
      stored.getSource(sourceId),
      Option.match({ onNone: () => Effect.fail(new UnknownSource({ sourceId })), onSome: Effect.succeed })
    )

  const listDestinations: RelayDestinationsShape["listDestinations"] = (sourceId) =>
    Effect.map(sourceOf(sourceId), (source) => source.destinations)

  const putDestination: RelayDestinationsShape["putDestination"] = (sourceId, destination) =>
    Effect.gen(function*() {
      yield* checkDestination(egress, destination)
      const now = yield* Clock.currentTimeMillis
      let outcome: Omit<SavedDestination, "destination"> = { created: false }
      const saved = yield* stored.changeDestinations(
        sourceId,
        now,
        (current): Result.Result<ReadonlyArray<Destination>, InvalidAdminRequest> => {
          const before = destinationById(current, destination.id)
          if (before === undefined && current.length >= maxDestinations) return Result.fail(tooMany)
          const completed = completeSigning(settingsOf(destination), before && settingsOf(before), now)
          const next: Destination = { id: destination.id, ...completed.webhooks }
          outcome = {
            created: before === undefined,
            ...(completed.generatedSecret !== undefined && { generatedSecret: completed.generatedSecret })
          }
          return Result.succeed(
            before === undefined ? [...current, next] : current.map((old) => old.id === next.id ? next : old)
          )
        }
      )
      if (Option.isNone(saved)) return yield* new UnknownSource({ sourceId })
      yield* cache.invalidate()
      return { ...outcome, destination: destinationById(saved.value.destinations, destination.id)! }
    })

  const deleteDestination: RelayDestinationsShape["deleteDestination"] = (sourceId, destinationId) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const deleted = yield* stored.deleteDestination(sourceId, destinationId, now, destinationDeletedReason)
      if (Option.isNone(deleted)) {
        yield* sourceOf(sourceId)
        return yield* new UnknownDestination({ sourceId, destinationId })
      }
      yield* cache.invalidate()
      // These dead letters are counted (REFERENCE §11) and reported on `Relay.outcomes` as the dispatcher's own are.
      const dead = deleted.value
      if (dead.length === 0) return
      yield* usage.addUsage(sourceId, now, { dead: dead.length }, destinationId)
      yield* outcomes.publishAll(dead.map((job) => ({
        jobId: job.jobId,
        sourceId,
        messageId: job.messageId,
        kind: job.kind,
        status: "dead" as const,
        at: now,
        error: destinationDeletedReason
      })))
    })

  const rotateSecret: RelayDestinationsShape["rotateSecret"] = (sourceId, destinationId, keepOldFor) =>
    Effect.tap(rotateDestinationSecret(stored, sourceId, destinationId, keepOldFor), cache.invalidate())

  return { listDestinations, putDestination, deleteDestination, rotateSecret }
}

import { Clock, Effect, Option, Result } from "effect"
import { deleteNotificationBody, encodeBody } from "../domain/DeliveredBody.js"
import { uuidv7 } from "../domain/MessageId.js"
import { deleteNoticeDestinations } from "../domain/Routing.js"
import type { DeletionRequestsShape } from "../store/DeletionRequests.js"
import type { JobStatus, StoredDeletion, StoredSource } from "../store/Model.js"
import type { OutboxSignalShape } from "../store/OutboxSignal.js"
import type { SourcesShape } from "../store/Sources.js"
import type { StoreError } from "../store/StoreError.js"
import { InvalidAdminRequest, UnknownDeletion, UnknownSources } from "./AudienceErrors.js"
import { validateIdList, validateUserId } from "./Input.js"

/** A recorded deletion request, as `deleteUser` returns it. */
export interface DeletionRequest {
  readonly id: string
  readonly userId: string
  /** The sources it covers (every source when the request named none). */
  readonly sourceIds: ReadonlyArray<string>
  /** Epoch milliseconds; also the `timestamp` of the delete notifications. */
  readonly createdAt: number
  /** The user's jobs removed before delivery (pending or dead). */
  readonly jobsRemoved: number
  /** One delete notification job per enabled destination of each covered source, in the source's order. */
  readonly notifications: ReadonlyArray<
    { readonly sourceId: string; readonly destinationId: string; readonly jobId: string }
  >
}

/** A notification's delivery status; `purged`: the job was finished and retention has removed it since. */
export type NotificationStatus = JobStatus | "purged"

/** A deletion request with its notifications' progress, as `getDeletion` returns it. */
export interface DeletionStatus extends Omit<DeletionRequest, "notifications"> {
  readonly notifications: ReadonlyArray<{
    readonly sourceId: string
    readonly destinationId: string
    readonly jobId: string
    readonly status: NotificationStatus
    readonly attempts: number
    /** When it was delivered or dead-lettered (epoch milliseconds). */
    readonly finishedAt: number | null
  }>
}

const statusView = (stored: StoredDeletion): DeletionStatus => ({
  id: stored.id,
  userId: stored.userId,
  sourceIds: stored.sourceIds,
  createdAt: stored.createdAt,
  jobsRemoved: stored.jobsRemoved,
  notifications: stored.notifications.map((notification) =>
    Option.match(notification.job, {
      onNone: () => ({
        sourceId: notification.sourceId,
        destinationId: notification.destinationId,
        jobId: notification.jobId,
        status: "purged" as const,
        attempts: 0,
        finishedAt: null
      }),
      onSome: (job) => ({
        sourceId: notification.sourceId,
        destinationId: notification.destinationId,
        jobId: notification.jobId,
        status: job.status,
        attempts: job.attemptCount,
        finishedAt: job.finishedAt
      })
    })
  )
})

/**
 * Deletion requests (REFERENCE §5) over the store and the outbox doorbell.
 *
 * `deleteUser` is one store transaction: it records the request, inserts one delete
 * notification job (kind `delete`, body exactly `{"type":"delete","userId","timestamp"}`) per
 * enabled destination of each covered source, whatever the destination subscribes to, and removes the user's jobs not delivered yet —
 * status `pending` or `dead`, with their attempts — from every covered source, enabled or not
 * (a disabled destination may be turned on again; the user's data must not be waiting for it).
 * Jobs in status `delivering` are left alone: a dispatcher holds their lease and is sending them
 * at this moment, so they may still reach the receiver, before or after the notification; a
 * delivering job that fails and is retried later is not removed either. Earlier delete
 * notifications are never removed. The user's audience memberships and computed-trait values in
 * the covered sources are forgotten too: the receiver deletes what it was told, so a later sync
 * that still lists the user tells it again. Without `sourceIds`, the request covers every source,
 * and undelivered jobs are removed whatever their source (also those of sources deleted since).
 * The notifications go through the outbox and the dispatcher like every job, under the normal
 * delivery rules; the doorbell rings after the commit.
 */
/** The store's services deletion requests use. */
export interface DeletionStores {
  readonly sources: SourcesShape
  readonly deletions: DeletionRequestsShape
}

export const makeDeletions = (stores: DeletionStores, signal: OutboxSignalShape) => {
  const deleteUser = (
    userIdInput: string,
    sourceIdsInput?: ReadonlyArray<string>
  ): Effect.Effect<DeletionRequest, InvalidAdminRequest | UnknownSources | StoreError> =>
    Effect.gen(function*() {
      const userId = validateUserId(userIdInput)
      const named = sourceIdsInput === undefined
        ? Result.succeed(undefined)
        : validateIdList(sourceIdsInput, "sourceIds", { max: 10_000, nonEmpty: true })
      const issues = [
        ...Result.isFailure(userId) ? userId.failure : [],
        ...Result.isFailure(named) ? named.failure : []
      ]
      if (Result.isFailure(userId) || Result.isFailure(named)) return yield* new InvalidAdminRequest({ errors: issues })

      const sources = yield* stores.sources.listSources()
      const byId = new Map(sources.map((source) => [source.id, source]))
      let covered: ReadonlyArray<StoredSource> = sources
      if (named.success !== undefined) {
        const unknown = named.success.filter((id) => !byId.has(id))
        if (unknown.length > 0) return yield* new UnknownSources({ sourceIds: unknown })
        covered = named.success.map((id) => byId.get(id)!)
      }

      const now = yield* Clock.currentTimeMillis
      const id = uuidv7(now)
      const body = encodeBody(deleteNotificationBody(userId.success, now))
      // The request's id is its notifications' message id: GET /admin/messages/{id} lists them too.
      const recorded = yield* stores.deletions.recordDeletion({
        id,
        userId: userId.success,
        sourceIds: covered.map((source) => source.id),
        everySource: named.success === undefined,
        notifications: covered.flatMap((source) =>
          deleteNoticeDestinations(source.destinations).map((destination) => ({
            sourceId: source.id,
            destinationId: destination.id,
            messageId: id,
            body
          }))
        )
      }, now)
      if (recorded.notifications.length > 0) yield* signal.notify
      return {
        id,
        userId: userId.success,
        sourceIds: covered.map((source) => source.id),
        createdAt: now,
        jobsRemoved: recorded.jobsRemoved,
        notifications: recorded.notifications
      }
    })

  const getDeletion = (id: string): Effect.Effect<DeletionStatus, UnknownDeletion | StoreError> =>
    Effect.flatMap(
      stores.deletions.getDeletion(id),
      Option.match({
        onNone: () => Effect.fail(new UnknownDeletion({ id })),
        onSome: (stored) => Effect.succeed(statusView(stored))
      })
    )

  return { deleteUser, getDeletion }
}

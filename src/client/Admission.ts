import * as Effect from "effect/Effect"
import type { Item } from "./Batcher.js"
import type { Prepared } from "./Calls.js"
import type { Enqueued } from "./ClientEngine.js"
import { ClientClosed } from "./ClientErrors.js"
import type { ClientOutcomes } from "./ClientOutcomes.js"
import type { End } from "./End.js"
import type { ResolvedOptions } from "./Options.js"
import type { RingQueue } from "./RingQueue.js"
import type { RoomWaiters } from "./RoomWaiters.js"
import { QueuedMessage, type Slabs } from "./Slabs.js"

const isMessage = (item: Item | End): item is QueuedMessage => item instanceof QueuedMessage

/** What admission works on: the engine's queue, its waiting calls, its slabs and outcomes. */
export interface AdmissionParts {
  readonly queue: RingQueue<Item | End>
  readonly waiters: RoomWaiters<QueuedMessage>
  readonly slabs: Slabs
  readonly outcomes: ClientOutcomes
}

/**
 * Puts an accepted call's message in the queue, or, when the queue is full (by count or bytes),
 * does what `overflow` and `dropPolicy` say: drop the oldest queued messages to make room, drop the
 * new one, or make the call wait for room. `isOpen` says whether the client still takes calls.
 */
export const makeAdmission = (
  options: ResolvedOptions,
  { outcomes, queue, slabs, waiters }: AdmissionParts,
  isOpen: () => boolean
) => {
  const { dropped, queued, refuseNow } = outcomes
  const closed = Effect.fail(new ClientClosed())

  // Oldest first, until the new message fits; flush requests keep their places.
  const makeRoom = (item: QueuedMessage): Effect.Effect<void> => {
    let logs: Effect.Effect<void> = Effect.void
    while (!queue.fits(item)) {
      const oldest = queue.removeFirst(isMessage) as QueuedMessage | undefined
      if (oldest === undefined) break
      const log = outcomes.droppedQueued(() => slabs.takeJson(oldest))
      slabs.release(oldest)
      logs = Effect.andThen(logs, log)
    }
    return logs
  }

  // A message waiting for room holds its slab bytes while it waits. If its fiber is interrupted,
  // they are not released (it may have been queued at that very moment): the slab is then not
  // reused, and the garbage collector frees it.
  const offerWhenRoom = (prepared: Prepared, item: QueuedMessage): Effect.Effect<void, ClientClosed> =>
    Effect.flatMap(queue.offer(item), (accepted) => {
      if (accepted) return queued(prepared).log
      slabs.release(item)
      return Effect.andThen(refuseNow(prepared.type, new ClientClosed()).log, closed)
    })

  const waitForRoom = (prepared: Prepared, item: QueuedMessage): Promise<void> =>
    waiters.wait(item).then((isQueued) => {
      if (isQueued) {
        queued(prepared) // counted as held; its log line is not run here (a Promise call runs no effect)
        return
      }
      slabs.release(item)
      throw refuseNow(prepared.type, new ClientClosed()).error
    })

  return (prepared: Prepared): Enqueued => {
    if (!isOpen()) return refuseNow(prepared.type, new ClientClosed())
    const item = slabs.store(prepared)
    // Behind calls already waiting for room, a message waits too: calls keep their order.
    if (!waiters.waiting() && queue.offerUnsafe(item)) return queued(prepared)
    if (options.overflow === "drop") {
      if (options.dropPolicy === "oldest") {
        const drops = makeRoom(item)
        if (queue.offerUnsafe(item)) {
          const accepted = queued(prepared)
          return { _tag: "Queued", log: Effect.andThen(drops, accepted.log) }
        }
      }
      slabs.release(item)
      return dropped(prepared)
    }
    // One of the two runs: `wait` for the Effect API, `waitPromise` for the Promise facade.
    return { _tag: "Wait", wait: offerWhenRoom(prepared, item), waitPromise: () => waitForRoom(prepared, item) }
  }
}

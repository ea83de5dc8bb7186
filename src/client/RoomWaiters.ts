import * as Effect from "effect/Effect"

/**
 * Promise-facade calls waiting for room in the full queue (`overflow: "backpressure"`), queued first
 * come, first served as takes make room. A waiting call costs a Promise and an entry here; as an
 * effect it cost a fiber, its fiber refs and a Deferred, which, under a burst at `flushAt: 20`,
 * lived long enough to be a large share of the client's promoted garbage (sampling heap profiler).
 */
export interface RoomWaiters<A> {
  /** Resolves `true` once `item` is queued, or `false` if the client closes first. */
  readonly wait: (item: A) => Promise<boolean>
  /** For the queue's `onRoom`: queues what fits, in a microtask (never inside the queue's take). */
  readonly onRoom: () => void
  /** Whether some call waits: a new message then waits behind it, so that calls keep their order. */
  readonly waiting: () => boolean
  /** Completes once no call waits any more. */
  readonly drained: Effect.Effect<void>
  /** Answers `false` to every waiting call and returns their items. */
  readonly refuseAll: () => ReadonlyArray<A>
}

interface Waiter<A> {
  readonly item: A
  readonly answer: (queued: boolean) => void
}

/** `offer` puts an item in the queue at once, or answers `false` when it is full. */
export const makeRoomWaiters = <A>(offer: (item: A) => boolean): RoomWaiters<A> => {
  let waiters: Array<Waiter<A>> = []
  let scheduled = false
  let onDrained: Array<() => void> = []

  const whenEmpty = () => {
    if (waiters.length > 0) return
    const listeners = onDrained
    onDrained = []
    for (const listener of listeners) listener()
  }

  const queueWhatFits = () => {
    scheduled = false
    let queued = 0
    while (queued < waiters.length && offer(waiters[queued]!.item)) queued++
    if (queued === 0) return
    const answered = waiters.slice(0, queued)
    waiters = waiters.slice(queued)
    for (const waiter of answered) waiter.answer(true)
    whenEmpty()
  }

  return {
    wait: (item) => new Promise<boolean>((answer) => waiters.push({ item, answer })),
    waiting: () => waiters.length > 0,
    onRoom: () => {
      if (waiters.length === 0 || scheduled) return
      scheduled = true
      queueMicrotask(queueWhatFits)
    },
    drained: Effect.callback<void>((resume) => {
      if (waiters.length === 0) return resume(Effect.void)
      onDrained.push(() => resume(Effect.void))
    }),
    refuseAll: () => {
      const refused = waiters
      waiters = []
      for (const waiter of refused) waiter.answer(false)
      whenEmpty()
      return refused.map((waiter) => waiter.item)
    }
  }
}

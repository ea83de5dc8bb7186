import type * as Arr from "effect/Array"
import * as Effect from "effect/Effect"

/**
 * The client's queue: a fixed ring of slots with back pressure. On Effect 3 the ring was the
 * backing store of Effect's own bounded queue; Effect 4's queue takes no backing store, so the few
 * operations the client uses are here, with the same behaviour: a take of up to `n` elements is one
 * array, an offer while a taker waits on the empty queue goes to it without taking a slot, and an
 * offer into a full queue waits for room behind the offers already waiting.
 */
export interface RingQueue<A> {
  /** Queues `element` at once: `false` when the queue is full or shut down. */
  readonly offerUnsafe: (element: A) => boolean
  /** Queues `element`, waiting for room behind the offers already waiting; `false` once shut down. */
  readonly offer: (element: A) => Effect.Effect<boolean>
  /** Offers each element in turn, waiting for room as `offer` does. */
  readonly offerAll: (elements: Iterable<A>) => Effect.Effect<void>
  /** Takes 1 to `max` elements, in order, waiting for the first. */
  readonly takeUpTo: (max: number) => Effect.Effect<Arr.NonEmptyReadonlyArray<A>>
  /** Elements in the ring now. */
  readonly size: () => number
  /** Offers are refused from now on; waiting offers are answered `false`, waiting takers interrupted. */
  readonly shutdown: Effect.Effect<void>
}

interface Putter<A> {
  readonly element: A
  readonly resume: (accepted: Effect.Effect<boolean>) => void
}

type Taker<A> = (taken: Effect.Effect<Arr.NonEmptyReadonlyArray<A>>) => void

const ignore = () => undefined

// A resumed fiber runs at once on the resumer's stack; it yields first, so that it goes on later, as
// Effect 3's queue resumed it, and never runs inside an offer or a take of this queue.
const later = <A>(value: A): Effect.Effect<A> => Effect.andThen(Effect.yieldNow, Effect.succeed(value))

/**
 * A bounded queue over a ring of `capacity` slots. `onRoom` is called, synchronously, each time a
 * take removes elements from the ring: it must not touch the queue at once (the queue is in the
 * middle of the take), only schedule work.
 */
export const boundedRing = <A>(capacity: number, onRoom: () => void = ignore): Effect.Effect<RingQueue<A>> =>
  Effect.sync(() => {
    const slots = new Array<A | undefined>(capacity)
    let head = 0
    let size = 0
    let open = true
    let putters: Array<Putter<A>> = []
    let takers: Array<Taker<A>> = []

    const push = (element: A) => {
      slots[(head + size) % capacity] = element
      size++
    }

    const takeOne = (): A => {
      const element = slots[head] as A
      slots[head] = undefined
      head = (head + 1) % capacity
      size--
      return element
    }

    // Room was made: waiting offers go in, first come, first served.
    const admitPutters = () => {
      let admitted = 0
      while (admitted < putters.length && size < capacity) push(putters[admitted++]!.element)
      if (admitted === 0) return
      const resumed = putters.slice(0, admitted)
      putters = putters.slice(admitted)
      for (const putter of resumed) putter.resume(later(true))
    }

    const offerUnsafe = (element: A): boolean => {
      if (!open) return false
      if (size === 0 && takers.length > 0) {
        takers.shift()!(later([element]))
        return true
      }
      if (size === capacity) return false
      push(element)
      return true
    }

    const offer = (element: A): Effect.Effect<boolean> =>
      Effect.suspend(() => {
        if (!open) return Effect.succeed(false)
        if (putters.length === 0 && offerUnsafe(element)) return Effect.succeed(true)
        return Effect.callback<boolean>((resume) => {
          const putter: Putter<A> = { element, resume }
          putters.push(putter)
          return Effect.sync(() => {
            putters = putters.filter((waiting) => waiting !== putter)
          })
        })
      })

    const takeUpTo = (max: number): Effect.Effect<Arr.NonEmptyReadonlyArray<A>> =>
      Effect.suspend(() => {
        if (size > 0) {
          const count = Math.min(max, size)
          const taken = new Array<A>(count)
          for (let index = 0; index < count; index++) taken[index] = takeOne()
          onRoom()
          admitPutters()
          return Effect.succeed(taken as unknown as Arr.NonEmptyReadonlyArray<A>)
        }
        if (!open) return Effect.interrupt
        return Effect.callback<Arr.NonEmptyReadonlyArray<A>>((resume) => {
          takers.push(resume)
          return Effect.sync(() => {
            takers = takers.filter((taker) => taker !== resume)
          })
        })
      })

    const shutdown = Effect.sync(() => {
      open = false
      const refused = putters
      const waiting = takers
      putters = []
      takers = []
      for (const putter of refused) putter.resume(later(false))
      for (const taker of waiting) taker(Effect.interrupt)
    })

    return {
      offerUnsafe,
      offer,
      offerAll: (elements) => Effect.forEach(elements, offer, { discard: true }),
      takeUpTo,
      size: () => size,
      shutdown
    }
  })

import type * as Arr from "effect/Array"
import * as Effect from "effect/Effect"

/**
 * The client's queue: a fixed ring of slots with back pressure, bounded by count and by weight (the
 * messages' bytes). On Effect 3 the ring was the backing store of Effect's own bounded queue;
 * Effect 4's queue takes no backing store, has no weight bound and drops only whole offers, so the
 * few operations the client uses are here: a take of up to `n` elements is one array, an offer while
 * a taker waits on the empty queue goes to it without taking a slot, an offer into a full queue
 * waits for room behind the offers already waiting, and the oldest element of a kind can be
 * removed to make room (`removeFirst`).
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
  /** The summed weight of the elements in the ring now. */
  readonly weight: () => number
  /** Whether `element` would fit now (count and weight). */
  readonly fits: (element: A) => boolean
  /** Removes and returns the oldest element that `matches`, if any (the elements before it keep their order). */
  readonly removeFirst: (matches: (element: A) => boolean) => A | undefined
  /** Takes every element in the ring at once, in order. */
  readonly takeAll: () => Array<A>
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

/** How much of the ring's weight bound an element uses. */
export type Weigh<A> = (element: A) => number

const weightless = () => 0

/**
 * A bounded queue over a ring of `capacity` slots, holding at most `maxWeight` of weight. `onRoom` is
 * called, synchronously, each time a take removes elements from the ring: it must not touch the
 * queue at once (the queue is in the middle of the take), only schedule work.
 */
export const boundedRing = <A>(
  capacity: number,
  onRoom: () => void = ignore,
  maxWeight = Infinity,
  weigh: Weigh<A> = weightless
): Effect.Effect<RingQueue<A>> =>
  Effect.sync(() => {
    const slots = new Array<A | undefined>(capacity)
    let head = 0
    let size = 0
    let weight = 0
    let open = true
    let putters: Array<Putter<A>> = []
    let takers: Array<Taker<A>> = []

    const fits = (element: A) => size < capacity && (size === 0 || weight + weigh(element) <= maxWeight)

    const push = (element: A) => {
      slots[(head + size) % capacity] = element
      size++
      weight += weigh(element)
    }

    const takeOne = (): A => {
      const element = slots[head] as A
      slots[head] = undefined
      head = (head + 1) % capacity
      size--
      weight -= weigh(element)
      return element
    }

    // Room was made: waiting offers go in, first come, first served.
    const admitPutters = () => {
      let admitted = 0
      while (admitted < putters.length && fits(putters[admitted]!.element)) push(putters[admitted++]!.element)
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
      if (!fits(element)) return false
      push(element)
      return true
    }

    const removeFirst = (matches: (element: A) => boolean): A | undefined => {
      let at = 0
      while (at < size && !matches(slots[(head + at) % capacity] as A)) at++
      if (at === size) return undefined
      const found = slots[(head + at) % capacity] as A
      // The elements before it move one slot up, so the ring's head moves past the hole.
      for (let index = at; index > 0; index--) {
        slots[(head + index) % capacity] = slots[(head + index - 1) % capacity]
      }
      slots[head] = undefined
      head = (head + 1) % capacity
      size--
      weight -= weigh(found)
      return found
    }

    const takeAll = (): Array<A> => {
      const taken = new Array<A>(size)
      for (let index = 0; index < taken.length; index++) taken[index] = takeOne()
      if (taken.length > 0) {
        onRoom()
        admitPutters()
      }
      return taken
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
      weight: () => weight,
      fits,
      removeFirst,
      takeAll,
      shutdown
    }
  })

import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"

/**
 * The backing store of the client's queue: a fixed ring of slots. Effect's default backing queue
 * (a linked list) builds each `pollUpTo` result by prepending one element at a time to a `Chunk`
 * and reversing it; for a batch of 100 that is hundreds of short-lived chunk nodes, and under a
 * burst V8 pretenures them into the old generation (measured with the sampling heap profiler: the
 * largest share of the client's promoted garbage). Here a poll of `n` elements is one array.
 */
class Ring<A> implements Queue.BackingQueue<A> {
  readonly [Queue.BackingQueueTypeId] = { _A: (value: A) => value }
  private readonly slots: Array<A | undefined>
  private head = 0
  private size = 0

  constructor(private readonly limit: number, private readonly onRoom: () => void) {
    this.slots = new Array<A | undefined>(limit)
  }

  poll<Def>(def: Def): A | Def {
    if (this.size === 0) return def
    const value = this.take()
    this.onRoom()
    return value
  }

  pollUpTo(limit: number): Chunk.Chunk<A> {
    const count = Math.min(limit, this.size)
    if (count === 0) return Chunk.empty()
    const values = new Array<A>(count)
    for (let index = 0; index < count; index++) values[index] = this.take()
    this.onRoom()
    return Chunk.unsafeFromArray(values)
  }

  private take(): A {
    const value = this.slots[this.head] as A
    this.slots[this.head] = undefined
    this.head = (this.head + 1) % this.limit
    this.size--
    return value
  }

  offerAll(elements: Iterable<A>): Chunk.Chunk<A> {
    const refused: Array<A> = []
    for (const element of elements) {
      if (!this.offer(element)) refused.push(element)
    }
    return Chunk.unsafeFromArray(refused)
  }

  offer(element: A): boolean {
    if (this.size === this.limit) return false
    this.slots[(this.head + this.size) % this.limit] = element
    this.size++
    return true
  }

  capacity(): number {
    return this.limit
  }

  length(): number {
    return this.size
  }
}

const ignore = () => undefined

/**
 * A bounded queue with back pressure, like `Queue.bounded`, over a ring of `capacity` slots.
 * `onRoom` is called, synchronously, each time a take removes elements: it must not touch the queue
 * at once (the queue is in the middle of the take), only schedule work.
 */
export const boundedRing = <A>(capacity: number, onRoom: () => void = ignore): Effect.Effect<Queue.Queue<A>> =>
  Queue.make(new Ring<A>(capacity, onRoom), Queue.backPressureStrategy())

/**
 * Tables for entries that come and go all the time and outlive none of their neighbours by much: the jobs the
 * dispatcher holds, the requests in flight, the answers awaited from the SQLite thread.
 *
 * Why not a `Map` or a `Set`: a long-lived one rehashes into a new backing table each time its deleted entries fill
 * it, and V8 keeps the obsolete table (for iterators), in the old generation once the map has lived a while, still
 * pointing at every entry it held then. A young-generation collection takes old garbage as live, so each of those
 * entries, and everything it references, survives and is promoted; only a full collection frees them. Every entry
 * lives through about one rehash, so in steady churn nearly every entry is promoted, through a `Map` as through
 * Effect's `MutableHashMap` (a `Map` inside; bench/results/runtime-parts.md). Here the only hash table maps keys to
 * small integers (nothing to keep) and the entries sit in an array whose slot is emptied when they leave.
 */

/** Entries addressed by the slot number `add` gave them; a freed slot is reused. */
export class Slots<V> {
  private readonly entries: Array<V | undefined> = []
  private readonly free: Array<number> = []
  private count = 0

  get size(): number {
    return this.count
  }

  /** Keeps `value` and returns its slot, which is its own until `take`. */
  add(value: V): number {
    const slot = this.free.length > 0 ? this.free.pop()! : this.entries.length
    this.entries[slot] = value
    this.count++
    return slot
  }

  get(slot: number): V | undefined {
    return this.entries[slot]
  }

  /** Empties the slot and returns what it held (undefined if it held nothing). */
  take(slot: number): V | undefined {
    const value = this.entries[slot]
    if (value === undefined) return undefined
    this.entries[slot] = undefined
    this.free.push(slot)
    this.count--
    return value
  }

  /** Calls `f` with each entry and its slot; `f` may `take` the slot it is given. */
  forEach(f: (value: V, slot: number) => void): void {
    const entries = this.entries
    for (let slot = 0; slot < entries.length; slot++) {
      const value = entries[slot]
      if (value !== undefined) f(value, slot)
    }
  }

  /** Empties every slot and returns what they held. */
  drain(): Array<V> {
    const values = this.values()
    this.entries.length = 0
    this.free.length = 0
    this.count = 0
    return values
  }

  /** What the slots hold now, as an array (safe to change the slots while going through it). */
  values(): Array<V> {
    const values: Array<V> = []
    for (const value of this.entries) if (value !== undefined) values.push(value)
    return values
  }
}

/** The subset of `Map` the dispatcher uses, over `Slots`. */
export class KeyedSlots<K, V> {
  private readonly slotOf = new Map<K, number>()
  private readonly slots = new Slots<V>()

  get size(): number {
    return this.slotOf.size
  }

  get(key: K): V | undefined {
    const slot = this.slotOf.get(key)
    return slot === undefined ? undefined : this.slots.get(slot)
  }

  has(key: K): boolean {
    return this.slotOf.has(key)
  }

  set(key: K, value: V): void {
    const slot = this.slotOf.get(key)
    if (slot !== undefined) this.slots.take(slot)
    this.slotOf.set(key, this.slots.add(value))
  }

  delete(key: K): boolean {
    const slot = this.slotOf.get(key)
    if (slot === undefined) return false
    this.slotOf.delete(key)
    this.slots.take(slot)
    return true
  }

  /** The keys now, as an array. */
  keys(): Array<K> {
    return [...this.slotOf.keys()]
  }

  /** The values now, as an array. */
  values(): Array<V> {
    return this.slots.values()
  }
}

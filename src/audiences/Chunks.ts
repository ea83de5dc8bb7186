/**
 * Consecutive pieces of at most `size` items, each a copy of its own range only. (`Array.chunksOf`
 * of effect 3.22 splits the rest of the array again at every step, copying the array's tail once
 * per chunk: garbage that grows with the square of a sync's size.)
 */
export function* chunks<A>(items: ReadonlyArray<A>, size: number): Generator<ReadonlyArray<A>> {
  const step = Math.max(1, Math.floor(size))
  for (let start = 0; start < items.length; start += step) yield items.slice(start, start + step)
}

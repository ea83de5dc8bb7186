/**
 * Consecutive pieces of at most `size` items, each a copy of its own range only. (`Array.chunksOf`
 * of effect 3.22 splits the rest of the array again at every step: for 100 000 ids in chunks of
 * 1 000 it copied ≈ 5 million slots, measured as 46 MB of garbage per sync.)
 */
export function* chunks<A>(items: ReadonlyArray<A>, size: number): Generator<ReadonlyArray<A>> {
  const step = Math.max(1, Math.floor(size))
  for (let start = 0; start < items.length; start += step) yield items.slice(start, start + step)
}

/**
 * Request-body buffers reused from batch to batch. A batch's body lives until its outcome: long
 * enough, under a burst, to be promoted to the old generation, where a fresh buffer per batch would
 * be freed only by a full collection (V8 lets external memory grow by 64 MB before forcing one).
 * At most `maxInFlight` bodies exist at once, so that many buffers are kept.
 */
export interface BodyPool {
  /** A buffer of at least `size` bytes, reused or new. */
  readonly acquire: (size: number) => Buffer
  /** Gives a buffer from `acquire` back once nothing reads it any more. */
  readonly release: (buffer: Buffer) => void
}

const smallestCapacity = 16 * 1024

/** The capacity allocated for `size` bytes: a power of two, so that close sizes share buffers. */
const capacityFor = (size: number): number => {
  let capacity = smallestCapacity
  while (capacity < size) capacity *= 2
  return capacity
}

export const makeBodyPool = (keep: number): BodyPool => {
  const kept: Array<Buffer> = []

  const acquire = (size: number): Buffer => {
    let best = -1
    for (let index = 0; index < kept.length; index++) {
      const length = kept[index]!.length
      if (length >= size && (best === -1 || length < kept[best]!.length)) best = index
    }
    if (best === -1) return Buffer.allocUnsafeSlow(capacityFor(size))
    const [buffer] = kept.splice(best, 1)
    return buffer!
  }

  const release = (buffer: Buffer) => {
    if (kept.length < keep) {
      kept.push(buffer)
      return
    }
    // Full: keep the larger buffers, which serve every size.
    let smallest = 0
    for (let index = 1; index < kept.length; index++) {
      if (kept[index]!.length < kept[smallest]!.length) smallest = index
    }
    if (kept[smallest]!.length < buffer.length) kept[smallest] = buffer
  }

  return { acquire, release }
}

import type { MessageType } from "../domain/Message.js"
import type { Prepared } from "./Calls.js"

/**
 * Queued messages' JSON, kept as bytes in a few reused off-heap slabs rather than as one string
 * per message on the V8 heap.
 *
 * Why: under a burst with `overflow: "backpressure"` the queue stays full, so every message sits
 * in it long enough to survive two scavenges and be promoted to the old generation. As strings,
 * that was old-generation garbage for every message (seen with the sampling heap profiler),
 * which V8 lets pile up to a multiple of the live heap before a full collection: most of the
 * client's peak RSS. As bytes in a slab, a message costs one small object on the heap, and the
 * slab is written again once every message in it has been copied into a batch body.
 */
export const slabBytes = 256 * 1024 // ≥ maxMessageBytes: a message never spans two slabs

/** Empty slabs kept for reuse; more are left to the garbage collector. */
const spareSlabs = 8

class Slab {
  readonly buffer = Buffer.allocUnsafeSlow(slabBytes)
  /** Bytes written from the start of `buffer`. */
  used = 0
  /** Messages written and not yet copied out or released. */
  pending = 0
}

/** A queued message: its bytes in a slab, until they are copied into a batch body. */
export class QueuedMessage {
  constructor(
    readonly type: MessageType,
    /** UTF-8 length of the message's JSON. */
    readonly bytes: number,
    /** Epoch ms of the call that queued it. */
    readonly calledAt: number,
    /** `undefined` once released: the bytes may already hold another message. */
    public slab: Slab | undefined,
    readonly offset: number
  ) {}
}

/** Writes messages into slabs and gets them back out. Not shared between clients. */
export interface Slabs {
  /** Copies the message's JSON into a slab. */
  readonly store: (prepared: Prepared) => QueuedMessage
  /** Copies the message's bytes to `target` at `at` and releases them; returns the bytes copied. */
  readonly copyOut: (message: QueuedMessage, target: Buffer, at: number) => number
  /** Gives the message's bytes up without reading them (a message that was never queued). Idempotent. */
  readonly release: (message: QueuedMessage) => void
  /** The message's JSON, and its bytes released (a message reported without being sent). */
  readonly takeJson: (message: QueuedMessage) => string
}

export const makeSlabs = (): Slabs => {
  const spare: Array<Slab> = []
  let current = new Slab()

  const recycle = (slab: Slab) => {
    slab.used = 0
    if (slab !== current && spare.length < spareSlabs) spare.push(slab)
  }

  const store = (prepared: Prepared): QueuedMessage => {
    if (current.used + prepared.bytes > slabBytes) {
      // The full slab is reused once its last message has been copied out (see `release`).
      const full = current
      current = spare.pop() ?? new Slab()
      if (full.pending === 0) recycle(full)
    }
    const slab = current
    const offset = slab.used
    slab.buffer.write(prepared.json, offset, prepared.bytes, "utf8")
    slab.used += prepared.bytes
    slab.pending++
    return new QueuedMessage(prepared.type, prepared.bytes, prepared.calledAt, slab, offset)
  }

  const release = (message: QueuedMessage) => {
    const slab = message.slab
    if (slab === undefined) return
    message.slab = undefined
    slab.pending--
    if (slab.pending === 0) recycle(slab)
  }

  const copyOut = (message: QueuedMessage, target: Buffer, at: number): number => {
    const slab = message.slab
    if (slab === undefined) throw new Error("a released message was read")
    const copied = slab.buffer.copy(target, at, message.offset, message.offset + message.bytes)
    release(message)
    return copied
  }

  const takeJson = (message: QueuedMessage): string => {
    const slab = message.slab
    if (slab === undefined) throw new Error("a released message was read")
    const json = slab.buffer.toString("utf8", message.offset, message.offset + message.bytes)
    release(message)
    return json
  }

  return { store, copyOut, release, takeJson }
}

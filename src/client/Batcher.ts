import type * as Arr from "effect/Array"
import type * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import * as Sink from "effect/Sink"
import type { BodyPool } from "./BodyPool.js"
import type { OutgoingMessage } from "./Outcome.js"
import type { QueuedMessage, Slabs } from "./Slabs.js"

/**
 * Asks the batcher to send what it holds now. `done`, when given, completes once every earlier
 * batch has its outcome (`flush()`); the flush timer's requests have none.
 */
export class FlushRequest {
  constructor(readonly done: Deferred.Deferred<void> | undefined) {}
}

/** The flush timer's request: `flushAfter` has passed since the last batch. */
export const timerFlush = new FlushRequest(undefined)

/** What the queue carries: messages, and flush requests between them. */
export type Item = QueuedMessage | FlushRequest

/** A batch as the batcher emits it (possibly empty). `bodyBytes` is the exact size of its request body. */
export interface Batch {
  readonly messages: Array<QueuedMessage>
  readonly flushRequests: Array<FlushRequest>
  bodyBytes: number
  /** The flush timer's request ended it (the timer may queue another). */
  timed: boolean
}

const prefix = "{\"batch\":["
const sentAtKey = "],\"sentAt\":\""
const suffix = "\"}"
/** `sentAt` is always `YYYY-MM-DDTHH:mm:ss.sssZ`. */
const sentAtLength = 24

/** Bytes of a request body around its messages: `{"batch":[`, `],"sentAt":"…"}`. */
export const envelopeBytes = prefix.length + sentAtKey.length + sentAtLength + suffix.length

const comma = 0x2c

/** Writes `]`, `"sentAt":"` and room for the time, then `"}` after the messages ending at `at`; returns the end. */
const writeEnvelopeEnd = (storage: Buffer, at: number): number => {
  at += storage.write(sentAtKey, at, "latin1")
  at += sentAtLength // written by `stamp`
  return at + storage.write(suffix, at, "latin1")
}

/**
 * A batch's request body, `{"batch":[…],"sentAt":"…"}`, in a buffer of the `BodyPool`. The messages'
 * bytes are copied in once; each attempt writes its own `sentAt` in place (`stamp`), so that the
 * server's clock-skew correction stays right on retries. Each message's place and call time are
 * kept, so that the messages past `retryFor` can be taken out before an attempt.
 */
export class BatchBody {
  /** The body: the first bytes of `storage`. */
  bytes: Buffer
  constructor(
    /** The pooled buffer the body is written in; give it back to the pool after the outcome. */
    readonly storage: Buffer,
    length: number,
    public count: number,
    /** The order the batcher made it in: during an outage the oldest batch is the probe. */
    readonly seq: number,
    /** Where each message starts in `storage`, and its length. */
    private readonly starts: Uint32Array,
    private readonly lengths: Uint32Array,
    /** Epoch ms of each message's call. */
    private readonly calledAt: Float64Array
  ) {
    this.bytes = storage.subarray(0, length)
  }

  /** Writes `sentAt` (always 24 characters) into the body and returns the body. */
  stamp(sentAt: string): Buffer {
    this.bytes.write(sentAt, this.bytes.length - suffix.length - sentAtLength, sentAtLength, "latin1")
    return this.bytes
  }

  /** The messages as sent, parsed back from the body (for outcomes, when someone observes them). */
  messages(): Array<OutgoingMessage> {
    // From `[` to `]`: the `sentAt` is not written before the first attempt.
    const close = this.bytes.length - suffix.length - sentAtLength - sentAtKey.length
    return JSON.parse(this.storage.toString("utf8", prefix.length - 1, close + 1)) as Array<OutgoingMessage>
  }

  /**
   * Takes the messages called before `cutoff` out of the body and returns their JSON; the others
   * keep their order, moved up in the same buffer.
   */
  removeCalledBefore(cutoff: number): Array<string> {
    const removed: Array<string> = []
    let kept = 0
    let at = prefix.length
    for (let index = 0; index < this.count; index++) {
      const start = this.starts[index]!
      const length = this.lengths[index]!
      if (this.calledAt[index]! < cutoff) {
        removed.push(this.storage.toString("utf8", start, start + length))
        continue
      }
      if (kept > 0) this.storage[at++] = comma
      this.storage.copyWithin(at, start, start + length)
      this.starts[kept] = at
      this.lengths[kept] = length
      this.calledAt[kept] = this.calledAt[index]!
      at += length
      kept++
    }
    if (removed.length > 0) {
      this.count = kept
      this.bytes = this.storage.subarray(0, writeEnvelopeEnd(this.storage, at))
    }
    return removed
  }
}

/** Writes the batch's body, copying each message's bytes out of its slab (which releases them). */
export const writeBatchBody = (batch: Batch, slabs: Slabs, pool: BodyPool, seq: number): BatchBody => {
  const storage = pool.acquire(batch.bodyBytes)
  let at = storage.write(prefix, 0, "latin1")
  const messages = batch.messages
  const count = messages.length
  const starts = new Uint32Array(count)
  const lengths = new Uint32Array(count)
  const calledAt = new Float64Array(count)
  for (let index = 0; index < count; index++) {
    if (index > 0) storage[at++] = comma
    const message = messages[index]!
    starts[index] = at
    calledAt[index] = message.calledAt
    lengths[index] = slabs.copyOut(message, storage, at)
    at += lengths[index]!
  }
  return new BatchBody(storage, writeEnvelopeEnd(storage, at), count, seq, starts, lengths, calledAt)
}

/**
 * Folds queued items into one batch and ends it as soon as it holds `flushAt()` messages, when a
 * flush request arrives (`flush()` or the timer), or before a message that would take the request
 * body past `maxRequestBytes` (that message starts the next batch: it is handed back as a leftover).
 *
 * Effect's folding sinks (`Sink.fold`) decide once an element is folded in: the message that takes
 * the body past `maxRequestBytes` would already be in the batch, and a flush request ends it as it stands.
 */
export const batchSink = (flushAt: () => number, maxRequestBytes: number): Sink.Sink<Batch, Item, Item> =>
  Sink.fromTransform((upstream) => {
    const batch: Batch = { messages: [], flushRequests: [], bodyBytes: envelopeBytes, timed: false }
    const finish = (input: Arr.NonEmptyReadonlyArray<Item>, from: number): Effect.Effect<Sink.End<Batch, Item>> =>
      Effect.succeed(
        from < input.length ? [batch, input.slice(from) as unknown as Arr.NonEmptyReadonlyArray<Item>] : [batch]
      )
    const fold = (input: Arr.NonEmptyReadonlyArray<Item>): Effect.Effect<Sink.End<Batch, Item>> => {
      for (let index = 0; index < input.length; index++) {
        const item = input[index]!
        if (item instanceof FlushRequest) {
          if (item.done !== undefined) batch.flushRequests.push(item)
          else batch.timed = true
          return finish(input, index + 1)
        }
        const cost = batch.messages.length === 0 ? item.bytes : item.bytes + 1
        if (batch.messages.length > 0 && batch.bodyBytes + cost > maxRequestBytes) return finish(input, index)
        batch.messages.push(item)
        batch.bodyBytes += cost
        if (batch.messages.length >= flushAt()) return finish(input, index + 1)
      }
      return loop
    }
    // The end of the input ends the batch as it is.
    const ended: Effect.Effect<Sink.End<Batch, Item>> = Effect.succeed([batch])
    const next = Pull.catchDone(upstream, () => Effect.succeed(undefined))
    const loop: Effect.Effect<Sink.End<Batch, Item>> = Effect.flatMap(
      next,
      (input) => input === undefined ? ended : fold(input)
    )
    return loop
  })

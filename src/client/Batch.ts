import { Channel, Chunk, type Deferred, Sink } from "effect"
import type { Prepared } from "./Calls.js"

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
export type Item = Prepared | FlushRequest

/** A batch as the batcher emits it (possibly empty). `bodyBytes` is the exact size of its request body. */
export interface Batch {
  readonly messages: Array<Prepared>
  readonly flushRequests: Array<FlushRequest>
  bodyBytes: number
}

const prefix = "{\"batch\":["
const sentAtKey = "],\"sentAt\":\""
const suffix = "\"}"
/** `sentAt` is always `YYYY-MM-DDTHH:mm:ss.sssZ`. */
const sentAtLength = 24

/** Bytes of a request body around its messages: `{"batch":[`, `],"sentAt":"…"}`. */
export const envelopeBytes = prefix.length + sentAtKey.length + sentAtLength + suffix.length

/**
 * The request body `{"batch":[…],"sentAt":"…"}`, from the messages' JSON computed when they were
 * queued. Joined once into a flat string: appending piece by piece makes a rope that the socket
 * write (and `Buffer.byteLength`) flattens into a second copy.
 */
export const encodeBatch = (messages: ReadonlyArray<Prepared>, sentAt: string): string => {
  const last = messages.length - 1
  if (last < 0) return prefix + sentAtKey + sentAt + suffix
  const parts = new Array<string>(messages.length)
  for (let index = 0; index <= last; index++) parts[index] = messages[index]!.json
  parts[0] = prefix + parts[0]
  parts[last] = parts[last] + sentAtKey + sentAt + suffix
  return parts.join(",")
}

/**
 * Folds queued items into one batch and ends it as soon as it holds `flushAt` messages, when a
 * flush request arrives (`flush()` or the timer), or before a message that would take the request
 * body past `maxRequestBytes` (that message starts the next batch: it is handed back as a leftover).
 *
 * `Sink.foldWeighted` would do for the bytes, but it only ends on an element that overflows, so a
 * batch of exactly `flushAt` messages would wait for the next message or the timer.
 */
export const batchSink = (flushAt: number, maxRequestBytes: number): Sink.Sink<Batch, Item, Item> =>
  Sink.fromChannel(Channel.suspend(() => {
    const batch: Batch = { messages: [], flushRequests: [], bodyBytes: envelopeBytes }
    const finish = (leftovers: Chunk.Chunk<Item>) =>
      Chunk.isEmpty(leftovers)
        ? Channel.succeed(batch)
        : Channel.zipRight(Channel.write(leftovers), Channel.succeed(batch))
    const loop: Channel.Channel<Chunk.Chunk<Item>, Chunk.Chunk<Item>, never, never, Batch, unknown> = Channel.readWith({
      onInput: (input: Chunk.Chunk<Item>) => {
        for (let index = 0; index < input.length; index++) {
          const item = Chunk.unsafeGet(input, index)
          if (item instanceof FlushRequest) {
            if (item.done !== undefined) batch.flushRequests.push(item)
            return finish(Chunk.drop(input, index + 1))
          }
          const cost = batch.messages.length === 0 ? item.bytes : item.bytes + 1
          if (batch.messages.length > 0 && batch.bodyBytes + cost > maxRequestBytes) {
            return finish(Chunk.drop(input, index))
          }
          batch.messages.push(item)
          batch.bodyBytes += cost
          if (batch.messages.length >= flushAt) return finish(Chunk.drop(input, index + 1))
        }
        return loop
      },
      onFailure: (error: never) => Channel.fail(error),
      onDone: () => Channel.succeed(batch)
    })
    return loop
  }))

import * as Cause from "effect/Cause"
import type * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type { MessageType } from "../domain/Message.js"
import { engineLayer } from "./Analytics.js"
import type { AliasParams, GroupParams, IdentifyParams, PageParams, ScreenParams, TrackParams } from "./Calls.js"
import { Engine, type EngineShape } from "./ClientEngine.js"
import { ClientClosed } from "./ClientErrors.js"
import { type AnalyticsOptions, resolveOptions } from "./Options.js"

/**
 * The client for plain Node code: the same calls as the `Analytics` service, returning Promises.
 *
 * A call's Promise settles as soon as the message is queued (or refused): it resolves, or
 * rejects with `InvalidMessage`, `MessageTooLarge` or `ClientClosed` — so `await` it or attach
 * a `.catch`, or an invalid call becomes an unhandled rejection. A message dropped because the
 * queue is full does not reject: it is reported to `onOutcome` (and logged under
 * `DEBUG=analytics`). Delivery is reported to `onOutcome` too.
 *
 * The client keeps a timer and connections open: call `close()` before the process should exit.
 */
export interface Client {
  readonly identify: (params: IdentifyParams) => Promise<void>
  readonly track: (params: TrackParams) => Promise<void>
  readonly page: (params: PageParams) => Promise<void>
  readonly screen: (params: ScreenParams) => Promise<void>
  readonly group: (params: GroupParams) => Promise<void>
  readonly alias: (params: AliasParams) => Promise<void>
  /** Sends what is queued and resolves when every message queued before it has its outcome. */
  readonly flush: () => Promise<void>
  /**
   * Sends everything queued, waits for the batches in flight, then releases the connections.
   * Later calls reject with `ClientClosed`. Calling it again returns the same Promise.
   */
  readonly close: () => Promise<void>
}

const resolved = Promise.resolve()

/**
 * Creates a {@link Client}. Throws `InvalidOptions` at once when an option is wrong. One
 * `ManagedRuntime` runs the client for its whole life. A call runs no fiber: it is validated,
 * stamped and queued synchronously; a call that must wait for room (`overflow: "backpressure"`)
 * waits on a Promise; only reporting a drop runs an effect on the runtime.
 */
export const createClient = (options: AnalyticsOptions): Client => {
  const checked = resolveOptions(options)
  if (Either.isLeft(checked)) throw checked.left
  const runtime = ManagedRuntime.make(engineLayer(checked.right))
  let engine: EngineShape | undefined
  let closing: Promise<void> | undefined
  const ready = runtime.runPromise(Engine).then((built) => {
    engine = built
    return built
  })
  // A failed start is reported by every call; do not let it surface as an unhandled rejection too.
  ready.catch(() => undefined)

  const settle = <E>(exit: Exit.Exit<void, E>): Promise<void> =>
    Exit.isSuccess(exit) ? resolved : Promise.reject(Cause.squash(exit.cause))

  const run = <E>(effect: Effect.Effect<void, E>): Promise<void> => runtime.runPromiseExit(effect).then(settle)

  const enqueue = (built: EngineShape, type: MessageType, params: object): Promise<void> => {
    if (built.debug) return run(built.analytics[type](params as never))
    const enqueued = built.enqueueNow(type, params)
    switch (enqueued._tag) {
      case "Queued":
        return resolved
      case "Dropped":
        runtime.runFork(enqueued.report)
        return resolved
      case "Wait":
        return enqueued.waitPromise()
      case "Refused":
        return Promise.reject(enqueued.error)
    }
  }

  const call = <P extends object>(type: MessageType) => (params: P): Promise<void> => {
    if (closing !== undefined) return Promise.reject(new ClientClosed())
    if (engine !== undefined) return enqueue(engine, type, params)
    return ready.then((built) => enqueue(built, type, params))
  }

  return {
    identify: call<IdentifyParams>("identify"),
    track: call<TrackParams>("track"),
    page: call<PageParams>("page"),
    screen: call<ScreenParams>("screen"),
    group: call<GroupParams>("group"),
    alias: call<AliasParams>("alias"),
    flush: () => {
      if (closing !== undefined) return Promise.reject(new ClientClosed())
      return ready.then((built) => run(built.analytics.flush))
    },
    close: () => {
      closing ??= runtime.dispose()
      return closing
    }
  }
}

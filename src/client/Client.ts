import { Cause, Effect, Either, Exit, Fiber, ManagedRuntime, Runtime } from "effect"
import { Analytics, type AnalyticsShape, type CallError, layer } from "./Analytics.js"
import type { AliasParams, GroupParams, IdentifyParams, PageParams, ScreenParams, TrackParams } from "./Calls.js"
import { ClientClosed } from "./Errors.js"
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
 * `ManagedRuntime` runs the client for its whole life; calls run on it synchronously when they
 * can (a call only waits with `overflow: "backpressure"` and a full queue).
 */
export const createClient = (options: AnalyticsOptions): Client => {
  const checked = resolveOptions(options)
  if (Either.isLeft(checked)) throw checked.left
  const runtime = ManagedRuntime.make(layer(options))
  let service: AnalyticsShape | undefined
  let closing: Promise<void> | undefined
  const ready = runtime.runPromise(Analytics).then((built) => {
    service = built
    return built
  })
  // A failed start is reported by every call; do not let it surface as an unhandled rejection too.
  ready.catch(() => undefined)

  const settle = <E>(exit: Exit.Exit<void, E>): Promise<void> =>
    Exit.isSuccess(exit) ? resolved : Promise.reject(Cause.squash(exit.cause))

  const run = <E>(effect: Effect.Effect<void, E>): Promise<void> => {
    const exit = runtime.runSyncExit(effect)
    if (Exit.isFailure(exit) && Cause.isDieType(exit.cause) && Runtime.isAsyncFiberException(exit.cause.defect)) {
      // The call had to wait (backpressure): its fiber goes on; settle when it ends.
      return runtime.runPromiseExit(Fiber.join(exit.cause.defect.fiber as Fiber.Fiber<void, E>)).then(settle)
    }
    return settle(exit)
  }

  const call =
    <P>(method: (analytics: AnalyticsShape) => (params: P) => Effect.Effect<void, CallError>) =>
    (params: P): Promise<void> => {
      if (closing !== undefined) return Promise.reject(new ClientClosed())
      if (service !== undefined) return run(method(service)(params))
      return ready.then((built) => run(method(built)(params)))
    }

  return {
    identify: call((analytics) => analytics.identify),
    track: call((analytics) => analytics.track),
    page: call((analytics) => analytics.page),
    screen: call((analytics) => analytics.screen),
    group: call((analytics) => analytics.group),
    alias: call((analytics) => analytics.alias),
    flush: () => {
      if (closing !== undefined) return Promise.reject(new ClientClosed())
      return ready.then((built) => run(built.flush))
    },
    close: () => {
      closing ??= runtime.dispose()
      return closing
    }
  }
}

import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import type { MessageType } from "../domain/Message.js"
import { engineLayer } from "./Analytics.js"
import type {
  AliasParams,
  GroupParams,
  IdentifyParams,
  PageParams,
  Prepared,
  ScreenParams,
  TrackParams
} from "./Calls.js"
import { prepareMessage } from "./Calls.js"
import { Engine, type EngineShape, type Enqueued } from "./ClientEngine.js"
import { type CallError, ClientClosed } from "./ClientErrors.js"
import { type AnalyticsOptions, resolveOptions, toDuration } from "./Options.js"
import { notifyOutcome, Outcome } from "./Outcome.js"
import type { ClientStats } from "./Status.js"

/** Options of `close`. */
export interface CloseOptions {
  /** How long to keep sending what is queued: milliseconds or a `Duration`. Default: the client's `closeTimeout` (30 s). */
  readonly timeout?: Duration.Input | undefined
}

/**
 * The client for plain Node code: the same calls as the `Analytics` service, returning Promises.
 *
 * The order of calls is the contract: every call made before `flush()` or `close()` — awaited or
 * not, made before the client had finished starting or not — is part of what that `flush()` or
 * `close()` sends and waits for. Only calls made after `close()` are refused.
 *
 * A call validates and stamps its message at once and queues it; its Promise resolves once the
 * message is queued. A refused call (`InvalidMessage` naming the field, `MessageTooLarge`,
 * `ClientClosed`) rejects its Promise for a caller who awaits it, and is reported to `onOutcome`
 * as a `Refused` outcome — which is how a caller who does not await sees it. The client's
 * Promises never become unhandled rejections: not awaiting a call cannot crash the process. A
 * message dropped because the queue is full does not reject: it is reported to `onOutcome` as
 * `Dropped`. Delivery (`Success`, `Failure`) is reported to `onOutcome` too.
 *
 * The client keeps a timer and connections open: call `close()` before the process should exit.
 */
export interface Client {
  readonly identify: (params: IdentifyParams) => Promise<void>
  readonly track: (params: TrackParams) => Promise<void>
  /** The page's fields go in `properties`, or in `traits` (the same thing, sent as `properties`). */
  readonly page: (params: PageParams) => Promise<void>
  readonly screen: (params: ScreenParams) => Promise<void>
  readonly group: (params: GroupParams) => Promise<void>
  readonly alias: (params: AliasParams) => Promise<void>
  /**
   * Sends what is queued and resolves when every call made before it has its outcome. Never
   * rejects; after `close()` it resolves when the close does.
   */
  readonly flush: () => Promise<void>
  /**
   * Sends everything the calls before it queued, waits for the batches in flight, then releases
   * the connections. It waits at most `timeout` (default `closeTimeout`, 30 s): what is still
   * queued then (the server is down, say) is reported as `Failure` outcomes (`reason: "Closed"`)
   * and the Promise resolves. Later calls reject with `ClientClosed`. Calling it again returns the
   * same Promise. Never rejects.
   */
  readonly close: (options?: CloseOptions) => Promise<void>
  /** Messages held now (queued or being sent), and the running totals delivered, dropped and failed. */
  readonly stats: () => ClientStats
}

/** A call or flush made before the engine had started, in the order made. */
interface Parked {
  readonly run: (built: EngineShape) => Promise<void>
  readonly resolve: () => void
  readonly reject: (error: unknown) => void
}

const resolved = Promise.resolve()
const ignore = () => undefined

/** The Promise as returned, marked handled: a caller who ignores it cannot get an unhandled rejection. */
const handled = (promise: Promise<void>): Promise<void> => {
  promise.catch(ignore)
  return promise
}

const rejected = (error: CallError): Promise<void> => handled(Promise.reject(error))

/**
 * Creates a {@link Client}. Throws `InvalidOptions` at once when an option is wrong. The engine's
 * layer is built in a scope of the client's own, which `close()` closes. A call runs no fiber: it
 * is validated, stamped and queued synchronously; until the engine has started, calls and flushes
 * wait in order in a list that the start empties into the queue before anything else; a call that
 * must wait for room (`overflow: "backpressure"`) waits on a Promise.
 */
export const createClient = (options: AnalyticsOptions): Client => {
  const checked = resolveOptions(options)
  if (Result.isFailure(checked)) throw checked.failure
  const onOutcome = checked.success.onOutcome
  // Effects run at the edge on Effect's default services, each in a fiber that closing the scope does
  // not interrupt (a `ManagedRuntime` would: a flush made before `close()` must end with its batches).
  const scope = Scope.makeUnsafe()
  // The clock the engine uses (Effect's default services).
  const clock = Clock.Clock.defaultValue()
  let engine: EngineShape | undefined
  let parked: Array<Parked> = []
  let closing: Promise<void> | undefined

  const started = Effect.runPromise(Layer.buildWithScope(engineLayer(checked.success), scope)).then((context) => {
    const built = Context.get(context, Engine)
    engine = built
    const waiting = parked
    parked = []
    for (const entry of waiting) entry.run(built).then(entry.resolve, entry.reject)
  })
  // A failed start (a defect: building the engine cannot fail) rejects every parked call with its
  // reason; `close` still closes the scope.
  started.catch((error) => {
    const waiting = parked
    parked = []
    for (const entry of waiting) entry.reject(error)
  })

  // Logging (`DEBUG=analytics`) stops once `close()` was called.
  const logged = (built: EngineShape, log: Effect.Effect<void>) => {
    if (built.debug && closing === undefined) Effect.runFork(log)
  }

  const offer = (built: EngineShape, prepared: Prepared): Promise<void> => {
    const enqueued: Enqueued = built.offerNow(prepared)
    switch (enqueued._tag) {
      case "Queued":
      case "Dropped":
        logged(built, enqueued.log)
        return resolved
      case "Wait":
        return handled(enqueued.waitPromise())
      case "Refused":
        logged(built, enqueued.log)
        return rejected(enqueued.error)
    }
  }

  const refuse = (type: MessageType, error: CallError): Promise<void> => {
    if (engine !== undefined) logged(engine, engine.refuseNow(type, error).log)
    else notifyOutcome(onOutcome, Outcome.Refused({ type, error }))
    return rejected(error)
  }

  /** Until the engine has started: keeps `run`'s place in the order of calls. */
  const park = (run: (built: EngineShape) => Promise<void>): Promise<void> =>
    handled(new Promise<void>((resolve, reject) => parked.push({ run, resolve, reject })))

  const call = <P extends object>(type: MessageType) => (params: P): Promise<void> => {
    if (closing !== undefined) return refuse(type, new ClientClosed())
    // Validated and stamped now: the message is what the caller passed at the time of the call.
    const prepared = prepareMessage(type, params, clock.currentTimeMillisUnsafe())
    if (Result.isFailure(prepared)) return refuse(type, prepared.failure)
    if (engine !== undefined) return offer(engine, prepared.success)
    return park((built) => offer(built, prepared.success))
  }

  // The engine's flush fails only once it is closed, and then everything before it has its outcome.
  const flushOn = (built: EngineShape): Promise<void> => Effect.runPromiseExit(built.analytics.flush).then(ignore)

  return {
    identify: call<IdentifyParams>("identify"),
    track: call<TrackParams>("track"),
    page: call<PageParams>("page"),
    screen: call<ScreenParams>("screen"),
    group: call<GroupParams>("group"),
    alias: call<AliasParams>("alias"),
    flush: () => {
      if (closing !== undefined) return closing
      if (engine !== undefined) return flushOn(engine)
      return park(flushOn)
    },
    close: (closeOptions) => {
      // The engine sends everything queued first (the start has emptied the parked calls into the
      // queue by then); closing the scope then releases the connections.
      const timeout = toDuration(closeOptions?.timeout) ?? checked.success.closeTimeout
      const closeEngine = () => engine === undefined ? resolved : Effect.runPromise(engine.close(timeout))
      const dispose = () => Effect.runPromise(Scope.close(scope, Exit.void))
      closing ??= handled(started.then(closeEngine, ignore).then(dispose, dispose).then(ignore, ignore))
      return closing
    },
    stats: () => engine?.statsNow() ?? { held: parked.length, delivered: 0, dropped: 0, failed: 0 }
  }
}

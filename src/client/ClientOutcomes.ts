import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { inspect } from "node:util"
import type { MessageType } from "../domain/Message.js"
import { messageOf, type Prepared } from "./Calls.js"
import type { Enqueued, Refusal } from "./ClientEngine.js"
import type { CallError } from "./ClientErrors.js"
import type { DebugLog } from "./Debug.js"
import { End } from "./End.js"
import type { ResolvedOptions } from "./Options.js"
import { notifyOutcome, Outcome, type OutgoingMessage } from "./Outcome.js"
import type { OutcomeSink } from "./Sender.js"
import type { ClientStats } from "./Status.js"

/** How many outcomes a slow `outcomes` subscriber may fall behind before the oldest are discarded. */
export const outcomeBuffer = 4096

const isOutcome = (item: Outcome | End): item is Outcome => item !== End

type Queued = Extract<Enqueued, { readonly _tag: "Queued" }>

/**
 * Where the client's outcomes go (`onOutcome` and the `outcomes` subscribers), and what a call
 * reports when it is queued, dropped or refused.
 */
export interface ClientOutcomes extends OutcomeSink {
  /** Reports a refused call (a `Refused` outcome); usable after close too. */
  readonly refuseNow: (type: MessageType, error: CallError) => Refusal
  /** A queued call: nothing to report, only a `DEBUG=analytics` line. */
  readonly queued: (prepared: Prepared) => Queued
  /** Reports a new message dropped because the queue was full (`overflow: "drop"`, `dropPolicy: "newest"`). */
  readonly dropped: (prepared: Prepared) => Enqueued
  /** Reports a queued message dropped to make room (`dropPolicy: "oldest"`); returns its log line. */
  readonly droppedQueued: (json: () => string) => Effect.Effect<void>
  /** The counts so far. */
  readonly stats: () => ClientStats
  /** Messages queued or being sent now. */
  readonly held: () => number
  /** The outcomes from now on, until `end`; an empty stream after it. */
  readonly subscribe: Effect.Effect<Stream.Stream<Outcome>, never, Scope.Scope>
  /** Ends the subscribers' streams; later outcomes reach `onOutcome` only. */
  readonly end: Effect.Effect<void>
}

export const makeClientOutcomes = (
  options: ResolvedOptions,
  debug: boolean,
  log: DebugLog
): Effect.Effect<ClientOutcomes> =>
  Effect.map(PubSub.sliding<Outcome | End>(outcomeBuffer), (hub) => {
    let ended = false
    let subscribers = 0
    const counts = { held: 0, delivered: 0, dropped: 0, failed: 0 }
    const observed = () => options.onOutcome !== undefined || subscribers > 0

    // Outcomes are reported synchronously, so that a call reports its refusal or drop without a
    // fiber and after close too (the hub has ended then: only `onOutcome` hears it).
    const reportNow = (outcome: Outcome): unknown => {
      const thrown = notifyOutcome(options.onOutcome, outcome)
      if (!ended) PubSub.publishUnsafe(hub, outcome)
      return thrown
    }
    const logThrown = (thrown: unknown): Effect.Effect<void> =>
      thrown === undefined ? Effect.void : log(`onOutcome threw: ${inspect(thrown)}`)
    const report = (outcome: Outcome): Effect.Effect<void> => Effect.suspend(() => logThrown(reportNow(outcome)))

    const refuseNow = (type: MessageType, error: CallError): Refusal => {
      const thrown = observed() ? reportNow(Outcome.Refused({ type, error })) : undefined
      return {
        _tag: "Refused",
        error,
        log: debug ? Effect.andThen(log(`refused ${type}: ${error.message}`), logThrown(thrown)) : Effect.void
      }
    }

    const quietlyQueued = { _tag: "Queued", log: Effect.void } as const
    const queued = (prepared: Prepared): Queued => {
      counts.held++
      return debug ? { _tag: "Queued", log: log(`queued ${prepared.type} ${prepared.messageId}`) } : quietlyQueued
    }

    const droppedQueued = (json: () => string): Effect.Effect<void> => {
      counts.held--
      counts.dropped++
      if (!observed() && !debug) return Effect.void
      const message = JSON.parse(json()) as OutgoingMessage
      const thrown = observed() ? reportNow(Outcome.Dropped({ message })) : undefined
      return debug
        ? Effect.andThen(log(`queue full: dropped the oldest, ${message.type} ${message.messageId}`), logThrown(thrown))
        : Effect.void
    }

    const dropped = (prepared: Prepared): Enqueued => {
      counts.dropped++
      const thrown = observed() ? reportNow(Outcome.Dropped({ message: messageOf(prepared) })) : undefined
      return {
        _tag: "Dropped",
        log: debug
          ? Effect.andThen(
            log(`queue full: dropped the newest, ${prepared.type} ${prepared.messageId}`),
            logThrown(thrown)
          )
          : Effect.void
      }
    }

    const subscribe: Effect.Effect<Stream.Stream<Outcome>, never, Scope.Scope> = Effect.suspend(() =>
      ended
        ? Effect.succeed(Stream.empty)
        : Effect.acquireRelease(
          Effect.sync(() => subscribers++),
          () => Effect.sync(() => subscribers--)
        ).pipe(
          Effect.andThen(PubSub.subscribe(hub)),
          Effect.map((subscription) => Stream.takeWhile(Stream.fromSubscription(subscription), isOutcome))
        )
    )

    const end = Effect.suspend(() => {
      ended = true
      return Effect.asVoid(PubSub.publish(hub, End))
    })

    return {
      observed,
      report,
      refuseNow,
      queued,
      dropped,
      droppedQueued,
      delivered: (count) => {
        counts.held -= count
        counts.delivered += count
      },
      failed: (count) => {
        counts.held -= count
        counts.failed += count
      },
      stats: () => ({ ...counts }),
      held: () => counts.held,
      subscribe,
      end
    }
  })

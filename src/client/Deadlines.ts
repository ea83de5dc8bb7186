import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/**
 * Request timeouts of one duration, kept by one fiber for the transport's life. `Effect.timeoutFail`
 * forks two fibers per attempt to race the request against a sleep: at `flushAt: 20` that was about
 * 30 % of the client's CPU and 4 KB of promoted garbage per batch (measured). Here an attempt costs
 * an entry in a queue. All timeouts have the same duration, so they expire in the order they were
 * started: the fiber sleeps (on the `Clock`, so `TestClock` drives it) until the oldest one.
 */
export interface Deadlines {
  readonly timeoutMillis: number
  /** Calls `onExpiry` once `timeoutMillis` have passed, unless the returned cancel is called first. */
  readonly start: (onExpiry: () => void) => () => void
}

interface Entry {
  readonly at: number
  onExpiry: (() => void) | undefined
}

export const makeDeadlines = (timeout: Duration.Input): Effect.Effect<Deadlines, never, Scope.Scope> =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const timeoutMillis = Duration.toMillis(Duration.fromInputUnsafe(timeout))
    let entries: Array<Entry> = []
    let head = 0
    let idle: Deferred.Deferred<void> | undefined

    const dropCancelled = () => {
      while (head < entries.length && entries[head]!.onExpiry === undefined) head++
      if (head > 1024 && head * 2 > entries.length) {
        entries = entries.slice(head)
        head = 0
      }
    }

    const expire = (now: number) => {
      while (head < entries.length && entries[head]!.at <= now) {
        const entry = entries[head++]!
        const onExpiry = entry.onExpiry
        entry.onExpiry = undefined
        onExpiry?.()
      }
      dropCancelled()
    }

    const tick: Effect.Effect<void> = Effect.suspend(() => {
      expire(clock.currentTimeMillisUnsafe())
      if (head < entries.length) {
        return Effect.sleep(Duration.millis(entries[head]!.at - clock.currentTimeMillisUnsafe()))
      }
      return Effect.flatMap(Deferred.make<void>(), (wake) => {
        idle = wake
        return Deferred.await(wake)
      })
    })
    yield* Effect.forkScoped(Effect.forever(tick))

    const start = (onExpiry: () => void): () => void => {
      const entry: Entry = { at: clock.currentTimeMillisUnsafe() + timeoutMillis, onExpiry }
      entries.push(entry)
      if (idle !== undefined) {
        Deferred.doneUnsafe(idle, Effect.void)
        idle = undefined
      }
      return () => {
        entry.onExpiry = undefined
        dropCancelled()
      }
    }

    return { timeoutMillis, start }
  })

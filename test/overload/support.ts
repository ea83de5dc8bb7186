import { Effect } from "effect"
import { TestClock } from "effect/testing"
import type { IngestPressureShape } from "../../src/overload/IngestPressure.js"

/**
 * An event loop whose busy share is set by the test (`loop.busy`, 0 to 1): each reading — one per 50 ms sample of
 * `IngestPressure` — adds 50 ms, `busy` of it active.
 */
export const scriptedLoop = () => {
  const loop = { busy: 0, active: 0, idle: 0 }
  const loopTimes = () => {
    loop.active += 50 * loop.busy
    loop.idle += 50 * (1 - loop.busy)
    return { active: loop.active, idle: loop.idle }
  }
  return { loop, loopTimes }
}

/** Ingest commits (each taking no time) every 10 ms of TestClock, `steps` times, running `between` after each step. */
export const commitEvery10Millis = (pressure: IngestPressureShape, steps: number, between: Effect.Effect<void>) =>
  Effect.gen(function*() {
    for (let step = 0; step < steps; step++) {
      yield* pressure.ingesting(Effect.void)
      yield* TestClock.adjust("10 millis")
      yield* between
    }
  })

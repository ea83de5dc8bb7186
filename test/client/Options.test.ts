import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Exit, Layer, Logger, Result, Scope, Stream } from "effect"
import {
  createClient,
  defaults,
  InvalidOptions,
  layerConfig,
  make,
  optionsConfig,
  Transport
} from "../../src/client/index.js"
import { resolveOptions } from "../../src/client/Options.js"
import { makeGate, ok, settle, startClient, status, trackCall } from "./support.js"

const issuesOf = (input: unknown) => {
  const resolved = resolveOptions(input)
  if (Result.isSuccess(resolved)) throw new Error("expected InvalidOptions")
  return resolved.failure.issues.map((issue) => issue.path)
}

/** Environment variables as given, for `Config`. */
const environment = (entries: ReadonlyArray<readonly [string, string]>) =>
  ConfigProvider.fromEnv({ env: Object.fromEntries(entries) })

describe("options", () => {
  it("applies REFERENCE §9 defaults", () => {
    const resolved = Result.getOrThrow(resolveOptions({ writeKey: "wk" }))
    expect(resolved).toMatchObject({
      endpoint: "http://localhost:8080",
      batchUrl: "http://localhost:8080/v1/batch",
      flushAt: 20,
      maxQueueSize: 100_000,
      maxQueueBytes: 64 * 1024 * 1024,
      overflow: "drop",
      dropPolicy: "oldest",
      maxRetries: undefined,
      maxInFlight: 4
    })
    expect(resolved.flushAfter).toEqual(defaults.flushAfter)
    expect(resolved.timeout).toEqual(defaults.timeout)
    expect(Duration.toMillis(resolved.retryFor)).toBe(10 * 60_000)
    expect(Duration.toMillis(resolved.closeTimeout)).toBe(30_000)
    const custom = Result.getOrThrow(
      resolveOptions({
        writeKey: "wk",
        endpoint: "https://relay.test/base/",
        size: 50,
        flushAfter: 250,
        timeout: "2 seconds"
      })
    )
    expect(custom.batchUrl).toBe("https://relay.test/base/v1/batch")
    expect(custom.flushAt).toBe(50)
    expect(Duration.toMillis(custom.flushAfter)).toBe(250)
    expect(Duration.toMillis(custom.timeout)).toBe(2000)
  })

  it("names each invalid option", () => {
    expect(issuesOf({})).toEqual(["writeKey"])
    expect(issuesOf({ writeKey: "" })).toEqual(["writeKey"])
    expect(issuesOf({ writeKey: "has:colon" })).toEqual(["writeKey"])
    expect(issuesOf({ writeKey: "wk", endpoint: "ftp://relay.test" })).toEqual(["endpoint"])
    expect(issuesOf({ writeKey: "wk", endpoint: "/v1" })).toEqual(["endpoint"])
    expect(issuesOf({ writeKey: "wk", flushAt: 0 })).toEqual(["flushAt"])
    expect(issuesOf({ writeKey: "wk", flushAt: 2501 })).toEqual(["flushAt"])
    expect(issuesOf({ writeKey: "wk", flushAt: 1.5 })).toEqual(["flushAt"])
    expect(issuesOf({ writeKey: "wk", flushAfter: 0 })).toEqual(["flushAfter"])
    expect(issuesOf({ writeKey: "wk", timeout: "soon" })).toEqual(["timeout"])
    expect(issuesOf({ writeKey: "wk", maxQueueSize: -1, maxRetries: 99, maxInFlight: 0 })).toEqual([
      "maxQueueSize",
      "maxRetries",
      "maxInFlight"
    ])
    expect(issuesOf({ writeKey: "wk", overflow: "block" })).toEqual(["overflow"])
    expect(issuesOf({ writeKey: "wk", dropPolicy: "random" })).toEqual(["dropPolicy"])
    // A queue must hold at least one message of the largest size.
    expect(issuesOf({ writeKey: "wk", maxQueueBytes: 1000 })).toEqual(["maxQueueBytes"])
    expect(issuesOf({ writeKey: "wk", retryFor: "never", closeTimeout: 0 })).toEqual(["retryFor", "closeTimeout"])
    expect(issuesOf({ writeKey: "wk", onStatus: 1 })).toEqual(["onStatus"])
    expect(issuesOf({ writeKey: "wk", onOutcome: "log" })).toEqual(["onOutcome"])
    expect(issuesOf({ writeKey: "wk", flushAt: 10, size: 20 })).toEqual(["size"])
    // analytics-node's option names are not silently ignored.
    expect(issuesOf({ writeKey: "wk", flushInterval: 1000, host: "https://x.test" })).toEqual(["flushInterval", "host"])
  })

  it("createClient throws InvalidOptions at once", () => {
    expect(() => createClient({ writeKey: "wk", flushAt: 0 })).toThrow(InvalidOptions)
    expect(() => createClient({ writeKey: "wk", flushAt: 0 })).toThrow(/flushAt: must be an integer from 1 to 2500/)
  })

  it.effect("make fails with InvalidOptions", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.scoped(make({ writeKey: "" }).pipe(Effect.provideService(Transport, { send: () => Effect.succeed(ok) })))
      )
      expect(error).toBeInstanceOf(InvalidOptions)
      expect(error.issues[0]?.path).toBe("writeKey")
    }))

  it.effect("the environment variables are read through Config", () =>
    Effect.gen(function*() {
      const provider = environment(
        [
          ["HOOKRELAY_WRITE_KEY", "env-key"],
          ["HOOKRELAY_ENDPOINT", "https://relay.test"],
          ["HOOKRELAY_FLUSH_AT", "50"],
          ["HOOKRELAY_FLUSH_AFTER", "2 seconds"],
          ["HOOKRELAY_MAX_QUEUE_SIZE", "500"],
          ["HOOKRELAY_MAX_QUEUE_BYTES", "1048576"],
          ["HOOKRELAY_OVERFLOW", "backpressure"],
          ["HOOKRELAY_DROP_POLICY", "newest"],
          ["HOOKRELAY_RETRY_FOR", "30 minutes"],
          ["HOOKRELAY_MAX_RETRIES", "5"],
          ["HOOKRELAY_TIMEOUT", "1500"],
          ["HOOKRELAY_MAX_IN_FLIGHT", "2"],
          ["HOOKRELAY_CLOSE_TIMEOUT", "10 seconds"]
        ]
      )
      const options = yield* Effect.provideService(optionsConfig, ConfigProvider.ConfigProvider, provider)
      expect(options).toEqual({
        writeKey: "env-key",
        endpoint: "https://relay.test",
        flushAt: 50,
        flushAfter: "2 seconds",
        maxQueueSize: 500,
        maxQueueBytes: 1_048_576,
        overflow: "backpressure",
        dropPolicy: "newest",
        retryFor: "30 minutes",
        maxRetries: 5,
        timeout: "1500",
        maxInFlight: 2,
        closeTimeout: "10 seconds"
      })
      const resolved = Result.getOrThrow(resolveOptions(options))
      expect(Duration.toMillis(resolved.retryFor)).toBe(30 * 60_000)
      expect(Duration.toMillis(resolved.closeTimeout)).toBe(10_000)
      // A wrong value names its variable.
      const wrong = yield* Effect.flip(
        Effect.provideService(
          optionsConfig,
          ConfigProvider.ConfigProvider,
          environment([["HOOKRELAY_DROP_POLICY", "random"]])
        )
      )
      expect(String(wrong)).toMatch(/HOOKRELAY_DROP_POLICY/)
      const empty = yield* Effect.provideService(optionsConfig, ConfigProvider.ConfigProvider, environment([]))
      expect(empty).toEqual({})
    }))

  it.effect("layerConfig fails without HOOKRELAY_WRITE_KEY, and with InvalidOptions on a bad value", () =>
    Effect.gen(function*() {
      const build = (entries: ReadonlyArray<[string, string]>) =>
        Effect.scoped(Layer.build(layerConfig())).pipe(
          Effect.provideService(ConfigProvider.ConfigProvider, environment(entries)),
          Effect.exit
        )
      const missing = yield* build([])
      expect(Exit.isFailure(missing) && String(missing.cause)).toMatch(/HOOKRELAY_WRITE_KEY/)
      const invalid = yield* build([["HOOKRELAY_WRITE_KEY", "k"], ["HOOKRELAY_ENDPOINT", "nope"]])
      expect(Exit.isFailure(invalid) && String(invalid.cause)).toMatch(/endpoint/)
    }))
})

describe("outcomes", () => {
  it.effect("subscribe sees every outcome in order: delivered, failed, dropped", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate
      const { analytics, close } = yield* startClient(
        { flushAt: 1, maxInFlight: 1, maxQueueSize: 1, maxRetries: 0 },
        (received) => Effect.as(gate.wait, received.body.batch[0]!.userId === "user-1" ? status(400) : ok)
      )
      const outcomes = yield* analytics.subscribe
      yield* analytics.track(trackCall(0)) // sent, held at the gate
      yield* settle
      yield* analytics.track(trackCall(1)) // batched, waiting for a sender
      yield* settle
      yield* analytics.track(trackCall(2)) // queued
      yield* analytics.track(trackCall(3)) // the queue (1) is full: user-2, the oldest, is dropped
      yield* gate.open
      yield* close
      const seen = yield* Stream.runCollect(outcomes)
      expect(seen.map((outcome) => outcome._tag)).toEqual(["Dropped", "Success", "Failure", "Success"])
      expect(seen.map((outcome) =>
        outcome._tag === "Dropped"
          ? outcome.message.userId
          : outcome._tag === "Refused"
          ? outcome.error._tag
          : outcome.messages.map((message) => message.userId).join()
      )).toEqual(["user-2", "user-0", "user-1", "user-3"])
    }))

  it.effect("a throwing onOutcome does not stop the client", () =>
    Effect.gen(function*() {
      const { analytics, close, fake } = yield* startClient({
        flushAt: 1,
        onOutcome: () => {
          throw new Error("callback bug")
        }
      })
      yield* analytics.track(trackCall(0))
      yield* analytics.track(trackCall(1))
      yield* close
      expect(fake.messages()).toHaveLength(2)
    }))
})

describe("DEBUG=analytics", () => {
  const withLogs = <A, E, R>(debug: string | undefined, effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make(({ message }) => lines.push(String(message)))
      const entries: Array<[string, string]> = debug === undefined ? [] : [["DEBUG", debug]]
      yield* effect.pipe(
        Effect.provide(Logger.layer([capture], { mergeWithExisting: true })),
        Effect.provideService(ConfigProvider.ConfigProvider, environment(entries))
      )
      return lines
    })

  const scenario = Effect.gen(function*() {
    const scope = yield* Scope.make()
    const { analytics, close } = yield* startClient(
      { flushAt: 1, maxRetries: 0, maxQueueSize: 1 },
      () => Effect.succeed(status(500))
    ).pipe(Scope.provide(scope))
    yield* analytics.track(trackCall(0))
    yield* analytics.track(trackCall(1)) // the queue (1) is full: the oldest is dropped
    yield* close
  })

  it.effect("logs queueing, flushes, failures and drops when DEBUG contains analytics", () =>
    Effect.gen(function*() {
      const lines = yield* withLogs("express,analytics", scenario)
      const text = lines.join("\n")
      expect(text).toMatch(/queued track /)
      expect(text).toMatch(/flushing 1 messages/)
      expect(text).toMatch(/attempt 1 failed: HTTP 500/)
      expect(text).toMatch(/server unreachable \(HTTP 500/)
      expect(text).toMatch(/1 messages failed \(RetriesExhausted\) after 1 attempts/)
      expect(text).toMatch(/queue full: dropped the oldest, track /)
      expect(text).not.toMatch(/write-key/)
    }))

  it.effect("is silent otherwise", () =>
    Effect.gen(function*() {
      expect(yield* withLogs(undefined, scenario)).toEqual([])
      expect(yield* withLogs("express", scenario)).toEqual([])
    }))
})

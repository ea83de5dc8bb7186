import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import type { Dispatcher } from "undici"
import * as OriginPools from "../../src/delivery/OriginPools.js"
import { closedPort, realWait, startServer } from "./support.js"

/** One POST through the pools; resolves with the status, or the error's code. */
const post = (pools: OriginPools.OriginPools, origin: string) =>
  Effect.callback<number | string>((resume) => {
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: () => undefined,
      onResponseStart: (_controller, status) => resume(Effect.succeed(status)),
      // undici 8 requires every callback of a handler.
      onResponseData: () => undefined,
      onResponseEnd: () => undefined,
      onResponseError: (_controller, error) =>
        resume(Effect.succeed((error as NodeJS.ErrnoException).code ?? error.message))
    }
    pools.dispatch({ origin, path: "/hook", method: "POST", body: "{}" }, handler)
  })

describe("OriginPools", () => {
  it.effect("keeps a refused origin's pool across failed attempts, and closes it after a sweep interval unused", () =>
    Effect.gen(function*() {
      const origin = `http://127.0.0.1:${yield* closedPort}`
      const pools = yield* OriginPools.make({}, "10 seconds")
      expect(yield* post(pools, origin)).toBe("ECONNREFUSED")
      // undici's Agent forgets the pool here (no connection was ever open); the pools keep it for the retry.
      expect(pools.size()).toBe(1)
      expect(yield* post(pools, origin)).toBe("ECONNREFUSED")
      expect(pools.size()).toBe(1)

      // The first sweep finds it used since the last one; the second finds it idle and closes it.
      yield* TestClock.adjust("10 seconds")
      expect(pools.size()).toBe(1)
      yield* TestClock.adjust("10 seconds")
      expect(pools.size()).toBe(0)
      // Used again: a new pool.
      expect(yield* post(pools, origin)).toBe("ECONNREFUSED")
      expect(pools.size()).toBe(1)
    }))

  it.effect("keeps an idle origin's pool while it holds an open connection", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_request, response) => response.writeHead(204).end())
      const pools = yield* OriginPools.make({ keepAliveTimeout: 60_000 }, "10 seconds")
      expect(yield* post(pools, server.url)).toBe(204)
      // The response's end arrives after its start: let the connection go back to the pool, idle but open.
      yield* realWait(20)
      yield* TestClock.adjust("30 seconds")
      expect(pools.size()).toBe(1)
      expect(yield* post(pools, server.url)).toBe(204)
    }))
})

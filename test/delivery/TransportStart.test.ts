import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, TestClock } from "effect"
import * as Transport from "../../src/delivery/Transport.js"
import { blockedAddressCode } from "../../src/network/EgressPolicy.js"
import { encode, realWait, startServer, waitUntil } from "./support.js"

const body = encode(`{"type":"track","messageId":"m-start"}`)

/** `start` of the live transport, and the exits its callback received. */
const started = (options: Transport.TransportOptions = {}) =>
  Effect.map(Transport.make({ allowPrivateNetworks: true, ...options }), (transport) => {
    const exits: Array<Transport.TransportExit> = []
    const start = (url: string) =>
      transport.start!({ ...Transport.requestTarget(url), headers: [], body }, (exit) => exits.push(exit))
    return { exits, start }
  })

describe("Transport.start: the request without a fiber", () => {
  it.scopedLive("calls back once with the answer", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_request, response) => response.writeHead(202).end("queued"))
      const { exits, start } = yield* started()
      start(`${server.url}/hook`)
      yield* waitUntil(() => exits.length === 1, "the answer")
      yield* realWait(20)
      expect(exits).toHaveLength(1)
      expect(exits[0]).toStrictEqual(Exit.succeed(Transport.response(202, { snippet: "queued" })))
      expect(server.requests[0]!.body).toStrictEqual(Buffer.from(body))
    }))

  it.scopedLive("cancelled: the request is aborted and nobody is called back", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => {
        // Never answers.
      })
      const { exits, start } = yield* started()
      const cancel = start(server.url)
      yield* waitUntil(() => server.requests.length === 1, "the request in flight")
      cancel()
      yield* waitUntil(() => server.requests[0]!.aborted, "the receiver saw the request aborted")
      yield* realWait(50)
      expect(exits).toStrictEqual([])
    }))

  it.scoped("fails with TransportTimeout at exactly the deadline on the Clock", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => {
        // Never answers.
      })
      const { exits, start } = yield* started({ timeout: "2 seconds" })
      start(server.url)
      yield* waitUntil(() => server.requests.length === 1, "the request in flight")
      yield* TestClock.adjust("1999 millis")
      yield* realWait(20)
      expect(exits).toStrictEqual([])
      yield* TestClock.adjust("1 millis")
      yield* waitUntil(() => exits.length === 1, "the timeout")
      const failure = Exit.isFailure(exits[0]!) ? Cause.failureOption(exits[0].cause) : undefined
      expect(failure?._tag === "Some" && failure.value._tag).toBe("TransportTimeout")
      yield* waitUntil(() => server.requests[0]!.aborted, "the timed-out request aborted")
    }))

  it.scopedLive("refuses a private address literal after returning, without a connection", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_request, response) => response.writeHead(200).end())
      const { exits, start } = yield* started({ allowPrivateNetworks: false })
      start(server.url)
      // Reported later, never from inside `start` itself.
      expect(exits).toStrictEqual([])
      yield* waitUntil(() => exits.length === 1, "the refusal")
      const failure = Exit.isFailure(exits[0]!) ? Cause.failureOption(exits[0].cause) : undefined
      expect(failure?._tag === "Some" && failure.value._tag === "TransportError" && failure.value.code).toBe(
        blockedAddressCode
      )
      expect(server.requests).toStrictEqual([])
    }))
})

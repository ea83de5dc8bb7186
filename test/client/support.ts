import { Clock, Deferred, Effect, Exit, Queue, Scope } from "effect"
import type { TransportRequest, TransportResponse } from "../../src/client/ClientTransport.js"
import { type AnalyticsOptions, type AnalyticsShape, make, type Outcome, Transport } from "../../src/client/index.js"
import type { TransportError } from "../../src/client/index.js"

/** One request as the fake transport saw it. */
export interface Received {
  /** TestClock time of the attempt's start, in milliseconds. */
  readonly at: number
  readonly attempt: number
  readonly request: TransportRequest
  readonly body: { readonly batch: ReadonlyArray<Record<string, any>>; readonly sentAt: string }
  readonly bytes: number
}

export type Responder = (received: Received) => Effect.Effect<TransportResponse, TransportError>

export const ok: TransportResponse = { status: 200, retryAfter: undefined, body: "{\"success\":true}" }
export const status = (code: number, retryAfter?: string): TransportResponse => ({
  status: code,
  retryAfter,
  body: `{"success":false,"code":"status_${code}"}`
})

/** A transport that records every request and answers as `respond` says (200 by default). */
export const makeFakeTransport = (respond: Responder = () => Effect.succeed(ok)) =>
  Effect.gen(function*() {
    const arrivals = yield* Queue.unbounded<Received>()
    const all: Array<Received> = []
    const send = (request: TransportRequest) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) => {
        const received: Received = {
          at,
          attempt: all.length + 1,
          request,
          // The client reuses the body's buffer once `send` completes: it is read now.
          body: JSON.parse(Buffer.from(request.body).toString("utf8")),
          bytes: request.body.byteLength
        }
        all.push(received)
        return Effect.andThen(Queue.offer(arrivals, received), respond(received))
      })
    return {
      transport: Transport.of({ send }),
      /** Every request so far. */
      all,
      /** Waits for the next request. */
      next: Queue.take(arrivals),
      /** Every message of every request so far. */
      messages: () => all.flatMap((received) => received.body.batch)
    }
  })

/** A gate that the fake transport waits at until `open`. */
export const makeGate = Effect.gen(function*() {
  const gate = yield* Deferred.make<void>()
  return { wait: Deferred.await(gate), open: Deferred.succeed(gate, undefined) }
})

/** Lets forked fibers run until they all wait (on the clock, a queue or a gate). */
export const settle = Effect.gen(function*() {
  for (let i = 0; i < 50; i++) yield* Effect.yieldNow
})

/**
 * Starts a client over a fake transport in its own scope, collecting outcomes through
 * `onOutcome`. `close` closes the scope, as the end of a layer's scope does.
 */
export const startClient = (options: Partial<AnalyticsOptions> = {}, respond?: Responder) =>
  Effect.gen(function*() {
    const fake = yield* makeFakeTransport(respond)
    const outcomes: Array<Outcome> = []
    const scope = yield* Scope.make()
    const analytics: AnalyticsShape = yield* make({
      writeKey: "write-key",
      onOutcome: (outcome) => outcomes.push(outcome),
      ...options
    }).pipe(Effect.provideService(Transport, fake.transport), Scope.provide(scope))
    return { analytics, fake, outcomes, close: Scope.close(scope, Exit.void) }
  })

export const trackCall = (index: number) => ({
  userId: `user-${index}`,
  event: "Order Completed",
  properties: { index }
})

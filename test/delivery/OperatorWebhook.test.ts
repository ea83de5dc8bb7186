import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { GuardEventSink } from "../../src/delivery/EndpointGuards.js"
import * as OperatorWebhook from "../../src/delivery/OperatorWebhook.js"
import * as Outcomes from "../../src/delivery/Outcomes.js"
import { decodeSecret, signV1 } from "../../src/delivery/StandardWebhooks.js"
import * as Transport from "../../src/delivery/Transport.js"
import type { TransportRequest } from "../../src/delivery/Transport.js"

const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`

const header = (request: TransportRequest, name: string) => {
  const index = request.headers.findIndex((value, i) => i % 2 === 0 && value.toLowerCase() === name)
  return index < 0 ? undefined : request.headers[index + 1]
}

const setup = (
  answer: (call: number) => Effect.Effect<Transport.TransportResponse> = () => Effect.succeed(Transport.response(204))
) =>
  Effect.gen(function*() {
    const sent: Array<TransportRequest> = []
    const transport = Transport.layerTest((request, call) => {
      sent.push(request)
      return answer(call)
    })
    const services = Layer.merge(transport, Outcomes.layer)
    const context = yield* Layer.build(
      OperatorWebhook.layer({ url: "https://ops.example/events", secret: Redacted.make(secret) }).pipe(
        Layer.provideMerge(services)
      )
    )
    const sink = yield* Effect.provide(GuardEventSink, context)
    const outcomes = yield* Effect.provide(Outcomes.DeliveryOutcomes, context)
    const events = () => sent.map((request) => JSON.parse(new TextDecoder().decode(request.body)))
    return { sent, sink, outcomes, events }
  })

const dead = (sourceId: string, i: number) => ({
  jobId: `${sourceId}-${i}`,
  sourceId,
  messageId: `m-${i}`,
  kind: "message",
  status: "dead" as const,
  at: 0,
  error: "every endpoint failed"
})

describe("operator webhook (TestClock)", () => {
  it.effect("each endpoint event is sent once, naming its endpoint, signed with Standard Webhooks headers", () =>
    Effect.gen(function*() {
      const { events, sent, sink } = yield* setup()
      yield* sink.publish({
        type: "endpoint.circuit_opened",
        url: "https://a.example/hook",
        at: 5_000,
        reason: "10 consecutive failures",
        sourceIds: ["web"],
        destinationId: "crm"
      })
      yield* TestClock.adjust("10 millis")
      expect(events()).toStrictEqual([{
        type: "endpoint.circuit_opened",
        timestamp: "1970-01-01T00:00:05.000Z",
        data: {
          url: "https://a.example/hook",
          sourceIds: ["web"],
          destinationId: "crm",
          reason: "10 consecutive failures"
        }
      }])
      const request = sent[0]!
      expect(`${request.origin}${request.path}`).toBe("https://ops.example/events")
      const id = header(request, "webhook-id")!
      const timestamp = Number(header(request, "webhook-timestamp"))
      expect(timestamp).toBe(5)
      const key = decodeSecret(secret) as Uint8Array
      expect(header(request, "webhook-signature")).toBe(signV1(key, id, timestamp, request.body))
      yield* TestClock.adjust("5 minutes")
      expect(sent.length).toBe(1)
    }))

  it.effect("dead letters roll up to one messages.dead per source per minute, with the count", () =>
    Effect.gen(function*() {
      const { events, outcomes } = yield* setup()
      yield* TestClock.adjust("1 millis")
      yield* outcomes.publishAll([dead("web", 1), dead("web", 2), dead("app", 1), dead("web", 3)])
      yield* TestClock.adjust("59 seconds")
      expect(events()).toStrictEqual([])
      yield* TestClock.adjust("1 second")
      expect(events().map((event) => event.data)).toStrictEqual([
        { sourceId: "web", count: 3 },
        { sourceId: "app", count: 1 }
      ])
      expect(events().every((event) => event.type === "messages.dead")).toBe(true)
      yield* outcomes.publishAll([dead("web", 4)])
      yield* TestClock.adjust("1 minute")
      expect(events().map((event) => event.data)).toStrictEqual([
        { sourceId: "web", count: 3 },
        { sourceId: "app", count: 1 },
        { sourceId: "web", count: 1 }
      ])
    }))

  it.effect("an event goes through the delivery program: a retryable answer is tried again, the same request each time", () =>
    Effect.gen(function*() {
      const { sent, sink } = yield* setup((call) => Effect.succeed(Transport.response(call < 3 ? 503 : 204)))
      yield* sink.publish(circuitOpened)
      yield* TestClock.adjust("1 minute")
      // Two 503s, then the 204: three tries, one webhook-id, timestamp and signature (signed once, at the event).
      expect(sent.length).toBe(3)
      expect(new Set(sent.map((request) => header(request, "webhook-id"))).size).toBe(1)
      expect(new Set(sent.map((request) => header(request, "webhook-signature"))).size).toBe(1)
      expect(header(sent[2]!, "webhook-timestamp")).toBe("5")
    }))

  it.effect("classified as a delivery is: a permanent failure is not retried; an endpoint that stays down gets four tries", () =>
    Effect.gen(function*() {
      const refused = yield* setup(() => Effect.succeed(Transport.response(400)))
      yield* refused.sink.publish(circuitOpened)
      yield* TestClock.adjust("1 minute")
      expect(refused.sent.length).toBe(1)
      const down = yield* setup(() => Effect.succeed(Transport.response(500)))
      yield* down.sink.publish(circuitOpened)
      yield* TestClock.adjust("1 minute")
      expect(down.sent.length).toBe(4)
    }))

  it.effect("queued: publishing never waits for the operator endpoint", () =>
    Effect.gen(function*() {
      const { sent, sink } = yield* setup(() => Effect.never)
      yield* sink.publish(circuitOpened)
      yield* TestClock.adjust("10 millis")
      yield* sink.publish({ ...circuitOpened, type: "endpoint.recovered" })
      yield* sink.publish({ ...circuitOpened, type: "endpoint.disabled" })
      // The first is in flight forever; the others wait in the queue, and their publishers did not.
      expect(sent.length).toBe(1)
    }))
})

const circuitOpened = {
  type: "endpoint.circuit_opened" as const,
  url: "https://a.example/hook",
  at: 5_000,
  reason: "10 consecutive failures",
  sourceIds: ["web"]
}

import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import fc from "fast-check"
import { deflateSync, gzipSync } from "node:zlib"
import { startServer, type TestServer } from "../delivery/support.js"
import { startApp } from "../support/app.js"
import { basic } from "../support/http.js"

/**
 * Fuzzed ingest (REFERENCE §8): arbitrary JSON, arbitrary bytes, arbitrary Content-Type / Content-Encoding /
 * Authorization headers and truncated gzip, posted to every tracking path (full and short) of one running app, never crash it and
 * never get a 5xx: only 200, or a 4xx whose JSON body says what is wrong and names the field. Every message answered
 * 200 is then delivered exactly once (a loopback receiver counts deliveries by messageId).
 */

const writeKey = "wk_fuzz_tests_0123"
const singleTypes = ["identify", "track", "page", "screen", "group", "alias"] as const

/** A tracking path under `/v1/` and the one message type it takes (`undefined`: a batch). */
interface Endpoint {
  readonly path: string
  readonly type: (typeof singleTypes)[number] | undefined
}

/**
 * Every tracking path: the full ones and Segment's short ones (`/v1/t`, …, `/v1/b`) that analytics.js and the mobile
 * libraries post to.
 */
const endpoints: ReadonlyArray<Endpoint> = [
  ...singleTypes.flatMap((type) => [{ path: type, type }, { path: type.charAt(0), type }]),
  ...["batch", "import", "b"].map((path) => ({ path, type: undefined }))
]

interface FuzzAppShape {
  readonly baseUrl: string
  readonly receiver: TestServer
  /** messageId → how many requests answered 200 carried it (each must be delivered exactly once). */
  readonly accepted: Map<string, number>
}

class FuzzApp extends Context.Service<FuzzApp, FuzzAppShape>()("test/FuzzApp") {}

const FuzzAppLive = Layer.effect(
  FuzzApp,
  Effect.gen(function*() {
    const receiver = yield* startServer((_request, response) => response.writeHead(200).end("ok"))
    const app = yield* startApp()
    yield* app.relaySources.putSource({
      id: "fuzz",
      writeKey,
      webhooks: { enabled: true, sharedSecret: "fuzz-secret", endpoints: [{ url: `${receiver.url}/hook` }] }
    })
    return { baseUrl: app.baseUrl, receiver, accepted: new Map<string, number>() }
  })
)

interface Answer {
  readonly status: number
  readonly text: string
}

const post = (
  baseUrl: string,
  endpoint: Endpoint,
  body: Uint8Array | string,
  headers: Record<string, string>
): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/v1/${endpoint.path}`, { method: "POST", headers, body })
    return { status: response.status, text: await response.text() }
  })

const fieldNamingCodes = new Set([
  "invalid_message",
  "invalid_request",
  "invalid_json",
  "too_many_messages",
  "message_too_large",
  "payload_too_large",
  "invalid_body",
  "unsupported_encoding"
])

/** 200 `{"success":true}`, or a 4xx JSON error `{success:false, code, message, errors}` naming the field. */
const expectWellFormed = (answer: Answer, what: unknown) => {
  const context = JSON.stringify(what).slice(0, 400)
  expect(answer.status === 200 || (answer.status >= 400 && answer.status < 500), `${answer.status} for ${context}`)
    .toBe(true)
  const body = JSON.parse(answer.text) as Record<string, unknown>
  if (answer.status === 200) {
    expect(body).toEqual({ success: true })
    return
  }
  expect(body.success).toBe(false)
  expect(typeof body.code).toBe("string")
  expect(typeof body.message).toBe("string")
  expect(Array.isArray(body.errors)).toBe(true)
  if (fieldNamingCodes.has(body.code as string)) {
    const errors = body.errors as ReadonlyArray<Record<string, unknown>>
    expect(errors.length, `${String(body.code)} names no field for ${context}`).toBeGreaterThan(0)
    for (const issue of errors) {
      expect(typeof issue.path).toBe("string")
      expect(typeof issue.message).toBe("string")
    }
  }
}

let nextId = 0
const freshId = () => `fuzz-${process.pid}-${nextId++}`

// --- arbitraries -----------------------------------------------------------------------------

const anyJson = fc.jsonValue({ maxDepth: 3 })
const text = fc.string({ maxLength: 20 })
const timestampish = fc.oneof(
  fc.date({ min: new Date("1990-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }).map((
    date
  ) => date.toISOString()),
  text,
  anyJson
)
const idish = fc.oneof(text, fc.integer(), fc.double(), anyJson)
const objectish = fc.oneof(fc.dictionary(text, anyJson, { maxKeys: 4 }), anyJson)

const fieldNames = [
  "type",
  "userId",
  "anonymousId",
  "groupId",
  "previousId",
  "event",
  "name",
  "properties",
  "traits",
  "context",
  "timestamp",
  "sentAt",
  "originalTimestamp",
  "messageId"
] as const
const name = fc.string({ minLength: 1, maxLength: 20 })
const isoDate = fc.date({
  min: new Date("1990-01-01T00:00:00Z"),
  max: new Date("2100-01-01T00:00:00Z"),
  noInvalidDate: true
})
  .map((date) => date.toISOString())

/**
 * Messages that look like real ones — valid for their type as drawn, then (half the time) up to three fields replaced
 * by anything: wrong types, bad timestamps, numbers for ids. No `integrations`, so a 200 means "to be delivered".
 */
const plausibleMessage = (type: fc.Arbitrary<string | undefined>) =>
  fc.record({
    base: fc.record(
      {
        type,
        userId: fc.oneof(name, fc.integer()),
        anonymousId: name,
        groupId: name,
        previousId: name,
        event: name,
        name,
        properties: fc.dictionary(text, anyJson, { maxKeys: 4 }),
        traits: fc.dictionary(text, anyJson, { maxKeys: 4 }),
        context: fc.dictionary(text, anyJson, { maxKeys: 3 }),
        timestamp: isoDate,
        sentAt: isoDate,
        originalTimestamp: isoDate,
        extra: anyJson
      },
      { requiredKeys: ["type", "userId", "event", "groupId", "previousId"] }
    ),
    mutations: fc.oneof(
      fc.constant([] as Array<[string, fc.JsonValue]>),
      fc.array(fc.tuple(fc.constantFrom(...fieldNames), fc.oneof(anyJson, timestampish, idish)), { maxLength: 3 })
    )
  }).map(({ base, mutations }) => {
    const message: Record<string, unknown> = { ...base }
    if (message.type === undefined) delete message.type
    for (const [field, value] of mutations) message[field] = value
    return message
  })

const printable = fc.string({ unit: "grapheme-ascii", maxLength: 40 })

const contentType = fc.oneof(
  fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "application/x-www-form-urlencoded",
    "text/plain",
    "multipart/form-data; boundary=x",
    ""
  ),
  printable
)

const contentEncoding = fc.oneof(
  fc.constantFrom("identity", "gzip", "x-gzip", "deflate", "br", "gzip, deflate", "GZIP", " gzip ", "compress"),
  printable
)

const authorization = fc.oneof(
  fc.constant(basic(writeKey)),
  fc.constant(basic(writeKey)),
  printable,
  fc.uint8Array({ maxLength: 30 }).map((bytes) => `Basic ${Buffer.from(bytes).toString("base64")}`),
  fc.constant("Basic"),
  fc.constant("Bearer x")
)

/**
 * A fast-check property whose runs are effects over the shared app: Effect's own `Arbitrary` has no JSON, grapheme or
 * byte generators, so the property runs under fast-check, each run in the test's context.
 */
const property = <const Ts extends [unknown, ...Array<unknown>]>(
  arbitraries: { [K in keyof Ts]: fc.Arbitrary<Ts[K]> },
  run: (values: Ts) => Effect.Effect<void, never, FuzzApp>,
  options: { readonly numRuns: number }
) =>
() =>
  Effect.flatMap(Effect.context<FuzzApp>(), (context) =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(...arbitraries, (...values: Ts) => Effect.runPromiseWith(context)(run(values))),
        options
      )
    ))

describe("fuzzed ingest", () => {
  layer(FuzzAppLive, { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect(
      "arbitrary JSON to every endpoint: 200 or a 4xx naming the field, never 5xx",
      property(
        [fc.constantFrom(...endpoints), anyJson],
        ([endpoint, value]) =>
          Effect.gen(function*() {
            const { baseUrl } = yield* FuzzApp
            const answer = yield* post(baseUrl, endpoint, JSON.stringify(value), {
              "content-type": "application/json",
              authorization: basic(writeKey)
            })
            expectWellFormed(answer, value)
          }),
        { numRuns: 150 }
      )
    )

    it.effect(
      "plausible messages with wrong fields, single and batched: 200 ones are recorded for delivery",
      property(
        [
          fc.constantFrom(...endpoints),
          fc.array(plausibleMessage(fc.constantFrom(...singleTypes)), { minLength: 1, maxLength: 5 }),
          fc.boolean(),
          fc.option(objectish, { nil: undefined }),
          fc.option(timestampish, { nil: undefined })
        ],
        ([endpoint, messages, keyInBody, batchContext, batchSentAt]) =>
          Effect.gen(function*() {
            const { accepted, baseUrl } = yield* FuzzApp
            const isBatch = endpoint.type === undefined
            // A single-message endpoint fixes the type: keep a drawn type only when it was mutated into something odd.
            const typed = messages.map((message) =>
              !isBatch && singleTypes.includes(message.type as never) ? { ...message, type: endpoint.type } : message
            )
            const withIds = typed.map((message) => ({ ...message, messageId: freshId() }))
            const auth = keyInBody ? { writeKey } : {}
            const body = isBatch
              ? { batch: withIds, context: batchContext, sentAt: batchSentAt, ...auth }
              : { ...withIds[0], ...auth }
            const answer = yield* post(baseUrl, endpoint, JSON.stringify(body), {
              "content-type": "application/json",
              ...(!keyInBody && { authorization: basic(writeKey) })
            })
            expectWellFormed(answer, body)
            if (answer.status === 200) {
              for (const message of isBatch ? withIds : withIds.slice(0, 1)) {
                accepted.set(message.messageId, (accepted.get(message.messageId) ?? 0) + 1)
              }
            }
          }),
        { numRuns: 200 }
      )
    )

    it.effect(
      "arbitrary bytes with arbitrary Content-Type, Content-Encoding and Authorization: never 5xx",
      property(
        [
          fc.constantFrom(...endpoints),
          fc.uint8Array({ maxLength: 2048 }),
          contentType,
          contentEncoding,
          authorization
        ],
        ([endpoint, bytes, type, encoding, auth]) =>
          Effect.gen(function*() {
            const { baseUrl } = yield* FuzzApp
            const answer = yield* post(baseUrl, endpoint, bytes, {
              "content-type": type,
              "content-encoding": encoding,
              authorization: auth
            })
            expectWellFormed(answer, { endpoint: endpoint.path, bytes: bytes.length, type, encoding, auth })
          }),
        { numRuns: 150 }
      )
    )

    it.effect(
      "gzip and deflate bodies cut anywhere, or labelled with the wrong encoding: never 5xx",
      property(
        [
          fc.constantFrom(...endpoints),
          plausibleMessage(fc.constantFrom(...singleTypes)),
          fc.constantFrom("gzip", "deflate"),
          fc.constantFrom("gzip", "deflate", "identity", "x-gzip"),
          fc.double({ min: 0, max: 1, noNaN: true })
        ],
        ([endpoint, message, compression, label, cut]) =>
          Effect.gen(function*() {
            const { accepted, baseUrl } = yield* FuzzApp
            const isBatch = endpoint.type === undefined
            const typed = !isBatch && singleTypes.includes(message.type as never)
              ? { ...message, type: endpoint.type }
              : message
            const withId = { ...typed, messageId: freshId() }
            const json = JSON.stringify(isBatch ? { batch: [withId] } : withId)
            const compressed = compression === "gzip" ? gzipSync(json) : deflateSync(json)
            const body = compressed.subarray(0, Math.floor(compressed.length * cut))
            const answer = yield* post(baseUrl, endpoint, body, {
              "content-type": "application/x-www-form-urlencoded",
              "content-encoding": label,
              authorization: basic(writeKey)
            })
            expectWellFormed(answer, { endpoint: endpoint.path, cut, compression, label })
            if (answer.status === 200) accepted.set(withId.messageId, (accepted.get(withId.messageId) ?? 0) + 1)
          }),
        { numRuns: 100 }
      )
    )

    it.effect("the server is still up, and every message answered 200 is delivered exactly once", () =>
      Effect.gen(function*() {
        const { accepted, baseUrl, receiver } = yield* FuzzApp
        const health = yield* Effect.promise(() => fetch(`${baseUrl}/healthz`).then((response) => response.status))
        expect(health).toBe(200)
        // Real messages in the mix, so the happy path is never empty whatever the generators drew.
        for (const endpoint of endpoints) {
          const messageId = freshId()
          const isBatch = endpoint.type === undefined
          const message = {
            type: endpoint.type ?? "track",
            userId: "u1",
            previousId: "u0",
            groupId: "g1",
            event: "Fuzz Control",
            messageId
          }
          const answer = yield* post(baseUrl, endpoint, JSON.stringify(isBatch ? { batch: [message] } : message), {
            "content-type": "application/json",
            authorization: basic(writeKey)
          })
          expect(answer.status).toBe(200)
          accepted.set(messageId, 1)
        }
        const delivered = () => {
          const counts = new Map<string, number>()
          for (const request of receiver.requests) {
            const id = (JSON.parse(request.body.toString("utf8")) as { messageId: string }).messageId
            counts.set(id, (counts.get(id) ?? 0) + 1)
          }
          return counts
        }
        for (let waited = 0; [...accepted.keys()].some((id) => !delivered().has(id)); waited += 100) {
          if (waited > 20_000) break
          yield* Effect.sleep("100 millis")
        }
        yield* Effect.sleep("300 millis") // a second delivery of anything would show now
        const counts = delivered()
        const wrong = [...accepted.keys()].filter((id) => counts.get(id) !== 1).map((id) => [id, counts.get(id) ?? 0])
        expect(wrong).toEqual([])
        // Each id was answered 200 once (ids are fresh per request), so no request was stored twice.
        expect([...accepted.values()].every((times) => times === 1)).toBe(true)
        expect(accepted.size).toBeGreaterThanOrEqual(endpoints.length)
      }))
  })
})

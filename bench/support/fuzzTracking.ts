/**
 * Soak inputs for the tracking API (REFERENCE §2): valid messages and batches at every path, invalid ones, garbled
 * bodies (truncated, not JSON, BOM, latin-1, invalid UTF-8, UTF-16, deep nesting), encodings (gzip, deflate, raw deflate,
 * broken, bombs, unsupported), oversized requests, every way of giving a write key, odd headers, wrong methods and
 * paths, and retries of earlier requests. Each generator yields a function of the run's context, which numbers ids.
 */
import fc from "fast-check"
import { deflateRawSync, deflateSync, gzipSync } from "node:zlib"
import { basic, type Case, type Expect, type FuzzContext, type HttpCase, selectsWebhooks } from "./fuzzCase.js"
import {
  anyDraft,
  draftOf,
  jsonObject,
  materialize,
  materializeAll,
  messageTypes,
  mutate,
  mutations
} from "./fuzzMessages.js"

export type Maker = (context: FuzzContext) => Case

const json = { "content-type": "application/json" }

/** A single message's case: its path, its body as the client sends it. */
const request = (
  label: string,
  expect: Expect,
  path: string,
  body: Buffer | undefined,
  headers: Record<string, string>,
  carried: HttpCase["carried"],
  anonymous = 0,
  method = "POST"
): HttpCase => ({ kind: "http", label, expect, method, path, headers, body, carried, anonymous })

const withKey = (context: FuzzContext, extra: Record<string, string> = {}) => ({
  ...json,
  authorization: basic(context.writeKey),
  ...extra
})

/** A valid message alone at its path (full or short), with or without `type`; retried now and then. */
const validSingle: fc.Arbitrary<Maker> = fc.tuple(anyDraft, fc.boolean(), fc.nat(9)).map(
  ([draft, withType, variant]) => (context) => {
    const short = variant === 0
    const made = materialize(draft, context, withType)
    const anonymous = made.carried === undefined && deliverable(made.json) ? 1 : 0
    const fuzzCase = request(
      short ? "valid single (short path)" : "valid single",
      "200",
      short ? `/v1/${draft.type.charAt(0)}` : `/v1/${draft.type}`,
      Buffer.from(JSON.stringify(made.json)),
      withKey(context),
      made.carried === undefined ? [] : [made.carried],
      anonymous
    )
    if (anonymous === 0) context.remember(fuzzCase)
    return fuzzCase
  }
)

const deliverable = (message: Record<string, unknown>) => selectsWebhooks(message.integrations)

const batchEnvelope = fc.record({
  context: fc.option(jsonObject, { nil: undefined, freq: 3 }),
  integrations: fc.option(fc.constantFrom({ All: false }, { Webhooks: false }, { All: false, Webhooks: true }, {}), {
    nil: undefined,
    freq: 4
  }),
  sentAt: fc.option(fc.constant(new Date().toISOString()), { nil: undefined, freq: 2 }),
  path: fc.constantFrom("/v1/batch", "/v1/batch", "/v1/import", "/v1/b")
})

/** A valid batch of 1 to 20 messages (now and then up to 300), envelope fields and all. */
const validBatch: fc.Arbitrary<Maker> = fc.tuple(
  fc.oneof(
    { weight: 20, arbitrary: fc.array(anyDraft, { minLength: 1, maxLength: 20 }) },
    { weight: 1, arbitrary: fc.array(anyDraft, { minLength: 100, maxLength: 300 }) }
  ),
  batchEnvelope
).map(([drafts, envelope]) => (context) => {
  const made = materializeAll(drafts, context, envelope.integrations)
  const body = {
    batch: made.json,
    context: envelope.context,
    integrations: envelope.integrations,
    sentAt: envelope.sentAt
  }
  const fuzzCase = request(
    "valid batch",
    "200",
    envelope.path,
    Buffer.from(JSON.stringify(body)),
    withKey(context),
    made.carried,
    made.anonymous
  )
  if (made.anonymous === 0) context.remember(fuzzCase)
  return fuzzCase
})

/** One rule of REFERENCE §2 broken in a message alone, or in one message of a batch (which is then refused whole). */
const invalidMessage: fc.Arbitrary<Maker> = fc.tuple(
  fc.constantFrom(...messageTypes).chain((type) => fc.tuple(fc.constant(type), draftOf(type))),
  fc.constantFrom(...mutations, "typeMismatch" as const),
  fc.nat(1000),
  fc.array(anyDraft, { maxLength: 8 }),
  fc.boolean()
).map(([[type, draft], mutation, pick, others, inBatch]) => (context) => {
  const made = materialize({ ...draft, withId: true }, context, inBatch)
  if (mutation === "typeMismatch") made.json.type = messageTypes[(messageTypes.indexOf(type) + 1 + (pick % 5)) % 6]
  else mutate(made.json, type, mutation, pick)
  const carried = made.carried === undefined || mutation === "longId" ? [] : [made.carried]
  if (!inBatch) {
    return request(
      `invalid single: ${mutation}`,
      "4xx",
      `/v1/${type}`,
      Buffer.from(JSON.stringify(made.json)),
      withKey(context),
      carried
    )
  }
  const rest = materializeAll(others, context)
  const batch = [...rest.json]
  batch.splice(pick % (batch.length + 1), 0, made.json)
  return request(
    `invalid in batch: ${mutation === "typeMismatch" ? "unknownType" : mutation}`,
    mutation === "typeMismatch" ? "any" : "4xx",
    "/v1/batch",
    Buffer.from(JSON.stringify({ batch })),
    withKey(context),
    [...carried, ...rest.carried],
    rest.anonymous
  )
})

/** A batch whose envelope is wrong: `batch` missing or not an array, `context` or `sentAt` wrong, too many messages. */
const invalidEnvelope: fc.Arbitrary<Maker> = fc.tuple(fc.nat(6), fc.array(anyDraft, { minLength: 1, maxLength: 5 }))
  .map(([variant, drafts]) => (context) => {
    if (variant === 6) {
      const tiny = Array.from(
        { length: 2501 },
        (_, i) => ({ type: "track", userId: `u-${i}`, event: "e", messageId: `${context.nextId()}` })
      )
      return request(
        "invalid envelope: 2501 messages",
        "4xx",
        "/v1/batch",
        Buffer.from(JSON.stringify({ batch: tiny })),
        withKey(context),
        tiny.map((m) => ({ id: m.messageId, deliver: true }))
      )
    }
    const made = materializeAll(drafts, context)
    const bodies: Array<Record<string, unknown>> = [
      { messages: made.json },
      { batch: {} },
      { batch: "x" },
      { batch: null },
      { batch: made.json, context: "ctx" },
      { batch: made.json, sentAt: "not a date" }
    ]
    return request(
      `invalid envelope: ${["no batch", "batch object", "batch string", "batch null", "context", "sentAt"][variant]}`,
      "4xx",
      "/v1/batch",
      Buffer.from(JSON.stringify(bodies[variant])),
      withKey(context),
      made.carried,
      made.anonymous
    )
  })

const garbles = [
  "truncated",
  "empty",
  "non-object",
  "random bytes",
  "BOM",
  "latin-1",
  "invalid UTF-8",
  "UTF-16",
  "deep nesting",
  "duplicate keys",
  "trailing garbage",
  "trailing whitespace",
  "huge number"
] as const

const invalidUtf8 = [
  Buffer.from([0xff]),
  Buffer.from([0xc0, 0xaf]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0x80, 0x80]),
  Buffer.from([0xf4, 0x90, 0x80, 0x80])
]

/** A valid track message whose bytes are damaged on the way, or a body that is not a message at all. */
const garbled: fc.Arbitrary<Maker> = fc.tuple(
  fc.constantFrom(...garbles),
  draftOf("track"),
  fc.nat(1_000_000),
  fc.uint8Array({ maxLength: 200 })
)
  .map(([garble, draft, pick, bytes]) => (context) => {
    const made = materialize({ ...draft, withId: true }, context, false)
    const carried = made.carried === undefined ? [] : [made.carried]
    const text = JSON.stringify(made.json)
    const send = (expect: Expect, body: Buffer, keep = carried) =>
      request(`garbled: ${garble}`, expect, "/v1/track", body, withKey(context), keep)
    switch (garble) {
      case "truncated":
        return send("4xx", Buffer.from(text.slice(0, pick % (text.length - 1))))
      case "empty":
        return send("4xx", Buffer.alloc(0), [])
      case "non-object":
        return send("4xx", Buffer.from(["[]", "1", "\"x\"", "null", "true", "[{}]"][pick % 6]!), [])
      case "random bytes":
        return send("4xx", Buffer.from(bytes), [])
      case "BOM":
        return send("any", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]))
      case "latin-1": {
        // Latin-1 keeps only the low byte of each character: every other field is made ASCII, so that the id and the
        // rest survive as sent and only the accented letters turn into invalid UTF-8.
        const ascii = JSON.parse(JSON.stringify(made.json).replace(/[^\x20-\x7e]/g, "?")) as Record<string, unknown>
        if (made.carried !== undefined) ascii.messageId = made.carried.id.replace(/[^\x20-\x7e]/g, "")
        ascii.properties = { name: "Café Müller ñ ß", note: "déjà vu" }
        const keep = made.carried === undefined ? [] : [{ ...made.carried, id: ascii.messageId as string }]
        return send("any", Buffer.from(JSON.stringify(ascii), "latin1"), keep)
      }
      case "invalid UTF-8": {
        made.json.properties = { name: "@@BAD@@" }
        const [before, after] = JSON.stringify(made.json).split("@@BAD@@")
        return send(
          "any",
          Buffer.concat([Buffer.from(before!), invalidUtf8[pick % invalidUtf8.length]!, Buffer.from(after!)])
        )
      }
      case "UTF-16":
        return send("any", Buffer.from(text, "utf16le"))
      case "deep nesting": {
        const depth = 500 + (pick % 6000)
        made.json.properties = { deep: "@@DEEP@@" }
        const [before, after] = JSON.stringify(made.json).split("\"@@DEEP@@\"")
        const nested = pick % 2 === 0
          ? `${"[".repeat(depth)}1${"]".repeat(depth)}`
          : `${"{\"a\":".repeat(depth)}1${"}".repeat(depth)}`
        return send("any", Buffer.from(`${before}${nested}${after}`))
      }
      case "duplicate keys":
        return send("any", Buffer.from(`{"userId":"u-first",${text.slice(1)}`))
      case "trailing garbage":
        return send("4xx", Buffer.from(`${text}xyz`))
      case "trailing whitespace":
        return send("200", Buffer.from(`\n ${text} \r\n\t`))
      case "huge number":
        made.json.properties = { n: "@@N@@" }
        return send(
          "any",
          Buffer.from(
            JSON.stringify(made.json).replace(
              "\"@@N@@\"",
              ["1e400", "-1e400", "123456789012345678901234567890", "-0"][pick % 4]!
            )
          )
        )
    }
  })

const encodings = [
  "gzip",
  "x-gzip",
  "GZIP",
  "deflate",
  "raw deflate",
  "identity",
  "bad gzip",
  "truncated gzip",
  "gzip label, plain body",
  "double gzip",
  "br",
  "gzip, deflate",
  "bomb"
] as const

/** Compressed bodies, as some clients send them, and compressed bodies that are broken or too large once decoded. */
const encoded: fc.Arbitrary<Maker> = fc.tuple(
  fc.constantFrom(...encodings),
  fc.array(anyDraft, { minLength: 1, maxLength: 10 }),
  fc.uint8Array({ minLength: 1, maxLength: 100 })
)
  .map(([encoding, drafts, noise]) => (context) => {
    const made = materializeAll(drafts, context)
    const plain = Buffer.from(JSON.stringify({ batch: made.json }))
    const send = (expect: Expect, label: string, body: Buffer, keep = true) =>
      request(
        `encoding: ${encoding}`,
        expect,
        "/v1/batch",
        body,
        withKey(context, { "content-encoding": label }),
        keep ? made.carried : [],
        keep ? made.anonymous : 0
      )
    switch (encoding) {
      case "gzip":
      case "x-gzip":
      case "GZIP":
        return send("200", encoding, gzipSync(plain))
      case "deflate":
        return send("200", "deflate", deflateSync(plain))
      case "raw deflate":
        return send("200", "deflate", deflateRawSync(plain))
      case "identity":
        return send("200", "identity", plain)
      case "bad gzip":
        return send("4xx", "gzip", Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0]), Buffer.from(noise)]))
      case "truncated gzip": {
        const zipped = gzipSync(plain)
        return send("4xx", "gzip", zipped.subarray(0, Math.max(1, zipped.length - 1 - (noise[0]! % 20))))
      }
      case "gzip label, plain body":
        return send("4xx", "gzip", plain)
      case "double gzip":
        return send("4xx", "gzip", gzipSync(gzipSync(plain)))
      case "br":
        return send("4xx", "br", gzipSync(plain))
      case "gzip, deflate":
        return send("4xx", "gzip, deflate", gzipSync(plain))
      case "bomb": {
        const bomb = Buffer.from(
          JSON.stringify({ batch: made.json, padding: " ".repeat(600_000 + noise.length * 10_000) })
        )
        return send("4xx", "gzip", gzipSync(bomb))
      }
    }
  })

/** Over REFERENCE §2's limits: a message over 32 KB, a body over 500 KB (declared or streamed). */
const oversized: fc.Arbitrary<Maker> = fc.tuple(fc.nat(2), draftOf("track")).map(([variant, draft]) => (context) => {
  const made = materialize({ ...draft, withId: true }, context, variant !== 0)
  made.json.properties = { blob: "x".repeat(variant === 0 ? 33 * 1024 : 30 * 1024) }
  const carried = made.carried === undefined ? [] : [made.carried]
  if (variant === 0) {
    return request(
      "oversized: message over 32 KB",
      "4xx",
      "/v1/track",
      Buffer.from(JSON.stringify(made.json)),
      withKey(context),
      carried
    )
  }
  const batch = Array.from(
    { length: 20 },
    (_, i) => ({ ...made.json, messageId: `${made.json.messageId as string}-${i}` })
  )
  const headers = withKey(context)
  return request(
    `oversized: body over 500 KB${variant === 2 ? " (gzip)" : ""}`,
    "4xx",
    "/v1/batch",
    variant === 2 ? gzipSync(JSON.stringify({ batch })) : Buffer.from(JSON.stringify({ batch })),
    variant === 2 ? { ...headers, "content-encoding": "gzip" } : headers,
    batch.map((m) => ({ id: m.messageId, deliver: true }))
  )
})

export { encoded, garbled, invalidEnvelope, invalidMessage, oversized, request, validBatch, validSingle, withKey }

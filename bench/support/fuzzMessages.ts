/**
 * Generated tracking messages for the soak (`bench/soak.ts`): valid ones of every type with the tolerances REFERENCE §2
 * grants (unknown fields, offsets, numeric ids, `originalTimestamp`, odd keys such as `__proto__`), and mutations each
 * of which breaks one rule of REFERENCE §2. A draft has no message id yet: the case that sends it numbers it.
 */
import fc from "fast-check"
import { type Carried, type FuzzContext, selectsWebhooks } from "./fuzzCase.js"

export const messageTypes = ["identify", "track", "page", "screen", "group", "alias"] as const
export type MessageType = typeof messageTypes[number]

/** A valid message without its id: `body` has every field but `messageId` (and `type`, added when needed). */
export interface Draft {
  readonly type: MessageType
  readonly body: Record<string, unknown>
  /** false: sent without `messageId`, the server makes one. */
  readonly withId: boolean
  /** Appended to the soak's id: quotes, backslashes, any Unicode (ids are opaque strings). */
  readonly idTail: string
}

const opt = <A>(arb: fc.Arbitrary<A>, freq = 2) => fc.option(arb, { nil: undefined, freq })

/** Mostly printable ASCII (cheap to draw), now and then any Unicode grapheme. */
const text = (maxLength: number) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength }) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength }) }
  )
const nonBlank = (maxLength: number) => text(maxLength).filter((value) => value.trim().length > 0)

const key = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom("__proto__", "constructor", "toString", "", "a.b", "$set", "Webhooks") }
)
const scalar = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null)
)
export const jsonObject = fc.dictionary(
  key,
  fc.oneof(
    { weight: 8, arbitrary: scalar },
    { weight: 1, arbitrary: fc.array(scalar, { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) }
  ),
  { maxKeys: 5 }
)

/** A user, anonymous, group or previous id: a string under the soak's own prefix, or a number (made a string). */
const identity = (prefix: string) =>
  fc.oneof(
    { weight: 4, arbitrary: text(20).map((tail) => `${prefix}${tail}`) },
    { weight: 1, arbitrary: fc.integer({ min: -1_000_000_000, max: 1_000_000_000 }) }
  )

const isoDate = fc.date({ noInvalidDate: true, min: new Date("2000-01-01T00:00:00Z"), max: new Date("2035-01-01Z") })
const timestamp = fc.oneof(
  isoDate.map((date) => date.toISOString()),
  isoDate.map((date) => date.toISOString().replace("Z", "+01:00")),
  isoDate.map((date) => date.toISOString().replace(/\.\d{3}Z$/, "-05:30")),
  isoDate.map((date) => date.toISOString().replace(/\.\d{3}Z$/, ".123456Z"))
)

const integrations = fc.record({
  All: opt(fc.boolean(), 1),
  Webhooks: opt(fc.oneof(fc.boolean(), fc.constant({}), fc.constant({ note: "x" }), fc.constant([])), 1),
  "Google Analytics": opt(fc.boolean(), 1)
}, { requiredKeys: [] })

const perType: { readonly [T in MessageType]: fc.Arbitrary<Record<string, unknown>> } = {
  identify: fc.record({ traits: opt(jsonObject) }, { requiredKeys: [] }),
  track: fc.record({ event: nonBlank(30), properties: opt(jsonObject) }, { requiredKeys: ["event"] }),
  page: fc.record({
    name: opt(text(20)),
    category: opt(text(20)),
    properties: opt(fc.record({ url: text(40), title: text(20), path: text(20), referrer: text(20) }))
  }, { requiredKeys: [] }),
  screen: fc.record({ name: opt(text(20)), properties: opt(jsonObject) }, { requiredKeys: [] }),
  group: fc.record({ groupId: identity("g-"), traits: opt(jsonObject) }, { requiredKeys: ["groupId"] }),
  alias: fc.record({ previousId: identity("p-") }, { requiredKeys: ["previousId"] })
}

const common = fc.record({
  who: fc.constantFrom("user", "anonymous", "both"),
  userId: identity("u-"),
  anonymousId: identity("a-"),
  timestamp: opt(timestamp),
  sentAt: opt(timestamp, 4),
  originalTimestamp: opt(timestamp, 4),
  context: opt(fc.oneof(jsonObject, fc.constant({ library: { name: "analytics-node", version: "3.1.0" } }))),
  integrations: opt(integrations, 3),
  extra: opt(fc.record({ _metadata: jsonObject, channel: fc.constantFrom("server", "browser"), version: fc.nat(3) })),
  withId: fc.nat(9).map((n) => n !== 0),
  idTail: fc.oneof(
    { weight: 5, arbitrary: fc.constant("") },
    {
      weight: 1,
      arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 8 }).filter((tail) => tail.length <= 40)
    },
    { weight: 1, arbitrary: fc.constantFrom("\"", "\\", "\"},{\"x\":\"", "é", "🙂", "\u2028", " tail") }
  )
})

export const draftOf = (type: MessageType): fc.Arbitrary<Draft> =>
  fc.tuple(common, perType[type]).map(([c, fields]) => {
    const body: Record<string, unknown> = { ...c.extra }
    if (type === "alias" || c.who !== "anonymous") body.userId = c.userId
    if (type !== "alias" && c.who !== "user") body.anonymousId = c.anonymousId
    for (const field of ["timestamp", "sentAt", "originalTimestamp", "context", "integrations"] as const) {
      if (c[field] !== undefined) body[field] = c[field]
    }
    return { type, body: { ...body, ...fields }, withId: c.withId, idTail: c.idTail }
  })

export const anyDraft: fc.Arbitrary<Draft> = fc.constantFrom(...messageTypes).chain(draftOf)

/** An object as the server reads it: keys whose value is `undefined` are not in the JSON sent. */
const asSent = (value: unknown): object | undefined =>
  typeof value === "object" && value !== null ? JSON.parse(JSON.stringify(value)) as object : undefined

/** A draft made a message: numbered (unless sent without an id), with its `type` when asked. */
export const materialize = (
  draft: Draft,
  context: FuzzContext,
  withType: boolean,
  batchIntegrations?: unknown
): { readonly json: Record<string, unknown>; readonly carried?: Carried | undefined } => {
  const json: Record<string, unknown> = withType ? { type: draft.type, ...draft.body } : { ...draft.body }
  const merged = { ...asSent(batchIntegrations), ...asSent(json.integrations) }
  if (!draft.withId) return { json }
  const id = `${context.nextId()}${draft.idTail}`
  json.messageId = id
  return { json, carried: { id, deliver: selectsWebhooks(merged) } }
}

/** Messages made from drafts: their JSON, the ids they carry, and how many without an id would be delivered. */
export const materializeAll = (
  drafts: ReadonlyArray<Draft>,
  context: FuzzContext,
  batchIntegrations?: unknown
) => {
  const messages = drafts.map((draft) => materialize(draft, context, true, batchIntegrations))
  const carried = messages.flatMap((message) => message.carried === undefined ? [] : [message.carried])
  const anonymous = messages.filter((message) =>
    message.carried === undefined &&
    selectsWebhooks({ ...asSent(batchIntegrations), ...asSent(message.json.integrations) })
  ).length
  return { json: messages.map((message) => message.json), carried, anonymous }
}

/** One rule of REFERENCE §2 broken; each applies to every type (falling back where the type has no such field). */
export const mutations = [
  "noIdentity",
  "badTimestamp",
  "badSentAt",
  "contextNotObject",
  "integrationsNotObject",
  "payloadNotObject",
  "longId",
  "emptyEvent",
  "identityNotString"
] as const
export type Mutation = typeof mutations[number]

export const mutate = (json: Record<string, unknown>, type: MessageType, mutation: Mutation, pick: number): void => {
  switch (mutation) {
    case "noIdentity":
      if (type === "alias") delete json.previousId
      else {
        delete json.userId
        delete json.anonymousId
      }
      return
    case "badTimestamp":
      json.timestamp = ["not a date", "2026-13-45T25:61:00Z", 12345, "", {}][pick % 5]
      return
    case "badSentAt":
      json.sentAt = ["yesterday", "2026-02-30", true][pick % 3]
      return
    case "contextNotObject":
      json.context = ["ctx", [1, 2], 5, true][pick % 4]
      return
    case "integrationsNotObject":
      json.integrations = ["all", [], 0][pick % 3]
      return
    case "payloadNotObject": {
      const field = type === "identify" || type === "group" ? "traits" : type === "alias" ? "context" : "properties"
      json[field] = ["x", [1], 7][pick % 3]
      return
    }
    case "longId":
      json.messageId = "x".repeat(101 + (pick % 50))
      return
    case "emptyEvent":
      if (type === "track") json.event = ["", undefined, 42][pick % 3]
      else if (type === "group") delete json.groupId
      else if (type === "alias") delete json.previousId
      else json.timestamp = "never"
      return
    case "identityNotString": {
      // The only identity the message has, so that no valid one stands in for it.
      json.userId = [{ id: 1 }, true, [], null][pick % 4]
      delete json.anonymousId
    }
  }
}

import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { identifyBody, identifyJobs, identifyTemplate } from "../../src/audiences/Identify.js"
import { audiencePropertyName } from "../../src/audiences/PropertyName.js"
import { encodeBody } from "../../src/domain/DeliveredBody.js"
import { uuidv7 } from "../../src/domain/MessageId.js"

/**
 * The identify of an audience or computed-trait change is the body ingest would build for that
 * identify call; the per-chunk template must produce exactly the same text.
 */

const now = Date.parse("2026-11-21T09:03:04.120Z")
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)
const pipeline = (property: string, value: unknown, userId: string, messageId: string) =>
  text(encodeBody(identifyBody(property, value, userId, messageId, now)))

const scalar = fc.oneof(
  fc.boolean(),
  fc.constant(null),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ unit: "binary" })
)

describe("identify bodies of audience and trait changes", () => {
  it("are the REFERENCE §3 identify body, as ingest stamps and builds it", () => {
    const messageId = uuidv7(now)
    expect(pipeline("high_value_users", true, "user-1", messageId)).toBe(
      `{"version":1,"type":"identify","messageId":"${messageId}","userId":"user-1",` +
        `"traits":{"high_value_users":true},"timestamp":"2026-11-21T09:03:04.120Z",` +
        `"receivedAt":"2026-11-21T09:03:04.120Z","context":{}}`
    )
  })

  it("the template gives the pipeline's text for any user id, property and value", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), scalar, (name, userId, value) => {
        const property = audiencePropertyName(name) || "p"
        const template = identifyTemplate(property, value, now)
        expect(template).toBeDefined()
        const messageId = uuidv7(now)
        expect(template!(userId, messageId)).toBe(pipeline(property, value, userId, messageId))
      }),
      { numRuns: 500 }
    )
  })

  it("identifyJobs: a new UUIDv7 per user, the pipeline's body, also when a value defeats the template", () => {
    const build = identifyJobs("plan", now)
    const sneaky = "HOOKRELAY-USER-ID-PLACEHOLDER-5b0f and HOOKRELAY-MESSAGE-ID-PLACEHOLDER-5b0f"
    expect(identifyTemplate("plan", sneaky, now)).toBeUndefined()
    const ids = new Set<string>()
    for (const [userId, value] of [["a", true], ["b\"\\\u2028é🎉", false], ["c", sneaky], ["d", 12.5]] as const) {
      const job = build(userId, value)
      expect(job.messageId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(job.bodyText).toBe(pipeline("plan", value, userId, job.messageId))
      ids.add(job.messageId)
    }
    expect(ids.size).toBe(4)
  })
})

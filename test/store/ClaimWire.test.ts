import { assert, describe, it } from "@effect/vitest"
import type { ClaimRow, ClaimTuple } from "../../src/store/Rows.js"
import { decodeClaim, encodeClaim } from "../../src/store/sqlite/ClaimWire.js"

/** A claimed row as the SQLite thread's raw statement returns it (`claimTupleColumns`): SQLite's `json_array` of the
 * fields, then the body. */
const row = (id: string, body: string, overrides: Partial<ClaimRow> = {}): ClaimTuple => {
  const columns: ClaimRow = {
    id,
    source_id: "s1",
    destination_id: "webhooks",
    message_id: `m-${id}`,
    user_id: null,
    kind: "message",
    body: Buffer.from(body),
    created_at: 1000,
    first_attempt_at: null,
    next_due_at: 2000,
    attempts: 0,
    endpoint_state: null,
    lease_expires_at: 62_000,
    trace_parent: null,
    ...overrides
  }
  const fields = JSON.stringify([
    columns.id,
    columns.source_id,
    columns.message_id,
    columns.user_id,
    columns.kind,
    columns.created_at,
    columns.first_attempt_at,
    columns.next_due_at,
    columns.attempts,
    columns.endpoint_state,
    columns.lease_expires_at,
    columns.body.byteLength,
    columns.destination_id,
    // SQLite appends the trace context only when the job has one (`claimTupleColumns`).
    ...(columns.trace_parent === null ? [] : [columns.trace_parent])
  ])
  return [fields, columns.body]
}

describe("ClaimWire", () => {
  it("carries every field and each job's exact body through one buffer", () => {
    const rows = [
      row("a", "{\"n\":1}"),
      row("b", "", { user_id: "u-1", kind: "delete", first_attempt_at: 1500, attempts: 3 }),
      row("c", "{\"é\":\"ü\"}", { destination_id: "crm", endpoint_state: "[{\"url\":\"https://x\",\"attempts\":2}]" })
    ]
    const wire = encodeClaim(rows)
    // What a transfer leaves behind: the decoder gets the same bytes in a fresh buffer.
    const jobs = decodeClaim({ fields: wire.fields, bodies: new Uint8Array(wire.bodies) })
    assert.deepStrictEqual(
      jobs.map((job) => ({ ...job, body: Buffer.from(job.body).toString("utf8") })),
      [
        {
          id: "a",
          sourceId: "s1",
          destinationId: "webhooks",
          messageId: "m-a",
          userId: null,
          kind: "message",
          body: "{\"n\":1}",
          createdAt: 1000,
          firstAttemptAt: null,
          nextDueAt: 2000,
          attemptCount: 0,
          endpointState: null,
          leaseExpiresAt: 62_000
        },
        {
          id: "b",
          sourceId: "s1",
          destinationId: "webhooks",
          messageId: "m-b",
          userId: "u-1",
          kind: "delete",
          body: "",
          createdAt: 1000,
          firstAttemptAt: 1500,
          nextDueAt: 2000,
          attemptCount: 3,
          endpointState: null,
          leaseExpiresAt: 62_000
        },
        {
          id: "c",
          sourceId: "s1",
          destinationId: "crm",
          messageId: "m-c",
          userId: null,
          kind: "message",
          body: "{\"é\":\"ü\"}",
          createdAt: 1000,
          firstAttemptAt: null,
          nextDueAt: 2000,
          attemptCount: 0,
          endpointState: [{ url: "https://x", attempts: 2 }],
          leaseExpiresAt: 62_000
        }
      ]
    )
  })

  it("hands the jobs over in due order, ties by id, each with its own body", () => {
    const wire = encodeClaim([
      row("c", "third", { next_due_at: 3000 }),
      row("b", "second", { next_due_at: 2000 }),
      row("a", "first", { next_due_at: 2000 }),
      row("d", "fourth", { next_due_at: 4000 })
    ])
    const jobs = decodeClaim(wire)
    assert.deepStrictEqual(jobs.map((job) => job.id), ["a", "b", "c", "d"])
    assert.deepStrictEqual(jobs.map((job) => Buffer.from(job.body).toString("utf8")), [
      "first",
      "second",
      "third",
      "fourth"
    ])
  })

  it("carries a job's trace context, and gives a job without one no property at all", () => {
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    const jobs = decodeClaim(encodeClaim([row("a", "x", { trace_parent: traceparent }), row("b", "y")]))
    assert.strictEqual(jobs[0]!.traceparent, traceparent)
    assert.isFalse("traceparent" in jobs[1]!)
  })

  it("an empty claim is an empty list", () => {
    assert.deepStrictEqual(decodeClaim(encodeClaim([])), [])
  })
})

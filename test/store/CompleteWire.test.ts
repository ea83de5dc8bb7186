import { describe, expect, it } from "@effect/vitest"
import { decodeComplete, encodeComplete } from "../../src/store/sqlite/CompleteWire.js"
import type { CompleteRequest } from "../../src/store/sqlite/SqliteRequests.js"

const crossing = (request: CompleteRequest) => {
  const wire = encodeComplete(request)
  return decodeComplete(structuredClone(wire, { transfer: [wire.numbers.buffer] }))
}

describe("CompleteWire", () => {
  it("carries every kind of completion with its optional fields, in order", () => {
    const request: CompleteRequest = {
      owner: "dispatcher-1",
      completions: [
        {
          _tag: "Delivered",
          jobId: "j1",
          at: 1_700_000_000_123,
          firstAttemptAt: 1_700_000_000_001,
          sourceId: "src_ünïcode",
          destinationId: "crm_ü",
          createdAt: 1_699_999_999_999
        },
        { _tag: "Delivered", jobId: "j2", at: 1_700_000_000_200 },
        { _tag: "Delivered", jobId: "j3", at: 5, firstAttemptAt: 4, endpointState: { "https://a.test/": "delivered" } },
        {
          _tag: "Retry",
          jobId: "j4",
          nextDueAt: 1_700_000_060_000,
          firstAttemptAt: 1_700_000_000_000,
          endpointState: [{ url: "https://b.test/", failures: 2 }],
          lastError: "HTTP 503 — «busy»\u0000"
        },
        { _tag: "Retry", jobId: "j5", nextDueAt: 7, firstAttemptAt: 6, endpointState: null, lastError: null },
        { _tag: "Dead", jobId: "j6", at: 9, lastError: "window closed", firstAttemptAt: 1 },
        { _tag: "Dead", jobId: "j7", at: 10, lastError: null }
      ],
      attempts: [
        {
          jobId: "j1",
          url: "https://a.test/hook",
          attempt: 1,
          startedAt: 1_700_000_000_001,
          durationMs: 12.75,
          statusCode: 200,
          error: null,
          outcome: "success",
          responseSnippet: "ok"
        },
        {
          jobId: "j4",
          url: "https://b.test/",
          attempt: 3,
          startedAt: 2,
          durationMs: 5000,
          statusCode: null,
          error: "timeout after 5 s",
          outcome: "retryable",
          responseSnippet: null
        }
      ]
    }
    const decoded = crossing(request)
    expect(decoded.owner).toBe("dispatcher-1")
    expect(decoded.completions).toStrictEqual([
      {
        _tag: "Delivered",
        jobId: "j1",
        at: 1_700_000_000_123,
        firstAttemptAt: 1_700_000_000_001,
        endpointState: undefined,
        sourceId: "src_ünïcode",
        destinationId: "crm_ü",
        createdAt: 1_699_999_999_999
      },
      {
        _tag: "Delivered",
        jobId: "j2",
        at: 1_700_000_000_200,
        firstAttemptAt: undefined,
        endpointState: undefined,
        sourceId: undefined,
        destinationId: undefined,
        createdAt: undefined
      },
      {
        _tag: "Delivered",
        jobId: "j3",
        at: 5,
        firstAttemptAt: 4,
        endpointState: { "https://a.test/": "delivered" },
        sourceId: undefined,
        destinationId: undefined,
        createdAt: undefined
      },
      request.completions[3],
      request.completions[4],
      { _tag: "Dead", jobId: "j6", at: 9, lastError: "window closed", firstAttemptAt: 1, endpointState: undefined },
      { _tag: "Dead", jobId: "j7", at: 10, lastError: null, firstAttemptAt: undefined, endpointState: undefined }
    ])
    expect(decoded.attempts).toStrictEqual(request.attempts)
  })

  it("stores a missing status code, error and snippet as null, as the attempts insert does", () => {
    const decoded = crossing({
      owner: "o",
      completions: [],
      attempts: [{ jobId: "j", url: "https://a.test/", attempt: 1, startedAt: 0, durationMs: 0, outcome: "aborted" }]
    })
    expect(decoded.attempts).toStrictEqual([
      {
        jobId: "j",
        url: "https://a.test/",
        attempt: 1,
        startedAt: 0,
        durationMs: 0,
        statusCode: null,
        error: null,
        outcome: "aborted",
        responseSnippet: null
      }
    ])
    expect(decoded.completions).toStrictEqual([])
  })
})

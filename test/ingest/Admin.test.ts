import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { startServer, waitUntil } from "../delivery/support.js"
import { adminToken, type App, startApp } from "../support/app.js"
import { bearer, call, pollUntil, track } from "../support/http.js"

/** The admin API (REFERENCE §1, §7) over real HTTP, against the whole server. */

const nothingStored = (app: App, sourceId: string) =>
  Effect.gen(function*() {
    expect(yield* app.sources.listSources()).toStrictEqual([])
    expect(Option.isNone(yield* app.sources.getSource(sourceId))).toBe(true)
  })

const isoWithMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const validSource = {
  writeKey: "wk_admin_tests_0123456789abcdef",
  webhooks: {
    enabled: true,
    sharedSecret: "whsec_admin_tests_very_secret_value",
    endpoints: [
      {
        url: "https://hooks.example.com/in?team=growth",
        headers: {
          Authorization: "Bearer receiver-credential-abcdef123456",
          "X-Api-Key": "apikey-0123456789abcdef",
          "X-Auth": "auth-value-0123456789abcdef",
          "X-Upstream": "Basic dXNlcjpwYXNzd29yZDEyMzQ1",
          "X-Team": "growth"
        }
      },
      { url: "http://backup.example.com:8081/hook" }
    ]
  }
}

describe("admin API: access", () => {
  it.live("without HOOKRELAY_ADMIN_TOKEN the admin API does not exist: 404 whatever the token", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ admin: false, dispatch: false })
      for (const authorization of [null, bearer(adminToken), bearer(""), "Bearer"]) {
        const list = yield* call(app.baseUrl, "GET", "/admin/sources", { authorization })
        expect(list.status).toBe(404)
        expect(list.body).toMatchObject({ success: false, code: "admin_disabled" })
      }
      const put = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: validSource })
      expect(put.status).toBe(404)
      const replay = yield* call(app.baseUrl, "POST", "/admin/dead-letters/some-job/replay")
      expect(replay.status).toBe(404)
      yield* nothingStored(app, "web")
    }))

  it.live("401 with a JSON error without a bearer token, with a wrong one, or with another scheme", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const refused = [
        null,
        bearer("wrong-token"),
        bearer(`${adminToken}x`),
        bearer(adminToken.slice(0, -1)),
        `Basic ${Buffer.from(`${adminToken}:`).toString("base64")}`,
        adminToken
      ]
      for (const authorization of refused) {
        const answer = yield* call(app.baseUrl, "GET", "/admin/sources", { authorization })
        expect(answer.status, String(authorization)).toBe(401)
        expect(answer.headers.get("www-authenticate")).toBe("Bearer")
        expect(answer.body).toMatchObject({ success: false, code: "unauthorized", errors: [] })
      }
      const put = yield* call(app.baseUrl, "PUT", "/admin/sources/web", {
        body: validSource,
        authorization: bearer("wrong-token")
      })
      expect(put.status).toBe(401)
      yield* nothingStored(app, "web")
      const allowed = yield* call(app.baseUrl, "GET", "/admin/sources")
      expect(allowed).toMatchObject({ status: 200, body: { sources: [] } })
    }))
})

describe("admin API: source settings validation (REFERENCE §1)", () => {
  const endpoint = (headers: Record<string, string>) => ({
    ...validSource,
    webhooks: { enabled: true, endpoints: [{ url: "https://hooks.example.com/in", headers }] }
  })
  const cases: ReadonlyArray<{ readonly name: string; readonly body: unknown; readonly path: string }> = [
    {
      name: "no endpoints",
      body: { ...validSource, webhooks: { enabled: true, endpoints: [] } },
      path: "webhooks.endpoints"
    },
    {
      name: "six endpoints",
      body: {
        ...validSource,
        webhooks: {
          enabled: true,
          endpoints: Array.from({ length: 6 }, (_, i) => ({ url: `https://hooks.example.com/${i}` }))
        }
      },
      path: "webhooks.endpoints"
    },
    {
      name: "an ftp: URL",
      body: { ...validSource, webhooks: { enabled: true, endpoints: [{ url: "ftp://hooks.example.com/in" }] } },
      path: "webhooks.endpoints[0].url"
    },
    {
      name: "a relative URL in the second endpoint",
      body: {
        ...validSource,
        webhooks: { enabled: true, endpoints: [{ url: "https://hooks.example.com/in" }, { url: "/hook" }] }
      },
      path: "webhooks.endpoints[1].url"
    },
    { name: "a header name with a space", body: endpoint({ "X Bad": "v" }), path: "webhooks.endpoints[0].headers" },
    { name: "a header name with a colon", body: endpoint({ "X-Bad:": "v" }), path: "webhooks.endpoints[0].headers" },
    {
      name: "a header value with CR/LF",
      body: endpoint({ "X-Injected": "ok\r\nX-Evil: 1" }),
      path: "webhooks.endpoints[0].headers"
    },
    {
      name: "a header value with a bare LF",
      body: endpoint({ "X-Injected": "ok\nmore" }),
      path: "webhooks.endpoints[0].headers"
    },
    {
      name: "an X-Signature override",
      body: endpoint({ "x-signature": "forged" }),
      path: "webhooks.endpoints[0].headers"
    },
    { name: "a User-Agent override", body: endpoint({ "User-Agent": "me" }), path: "webhooks.endpoints[0].headers" },
    {
      name: "a Content-Type override",
      body: endpoint({ "CONTENT-TYPE": "text/plain" }),
      path: "webhooks.endpoints[0].headers"
    },
    {
      name: "a Content-Length override",
      body: endpoint({ "Content-Length": "1" }),
      path: "webhooks.endpoints[0].headers"
    },
    { name: "a Host override", body: endpoint({ host: "evil.example" }), path: "webhooks.endpoints[0].headers" },
    {
      name: "a Transfer-Encoding override",
      body: endpoint({ "Transfer-Encoding": "chunked" }),
      path: "webhooks.endpoints[0].headers"
    },
    { name: "no write key", body: { webhooks: validSource.webhooks }, path: "writeKey" },
    {
      name: "enabled missing",
      body: { ...validSource, webhooks: { endpoints: validSource.webhooks.endpoints } },
      path: "webhooks.enabled"
    }
  ]

  it.live("each invalid body is refused with 400 naming the field, and nothing is stored", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      for (const { body, name, path } of cases) {
        const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body })
        expect(answer.status, name).toBe(400)
        expect(answer.body, name).toMatchObject({ success: false, code: "invalid_settings" })
        const paths: Array<string> = answer.body.errors.map((issue: { path: string }) => issue.path)
        expect(paths.some((p) => p === path || p.startsWith(`${path}.`)), `${name}: ${JSON.stringify(paths)}`)
          .toBe(true)
        expect(answer.body.message, name).toContain(path)
        yield* nothingStored(app, "web")
      }
    }))

  it.live("the offending header is named, with the reason", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const reserved = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: endpoint({ "X-Signature": "f" }) })
      expect(reserved.body.errors).toStrictEqual([{
        path: "webhooks.endpoints[0].headers.X-Signature",
        message: "the header X-Signature is set by hookrelay and cannot be overridden"
      }])
      const crlf = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: endpoint({ "X-Note": "a\r\nb" }) })
      expect(crlf.body.errors).toStrictEqual([{
        path: "webhooks.endpoints[0].headers.X-Note",
        message: "must not contain CR, LF or NUL characters"
      }])
      const token = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: endpoint({ "X(Bad)": "v" }) })
      expect(token.body.errors).toStrictEqual([{
        path: "webhooks.endpoints[0].headers.X(Bad)",
        message: "must be a valid HTTP header name (an RFC 9110 token)"
      }])
      yield* nothingStored(app, "web")
    }))

  it.live("a body that is not JSON is 400 invalid_json; a bad source id is 400 naming id", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const notJson = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: "{nope" })
      expect(notJson.status).toBe(400)
      expect(notJson.body).toMatchObject({ success: false, code: "invalid_json" })
      const badId = yield* call(app.baseUrl, "PUT", "/admin/sources/-web", { body: validSource })
      expect(badId.status).toBe(400)
      expect(badId.body.errors.map((issue: { path: string }) => issue.path)).toStrictEqual(["id"])
      yield* nothingStored(app, "web")
    }))
})

describe("admin API: sources", () => {
  it.live("PUT stores the source and answers 200 with every secret masked; GET one and list show the same", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const put = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: validSource })
      expect(put.status).toBe(200)
      expect(put.body).toStrictEqual({
        id: "web",
        writeKey: expect.any(String),
        webhooks: {
          enabled: true,
          hasSharedSecret: true,
          sharedSecret: expect.any(String),
          endpoints: [
            {
              url: "https://hooks.example.com/in?team=growth",
              headers: {
                Authorization: "Bear…56",
                "X-Api-Key": "apik…ef",
                "X-Auth": "auth…ef",
                "X-Upstream": "Basi…Q1",
                "X-Team": "growth"
              }
            },
            { url: "http://backup.example.com:8081/hook" }
          ]
        },
        createdAt: expect.stringMatching(isoWithMillis),
        updatedAt: expect.stringMatching(isoWithMillis)
      })
      const secrets = [
        validSource.writeKey,
        validSource.webhooks.sharedSecret,
        validSource.webhooks.endpoints[0]!.headers!.Authorization,
        validSource.webhooks.endpoints[0]!.headers!["X-Api-Key"],
        validSource.webhooks.endpoints[0]!.headers!["X-Auth"],
        validSource.webhooks.endpoints[0]!.headers!["X-Upstream"],
        "dXNlcjpwYXNz",
        // No long piece of them either.
        "admin_tests_0123",
        "very_secret",
        "credential-abc",
        "0123456789ab"
      ]
      const one = yield* call(app.baseUrl, "GET", "/admin/sources/web")
      const list = yield* call(app.baseUrl, "GET", "/admin/sources")
      expect(one.status).toBe(200)
      expect(one.body).toStrictEqual(put.body)
      expect(list).toMatchObject({ status: 200, body: { sources: [put.body] } })
      for (const answer of [put, one, list]) {
        for (const secret of secrets) expect(answer.text).not.toContain(secret)
      }

      // Stored in full: the write key authenticates and the settings are intact.
      const stored = yield* app.sources.getSource("web")
      expect(Option.getOrThrow(stored)).toMatchObject({ id: "web", ...validSource })
      expect(yield* track(app.baseUrl, validSource.writeKey, { userId: "u", event: "E" })).toBe(200)
    }))

  it.live("PUT replaces the settings; a source without a secret shows hasSharedSecret false", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      expect((yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: validSource })).status).toBe(200)
      const replaced = yield* call(app.baseUrl, "PUT", "/admin/sources/web", {
        body: {
          writeKey: "wk_admin_tests_rotated_key_999",
          webhooks: { enabled: false, endpoints: [{ url: "https://new.example.com/hook" }] }
        }
      })
      expect(replaced.status).toBe(200)
      expect(replaced.body.webhooks).toStrictEqual({
        enabled: false,
        hasSharedSecret: false,
        endpoints: [{ url: "https://new.example.com/hook" }]
      })
      const list = yield* call(app.baseUrl, "GET", "/admin/sources")
      expect(list.body.sources).toHaveLength(1)
      expect(yield* track(app.baseUrl, validSource.writeKey, { userId: "u", event: "E" })).toBe(401)
      expect(yield* track(app.baseUrl, "wk_admin_tests_rotated_key_999", { userId: "u", event: "E" })).toBe(200)
    }))

  it.live("DELETE answers 204, then GET and DELETE answer 404 and the write key no longer works", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      expect((yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: validSource })).status).toBe(200)
      const deleted = yield* call(app.baseUrl, "DELETE", "/admin/sources/web")
      expect(deleted.status).toBe(204)
      expect(deleted.text).toBe("")
      const get = yield* call(app.baseUrl, "GET", "/admin/sources/web")
      expect(get.status).toBe(404)
      expect(get.body).toMatchObject({ success: false, code: "not_found" })
      expect((yield* call(app.baseUrl, "DELETE", "/admin/sources/web")).status).toBe(404)
      expect((yield* call(app.baseUrl, "GET", "/admin/sources")).body).toStrictEqual({ sources: [] })
      expect(yield* track(app.baseUrl, validSource.writeKey, { userId: "u", event: "E" })).toBe(401)
    }))

  it.live("a write key another source uses is refused with 409 naming writeKey; a source keeps its own", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      expect((yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: validSource })).status).toBe(200)
      const conflict = yield* call(app.baseUrl, "PUT", "/admin/sources/ios", { body: validSource })
      expect(conflict.status).toBe(409)
      expect(conflict.body).toMatchObject({
        success: false,
        code: "write_key_conflict",
        errors: [{ path: "writeKey" }]
      })
      expect(conflict.text).not.toContain(validSource.writeKey)
      expect(Option.isNone(yield* app.sources.getSource("ios"))).toBe(true)
      expect((yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: validSource })).status).toBe(200)
      expect((yield* call(app.baseUrl, "GET", "/admin/sources")).body.sources).toHaveLength(1)
    }))
})

/** A loopback receiver whose answers the test sets: `answers[i]` for the i-th request, then `then`. */
const scriptedReceiver = (answers: ReadonlyArray<readonly [number, string]>) =>
  Effect.gen(function*() {
    const script = { answers: [...answers], then: [200, "ok"] as readonly [number, string] }
    const server = yield* startServer((_request, response, index) => {
      const [status, text] = script.answers[index] ?? script.then
      response.writeHead(status, { "content-type": "text/plain" }).end(text)
    })
    return { server, script }
  })

const messageIdsReceived = (receiver: { readonly requests: ReadonlyArray<{ readonly body: Buffer }> }) =>
  receiver.requests.map((request) => (JSON.parse(request.body.toString("utf8")) as { messageId: string }).messageId)

describe("admin API: messages and dead letters", () => {
  it.live("GET /admin/messages/{id}: the job with every attempt (status, duration, response snippet)", () =>
    Effect.gen(function*() {
      const { server: receiver } = yield* scriptedReceiver([[500, "temporarily broken"], [200, "thanks"]])
      const app = yield* startApp()
      const url = `${receiver.url}/hook`
      expect(
        (yield* call(app.baseUrl, "PUT", "/admin/sources/web", {
          body: { writeKey: "wk_admin_messages_1", webhooks: { enabled: true, endpoints: [{ url }] } }
        })).status
      ).toBe(200)
      expect(yield* track(app.baseUrl, "wk_admin_messages_1", { userId: "u1", event: "E", messageId: "m-retry" }))
        .toBe(200)

      // The first attempt fails with 500; the retry (backoff from 1 s, jittered) succeeds.
      yield* waitUntil(() => receiver.requests.length >= 2, "a retry", 5_000)
      const answer = yield* pollUntil(
        call(app.baseUrl, "GET", "/admin/messages/m-retry"),
        (answer) => answer.body?.jobs?.[0]?.status === "delivered",
        "the job is delivered"
      )
      expect(answer.status).toBe(200)
      expect(answer.body.messageId).toBe("m-retry")
      expect(answer.body.jobs).toHaveLength(1)
      const job = answer.body.jobs[0]
      expect(job).toMatchObject({
        sourceId: "web",
        messageId: "m-retry",
        userId: "u1",
        kind: "message",
        status: "delivered",
        attemptCount: 2,
        createdAt: expect.stringMatching(isoWithMillis),
        firstAttemptAt: expect.stringMatching(isoWithMillis),
        finishedAt: expect.stringMatching(isoWithMillis)
      })
      expect(job.attempts).toStrictEqual([
        {
          url,
          attempt: 1,
          startedAt: expect.stringMatching(isoWithMillis),
          durationMs: expect.any(Number),
          statusCode: 500,
          error: null,
          outcome: "retryable",
          responseSnippet: "temporarily broken"
        },
        {
          url,
          attempt: 2,
          startedAt: expect.stringMatching(isoWithMillis),
          durationMs: expect.any(Number),
          statusCode: 200,
          error: null,
          outcome: "success",
          responseSnippet: "thanks"
        }
      ])
      for (const attempt of job.attempts) expect(attempt.durationMs).toBeGreaterThanOrEqual(0)
      const gap = Date.parse(job.attempts[1].startedAt) - Date.parse(job.attempts[0].startedAt)
      expect(gap).toBeGreaterThanOrEqual(800)
      expect(messageIdsReceived(receiver)).toStrictEqual(["m-retry", "m-retry"])

      const unknown = yield* call(app.baseUrl, "GET", "/admin/messages/no-such-message")
      expect(unknown.status).toBe(404)
      expect(unknown.body).toMatchObject({ success: false, code: "not_found" })
      expect((yield* call(app.baseUrl, "GET", "/admin/messages/m-retry", { authorization: null })).status).toBe(401)
    }))

  it.live("a permanent 404 dead-letters the job; it is listed, replayed, delivered again and no longer listed", () =>
    Effect.gen(function*() {
      const { script, server: receiver } = yield* scriptedReceiver([])
      script.then = [404, "no such hook"]
      const app = yield* startApp()
      const url = `${receiver.url}/hook`
      for (const [id, writeKey] of [["web", "wk_admin_dead_web"], ["ios", "wk_admin_dead_ios"]] as const) {
        const put = yield* call(app.baseUrl, "PUT", `/admin/sources/${id}`, {
          body: { writeKey, webhooks: { enabled: true, endpoints: [{ url }] } }
        })
        expect(put.status).toBe(200)
      }
      expect(yield* track(app.baseUrl, "wk_admin_dead_web", { userId: "u1", event: "E", messageId: "m-dead-1" }))
        .toBe(200)
      expect(yield* track(app.baseUrl, "wk_admin_dead_web", { userId: "u2", event: "E", messageId: "m-dead-2" }))
        .toBe(200)
      expect(yield* track(app.baseUrl, "wk_admin_dead_ios", { userId: "u3", event: "E", messageId: "m-dead-3" }))
        .toBe(200)

      const listed = yield* pollUntil(
        call(app.baseUrl, "GET", "/admin/dead-letters?sourceId=web&limit=10"),
        (answer) => answer.body?.deadLetters?.length === 2,
        "both of web's jobs are dead"
      )
      expect(listed.status).toBe(200)
      for (const dead of listed.body.deadLetters) {
        expect(dead).toMatchObject({
          sourceId: "web",
          kind: "message",
          status: "dead",
          attemptCount: 1,
          finishedAt: expect.stringMatching(isoWithMillis)
        })
        expect(dead.lastError).toEqual(expect.stringContaining("404"))
      }
      expect(listed.body.deadLetters.map((dead: { messageId: string }) => dead.messageId).sort()).toStrictEqual([
        "m-dead-1",
        "m-dead-2"
      ])
      const limited = yield* call(app.baseUrl, "GET", "/admin/dead-letters?sourceId=web&limit=1")
      expect(limited.body.deadLetters).toHaveLength(1)
      const everySource = yield* pollUntil(
        call(app.baseUrl, "GET", "/admin/dead-letters?limit=10"),
        (answer) => answer.body?.deadLetters?.length === 3,
        "ios's job is dead too"
      )
      expect(everySource.body.deadLetters.map((dead: { sourceId: string }) => dead.sourceId).sort()).toStrictEqual([
        "ios",
        "web",
        "web"
      ])
      // A permanent failure is not retried: one request per message.
      expect(receiver.requests).toHaveLength(3)
      for (const limit of ["0", "1001", "ten", "1.5"]) {
        const bad = yield* call(app.baseUrl, "GET", `/admin/dead-letters?limit=${limit}`)
        expect(bad.status, limit).toBe(400)
        expect(bad.body).toMatchObject({ success: false, errors: [{ path: "limit" }] })
      }
      const message = yield* call(app.baseUrl, "GET", "/admin/messages/m-dead-1")
      expect(message.body.jobs[0]).toMatchObject({
        status: "dead",
        attempts: [{ url, attempt: 1, statusCode: 404, outcome: "permanent", responseSnippet: "no such hook" }]
      })

      // The receiver is fixed; the operator replays one dead letter.
      script.then = [200, "ok now"]
      const jobId: string = listed.body.deadLetters.find((dead: { messageId: string }) =>
        dead.messageId === "m-dead-1"
      ).id
      const replay = yield* call(app.baseUrl, "POST", `/admin/dead-letters/${jobId}/replay`)
      expect(replay.status).toBe(202)
      expect(replay.body).toStrictEqual({ success: true, jobId, status: "pending" })

      yield* waitUntil(() => receiver.requests.length >= 4, "the replayed delivery")
      const delivered = yield* pollUntil(
        call(app.baseUrl, "GET", "/admin/messages/m-dead-1"),
        (answer) => answer.body?.jobs?.[0]?.status === "delivered",
        "the replayed job is delivered"
      )
      expect(delivered.body.jobs[0].id).toBe(jobId)
      expect(delivered.body.jobs[0].attempts.map((a: { statusCode: number; outcome: string }) => [
        a.statusCode,
        a.outcome
      ])).toStrictEqual([[404, "permanent"], [200, "success"]])
      // The same bytes as the first time (serialized once at ingest, signed the same).
      const forM1 = receiver.requests.filter((request) => request.body.toString("utf8").includes("\"m-dead-1\""))
      expect(forM1).toHaveLength(2)
      expect(forM1[1]!.body.equals(forM1[0]!.body)).toBe(true)

      const after = yield* call(app.baseUrl, "GET", "/admin/dead-letters?sourceId=web&limit=10")
      expect(after.body.deadLetters.map((dead: { messageId: string }) => dead.messageId)).toStrictEqual(["m-dead-2"])
      const again = yield* call(app.baseUrl, "POST", `/admin/dead-letters/${jobId}/replay`)
      expect(again.status).toBe(404)
      expect(again.body).toMatchObject({ success: false, code: "not_found" })
      expect((yield* call(app.baseUrl, "POST", "/admin/dead-letters/no-such-job/replay")).status).toBe(404)
      // Nothing else was delivered meanwhile: m-dead-2 stays dead.
      expect(messageIdsReceived(receiver).filter((id) => id === "m-dead-2")).toHaveLength(1)
    }))
})

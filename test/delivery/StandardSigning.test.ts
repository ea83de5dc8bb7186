import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { deliver } from "../../src/delivery/Deliver.js"
import * as Transport from "../../src/delivery/Transport.js"
import { signingPublicKey } from "../../src/domain/Signing.js"
import { startApp } from "../support/app.js"
import { verifiesWith, verifiesWithPublicKey } from "./standardSupport.js"
import { adjustUntil, realWait, startServer, waitUntil } from "./support.js"
import type { ReceivedRequest, TestServer } from "./support.js"

/**
 * Standard Webhooks signing end to end (real store, dispatcher and loopback receiver, on TestClock), checked with the
 * `standardwebhooks` package rather than our signer.
 */

const start = Date.parse("2026-11-21T12:00:00.000Z")

/** A receiver answering the statuses given, in order, then 200; a 429 asks for a retry in exactly 5 seconds. */
const receiverAnswering = (statuses: Array<number>) =>
  startServer((_request, response) => {
    const status = statuses.shift() ?? 200
    response.writeHead(status, status === 429 ? { "retry-after": "5" } : {}).end("ok")
  })

const setup = (webhooks: Record<string, unknown>, statuses: Array<number> = [], dispatch = true) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(start)
    const receiver = yield* receiverAnswering(statuses)
    // The clock moves minutes at a time and stops at every sleep due on the way: the gauges that wake often (ingest
    // pressure, the idle claim poll; neither is what these tests are about) wake seldom here. Ingest rings the doorbell.
    const app = yield* startApp({
      dispatch,
      pressure: { sampleEvery: "10 seconds" },
      dispatcher: { idlePoll: "10 seconds" }
    })
    const saved = yield* app.relaySources.putSource({
      id: "std",
      writeKey: "wk_standard_signing",
      webhooks: { enabled: true, endpoints: [{ url: `${receiver.url}/hook` }], ...webhooks }
    })
    return { app, receiver, saved }
  })

const timestampOf = (request: ReceivedRequest) => Number(request.headers["webhook-timestamp"])

/**
 * A job's three lives: its first attempt (429, retry in 5 s), a retry on TestClock (400: dead), and a replay of the dead letter a
 * minute later (200). Returns the three requests.
 */
const firstRetryReplay = (
  app: Effect.Success<ReturnType<typeof startApp>>,
  receiver: TestServer,
  trigger: Effect.Effect<unknown, unknown>
) =>
  Effect.gen(function*() {
    const from = receiver.requests.length
    yield* trigger
    yield* waitUntil(() => receiver.requests.length === from + 1, "the first attempt")
    yield* adjustUntil(() => receiver.requests.length === from + 2, "retried", "1 second")
    expect(Number(receiver.requests[from + 1]!.headers["webhook-timestamp"])).toBe(
      Number(receiver.requests[from]!.headers["webhook-timestamp"]) + 5
    )
    // The dead letter is written by the dispatcher's batched completions: poll for it.
    let dead: ReadonlyArray<{ readonly id: string }> = []
    for (let tries = 0; dead.length === 0 && tries < 500; tries++) {
      dead = yield* app.relayMessages.deadLetters({ sourceId: "std", limit: 10 }).pipe(Effect.orDie)
      if (dead.length === 0) yield* TestClock.adjust("10 millis").pipe(Effect.andThen(realWait(5)))
    }
    expect(dead).toHaveLength(1)
    yield* TestClock.adjust("1 minute")
    expect(yield* app.relayMessages.replayDeadLetter(dead[0]!.id).pipe(Effect.orDie)).toBe(true)
    yield* waitUntil(() => receiver.requests.length === from + 3, "the replay delivered")
    return receiver.requests.slice(from, from + 3)
  })

const expectSignedAlike = (requests: ReadonlyArray<ReceivedRequest>, secret: string) => {
  const [first, retry, replay] = requests as [ReceivedRequest, ReceivedRequest, ReceivedRequest]
  for (const request of requests) {
    expect(verifiesWith(secret, request)).toBe(true)
    expect(request.headers["x-signature"]).toBeUndefined()
  }
  expect(retry.headers["webhook-id"]).toBe(first.headers["webhook-id"])
  expect(replay.headers["webhook-id"]).toBe(first.headers["webhook-id"])
  expect(timestampOf(retry)).toBe(timestampOf(first) + 5)
  expect(timestampOf(replay)).toBeGreaterThanOrEqual(timestampOf(retry) + 60)
  expect(first.body.equals(replay.body)).toBe(true)
}

describe("Standard Webhooks signing, verified with the standardwebhooks package", () => {
  it.effect("message, deletion and audience identify jobs: first attempt, retry and replay, one webhook-id each", () =>
    Effect.gen(function*() {
      const { app, receiver, saved } = yield* setup({ signing: "standard" }, [429, 400, 200, 429, 400, 200, 429, 400])
      const secret = saved.generatedSecret!
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)

      const message = yield* firstRetryReplay(
        app,
        receiver,
        app.relay.ingest("std", [{ type: "track", event: "Signed", userId: "u-1", messageId: "msg-signed-1" }])
      )
      expectSignedAlike(message, secret)
      expect(message[0]!.headers["webhook-id"]).toBe("msg-signed-1")

      const deletion = yield* firstRetryReplay(app, receiver, app.relayAudiences.deleteUser("u-1"))
      expectSignedAlike(deletion, secret)
      expect(JSON.parse(deletion[0]!.body.toString()).type).toBe("delete")

      const identify = yield* firstRetryReplay(app, receiver, app.relayAudiences.syncAudience("std", "VIP", ["u-2"]))
      expectSignedAlike(identify, secret)
      expect(JSON.parse(identify[0]!.body.toString()).type).toBe("identify")

      const ids = new Set([message, deletion, identify].map((requests) => requests[0]!.headers["webhook-id"]))
      expect(ids.size).toBe(3)
    }))

  it.effect("\"both\" sends X-Signature and the Standard Webhooks headers; a wrong secret does not verify", () =>
    Effect.gen(function*() {
      const { app, receiver, saved } = yield* setup({ signing: "both", sharedSecret: "segment-secret" })
      yield* app.relay.ingest("std", [{ type: "track", event: "Both", userId: "u-1" }])
      yield* waitUntil(() => receiver.requests.length === 1, "delivered")
      const request = receiver.requests[0]!
      expect(request.headers["x-signature"]).toMatch(/^[0-9a-f]{40}$/)
      expect(verifiesWith(saved.generatedSecret!, request)).toBe(true)
      expect(verifiesWith("whsec_" + Buffer.alloc(32, 7).toString("base64"), request)).toBe(false)
    }))
})

/** One delivery of `body` with the source's settings as stored now, at TestClock's time, over real HTTP. */
const deliverNow = (app: Effect.Success<ReturnType<typeof startApp>>, messageId: string) =>
  Effect.gen(function*() {
    const source = yield* app.relaySources.getSource("std")
    return yield* deliver({
      jobId: `job-${messageId}`,
      messageId,
      body: new TextEncoder().encode(`{"type":"track","messageId":"${messageId}"}`),
      settings: source.webhooks!
    }).pipe(Effect.provide(Transport.layer()))
  })

describe("rotation without downtime (TestClock)", () => {
  it.effect("before the old secret expires both verify; after, only the new one", () =>
    Effect.gen(function*() {
      const old = "whsec_" + Buffer.alloc(32, 1).toString("base64")
      const { app, receiver, saved } = yield* setup(
        { signing: "standard", signingSecrets: [{ secret: old }] },
        [],
        false
      )
      expect(saved.generatedSecret).toBeUndefined()
      // Short spans: the engine's periodic work wakes at every step TestClock takes.
      const rotated = yield* app.relaySources.rotateSecret("std", "1 minute")
      expect(rotated.secret).not.toBe(old)
      expect(rotated.source.webhooks?.signingSecrets?.[1]?.expiresAt).toBe(new Date(start + 60_000).toISOString())

      yield* deliverNow(app, "during")
      const during = receiver.requests[0]!
      expect(String(during.headers["webhook-signature"]).split(" ")).toHaveLength(2)
      expect(verifiesWith(old, during)).toBe(true)
      expect(verifiesWith(rotated.secret, during)).toBe(true)

      yield* TestClock.adjust("59 seconds")
      yield* deliverNow(app, "just before expiry")
      expect(verifiesWith(old, receiver.requests[1]!)).toBe(true)
      yield* TestClock.adjust("1 second")
      yield* deliverNow(app, "after")
      const after = receiver.requests[2]!
      expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1)
      expect(verifiesWith(rotated.secret, after)).toBe(true)
      // A receiver that never took the new secret fails from now on.
      expect(verifiesWith(old, after)).toBe(false)
    }))

  it.effect("a rotation keeps at most 10 unexpired secrets; expired ones are pruned first", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ signing: "standard" }, [], false)
      for (let i = 0; i < 9; i++) yield* app.relaySources.rotateSecret("std", "1 minute")
      const refused = yield* Effect.flip(app.relaySources.rotateSecret("std", "1 minute"))
      expect(refused._tag).toBe("InvalidAdminRequest")
      yield* TestClock.adjust("1 minute")
      const rotated = yield* app.relaySources.rotateSecret("std")
      expect(rotated.source.webhooks?.signingSecrets).toHaveLength(2)
    }))
})

describe("asymmetric (ed25519) signatures", () => {
  it.effect("a receiver holding only the whpk_ public key verifies; a tampered body fails", () =>
    Effect.gen(function*() {
      const { app, receiver, saved } = yield* setup({ signing: "standard", asymmetric: true })
      // Receivers verify with the public key: no shared secret is generated.
      expect(saved.generatedSecret).toBeUndefined()
      const signingKey = saved.webhooks?.signingKey
      expect(signingKey).toMatch(/^whsk_/)
      const source = yield* app.relaySources.getSource("std")
      const publicKey = signingPublicKey(source.webhooks!)!
      expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/)

      yield* app.relay.ingest("std", [{ type: "track", event: "Asymmetric", userId: "u-1" }])
      yield* waitUntil(() => receiver.requests.length === 1, "delivered")
      const request = receiver.requests[0]!
      expect(String(request.headers["webhook-signature"])).toMatch(/^v1a,/)
      expect(verifiesWithPublicKey(publicKey, request)).toBe(true)
      const tampered = Buffer.from(request.body.toString().replace("Asymmetric", "Asymmetric!"))
      expect(verifiesWithPublicKey(publicKey, request, tampered)).toBe(false)

      // Saving again without the key keeps it: the public key receivers hold stays valid.
      yield* app.relaySources.putSource({
        id: "std",
        writeKey: "wk_standard_signing",
        webhooks: { enabled: true, endpoints: [{ url: `${receiver.url}/hook` }], signing: "standard", asymmetric: true }
      })
      expect((yield* app.relaySources.getSource("std")).webhooks?.signingKey).toBe(signingKey)
    }))
})

describe("one job, several URLs (TestClock, scripted transport)", () => {
  it.effect("every URL gets the same webhook-id; a URL failing permanently does not change the winner's", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const secret = "whsec_" + Buffer.alloc(32, 5).toString("base64")
      const seen: Array<{ readonly url: string; readonly headers: Record<string, string> }> = []
      const transport = Transport.layerTest((request) => {
        const headers: Record<string, string> = {}
        for (let i = 0; i < request.headers.length; i += 2) headers[request.headers[i]!] = request.headers[i + 1]!
        seen.push({ url: `${request.origin}${request.path}`, headers })
        return Effect.succeed(Transport.response(request.path === "/a" ? 410 : 200))
      })
      const body = new TextEncoder().encode(`{"type":"track","messageId":"m-urls"}`)
      yield* deliver({
        jobId: "job-urls",
        messageId: "m-urls",
        body,
        settings: {
          endpoints: [{ url: "https://a.example/a" }, { url: "https://b.example/b", headers: { "X-Team": "b" } }],
          signing: "standard",
          signingSecrets: [{ secret }]
        }
      }).pipe(Effect.provide(transport))
      expect(seen.map((request) => request.url).sort()).toStrictEqual(["https://a.example/a", "https://b.example/b"])
      const [a, b] = seen.map((request) => request.headers)
      expect(a!["webhook-id"]).toBe("m-urls")
      expect(b!["webhook-id"]).toBe("m-urls")
      // Same instant, same signature: computed once for the job's second.
      expect(a!["webhook-signature"]).toBe(b!["webhook-signature"])
      expect(a!["webhook-timestamp"]).toBe(String(start / 1000))
      expect(a!["X-Signature"]).toBeUndefined()
      expect(b!["X-Team"]).toBe("b")
    }))

  it.effect("a message id a header cannot carry as is goes percent-encoded, the same on every attempt", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const ids: Array<string> = []
      const transport = Transport.layerTest((request, call) => {
        ids.push(request.headers[request.headers.indexOf("webhook-id") + 1]!)
        return Effect.succeed(Transport.response(call === 1 ? 503 : 200))
      })
      const fiber = yield* deliver({
        jobId: "job-utf8",
        messageId: "commande n°1",
        body: new TextEncoder().encode("{}"),
        settings: {
          endpoints: [{ url: "https://a.example/a" }],
          signing: "standard",
          signingSecrets: [{ secret: "whsec_" + Buffer.alloc(32, 6).toString("base64") }]
        }
      }).pipe(Effect.provide(transport), Effect.forkChild)
      yield* TestClock.adjust("1 minute")
      yield* Fiber.join(fiber)
      expect(ids).toStrictEqual(["commande%20n%C2%B01", "commande%20n%C2%B01"])
    }))
})

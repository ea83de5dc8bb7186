import { Effect } from "effect"
import { createHmac } from "node:crypto"
import { adminToken } from "./app.js"

/** `Authorization` for a write key, as Segment clients send it (user = key, empty password). */
export const basic = (writeKey: string) => `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`

export const bearer = (token: string) => `Bearer ${token}`

/** The `X-Signature` a receiver expects for these bytes. */
export const signatureOf = (secret: string, body: Buffer) => createHmac("sha1", secret).update(body).digest("hex")

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: any
}

/**
 * One HTTP request to the server under test, answered with its status, headers and JSON body.
 * `authorization` defaults to the test admin token; `null` sends none.
 */
export const call = (
  baseUrl: string,
  method: string,
  path: string,
  options: { readonly body?: unknown; readonly authorization?: string | null } = {}
): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const authorization = options.authorization === undefined ? bearer(adminToken) : options.authorization
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(authorization !== null && { authorization }),
        ...(options.body !== undefined && { "content-type": "application/json" })
      },
      ...(options.body !== undefined &&
        { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) })
    })
    const text = await response.text()
    return {
      status: response.status,
      headers: response.headers,
      text,
      body: text === "" ? undefined : JSON.parse(text)
    }
  })

/** One `track` through the tracking API; the HTTP status. */
export const track = (baseUrl: string, writeKey: string, message: Record<string, unknown>) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic(writeKey) },
      body: JSON.stringify(message)
    })
    await response.arrayBuffer()
    return response.status
  })

/** Polls an effect on real time until `done` holds of its result (10 s at most). */
export const pollUntil = <A, E>(effect: Effect.Effect<A, E>, done: (value: A) => boolean, what: string) =>
  Effect.gen(function*() {
    for (let waited = 0; waited <= 10_000; waited += 20) {
      const value = yield* effect
      if (done(value)) return value
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.die(new Error(`timed out waiting until ${what}`))
  })

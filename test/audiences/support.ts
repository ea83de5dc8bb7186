import { Effect } from "effect"
import { createHmac } from "node:crypto"
import type { ReceivedRequest } from "../delivery/support.js"
import { adminToken } from "../support/app.js"

/** An admin API answer, body parsed. */
export interface Answer {
  readonly status: number
  readonly body: any
}

/** Calls the admin API over real HTTP with the test token (or `authorization: null` for none). */
export const admin = (
  baseUrl: string,
  method: string,
  path: string,
  options: { readonly body?: unknown; readonly authorization?: string | null } = {}
): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const authorization = options.authorization === undefined ? `Bearer ${adminToken}` : options.authorization
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
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
  })

export const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString("base64")}`

/** Ingests one tracking call through the tracking API; returns the HTTP status. */
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

export const signatureOf = (secret: string, body: Buffer) => createHmac("sha1", secret).update(body).digest("hex")

export const parsed = (request: ReceivedRequest) => JSON.parse(request.body.toString("utf8")) as Record<string, any>

export const isoWithMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const uuidV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

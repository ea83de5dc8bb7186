import { expect } from "@effect/vitest"
import { Effect } from "effect"
import type { App } from "../support/app.js"
import { bearer, call } from "../support/http.js"

/** A new API key made with the admin token; its text and id. */
export const createKey = (
  app: App,
  body: { readonly name: string; readonly scopes: ReadonlyArray<string>; readonly sourceIds?: ReadonlyArray<string> }
) =>
  Effect.gen(function*() {
    const answer = yield* call(app.baseUrl, "POST", "/admin/keys", { body })
    expect(answer.status, JSON.stringify(answer.body)).toBe(201)
    return { id: answer.body.id as string, key: answer.body.key as string, authorization: bearer(answer.body.key) }
  })

/** A source with one webhook URL, stored with the admin token. */
export const putSource = (app: App, id: string, url = "https://hooks.example.com/in") =>
  Effect.gen(function*() {
    const answer = yield* call(app.baseUrl, "PUT", `/admin/sources/${id}`, {
      body: { writeKey: `wk_keys_${id}_0123456789`, webhooks: { enabled: true, endpoints: [{ url }] } }
    })
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
  })

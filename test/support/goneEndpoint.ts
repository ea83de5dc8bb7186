import { Effect } from "effect"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import { startServer } from "../delivery/support.js"
import { startApp } from "./app.js"
import { call } from "./http.js"

/**
 * The whole server with a source `web` whose one URL is a loopback receiver answering `status()` (410 at first: the
 * URL is disabled by its first answer). `setStatus` changes the answer.
 */
export const startWithGoneEndpoint = (writeKey: string) =>
  Effect.gen(function*() {
    let status = 410
    const receiver = yield* startServer((_, response) => {
      response.statusCode = status
      response.end()
    })
    const app = yield* startApp({ egress: EgressPolicy.layer({ allowPrivateNetworks: true }) })
    const url = `${receiver.url}/hook`
    const put = yield* call(app.baseUrl, "PUT", "/admin/sources/web", {
      body: { writeKey, webhooks: { enabled: true, endpoints: [{ url }] } }
    })
    if (put.status !== 200) return yield* Effect.die(new Error(`PUT /admin/sources/web answered ${put.status}`))
    return { app, receiver, url, setStatus: (next: number) => void (status = next) }
  })

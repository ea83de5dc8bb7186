// Un-awaited calls that are refused (no user id, a 33 KB message, after close) between valid ones,
// and a page given `traits`. Prints what onOutcome heard; the process must stay up and exit 0.
import { createClient } from "../../../src/client/index.js"

const heard: Array<Record<string, unknown>> = []
const client = createClient({
  writeKey: process.env.WRITE_KEY ?? "wk",
  endpoint: `http://127.0.0.1:${process.env.PORT}`,
  onOutcome: (outcome) => {
    switch (outcome._tag) {
      case "Refused":
        heard.push({
          refused: outcome.type,
          error: outcome.error._tag,
          path: "path" in outcome.error ? outcome.error.path : undefined
        })
        break
      case "Success":
        heard.push({ delivered: outcome.messages.map((message) => message.messageId) })
        break
      default:
        heard.push({ other: outcome._tag })
    }
  }
})

client.track({ userId: "u1", event: "Before", messageId: "valid-1" })
// @ts-expect-error: no userId or anonymousId, as a JavaScript caller can write
client.track({ event: "No User" })
client.track({ userId: "u1", event: "Too Large", properties: { blob: "x".repeat(33 * 1024) } })
client.page({
  userId: "u1",
  name: "Pricing",
  traits: { url: "https://example.com/pricing", title: "Pricing" },
  messageId: "page-1"
})
client.track({ userId: "u1", event: "After", messageId: "valid-2" })
const closing = client.close()
client.track({ userId: "u1", event: "Too Late", messageId: "late-1" })
await closing
client.identify({ userId: "u1", traits: { plan: "pro" } })
// Let any rejection that would be unhandled surface before the process ends.
await new Promise((resolve) => setTimeout(resolve, 50))
console.log(JSON.stringify(heard))

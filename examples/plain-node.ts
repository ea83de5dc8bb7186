/**
 * Recording messages from plain Node code (an Express-style handler) with the Promise client:
 * calls only queue; batches go out in the background; `close()` flushes before exit.
 *
 *   HOOKRELAY_ENDPOINT=http://127.0.0.1:8080 npx tsx examples/plain-node.ts
 */
import { createClient } from "hookrelay/client"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"

export const makeApp = (endpoint: string) => {
  const analytics = createClient({
    writeKey: "wk_web_backend",
    endpoint,
    flushAt: 20,
    flushAfter: "1 second",
    // Calls are not awaited below: a refused call (its field named) or a failed batch is seen here.
    onOutcome: (outcome) => {
      if (outcome._tag === "Refused") console.error(`analytics: ${outcome.error.message}`)
      if (outcome._tag === "Failure") {
        console.error(`analytics: ${outcome.messages.length} lost: ${outcome.error.message}`)
      }
    }
  })

  // What an Express route handler would do: record without waiting, answer. A call only queues;
  // its Promise never rejects unhandled, so not awaiting it cannot crash the server.
  const signup = (request: IncomingMessage, response: ServerResponse) => {
    const userId = new URL(request.url ?? "/", "http://localhost").searchParams.get("user") ?? "anonymous"
    void analytics.identify({ userId, traits: { plan: "free" } })
    void analytics.track({ userId, event: "Signed Up", properties: { source: "example" } })
    response.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ userId }))
  }

  const server = createServer(signup)
  return { server, analytics }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { analytics, server } = makeApp(process.env.HOOKRELAY_ENDPOINT ?? "http://127.0.0.1:8080")
  server.listen(3000, "127.0.0.1", () => console.log("try: curl -X POST 'http://127.0.0.1:3000/signup?user=ada'"))
  process.on("SIGINT", () => {
    server.close()
    void analytics.close().then(() => process.exit(0))
  })
}

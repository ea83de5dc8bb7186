// The snippet, as a user writes it: calls not awaited, then close. Run in a child process
// with Node's default unhandled-rejection mode, so that one unhandled rejection exits with code 1.
import { createClient } from "../../../src/client/index.js"

const PORT = process.env.PORT
const client = createClient({
  writeKey: process.env.WRITE_KEY ?? "wk",
  endpoint: `http://127.0.0.1:${PORT}`,
  flushAt: 20,
  flushAfter: 60000
})
for (let i = 0; i < 45; i++) client.track({ userId: "u" + (i % 5), event: "Client Check", properties: { i } })
await client.close()

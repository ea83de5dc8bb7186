// The snippet of issue 36, as a new user writes it against the installed package: calls not
// awaited, then close. Node's default unhandled-rejection mode: one unhandled rejection exits 1.
/* global process */
import { createClient } from "hookrelay/client"

const PORT = process.env.PORT
const client = createClient({ writeKey: "wk", endpoint: `http://127.0.0.1:${PORT}`, flushAt: 20, flushAfter: 60000 })
for (let i = 0; i < 45; i++) client.track({ userId: "u" + (i % 5), event: "Client Check", properties: { i } })
await client.close()

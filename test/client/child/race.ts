// 10 000 un-awaited calls from 50 concurrent async tasks; close() is called while the last of them
// are still being made. Prints which calls were made before close() and what onOutcome heard.
import { createClient } from "../../../src/client/index.js"

const tasks = 50
const callsPerTask = 200
const closeAfter = Number(process.env.CLOSE_AFTER ?? 9_975)

const refused: Array<string> = []
let dropped = 0
const client = createClient({
  writeKey: "wk_race",
  endpoint: `http://127.0.0.1:${process.env.PORT}`,
  onOutcome: (outcome) => {
    if (outcome._tag === "Refused") refused.push(`${outcome.error._tag}`)
    if (outcome._tag === "Dropped") dropped++
  }
})

const before: Array<string> = []
const after: Array<string> = []
let made = 0
let closing: Promise<void> | undefined

const task = async (t: number) => {
  for (let k = 0; k < callsPerTask; k++) {
    const messageId = `race-${t}-${k}`
    ;(closing === undefined ? before : after).push(messageId)
    client.track({ userId: `user-${t}`, event: "Race", messageId })
    made++
    if (made === closeAfter) closing = client.close()
    // Let the other tasks, the batcher and the sockets run between calls.
    if (k % 3 === 0) await new Promise((resolve) => setImmediate(resolve))
    else await Promise.resolve()
  }
}

await Promise.all(Array.from({ length: tasks }, (_, t) => task(t)))
await (closing ?? client.close())
console.log(JSON.stringify({ before, after, refused, dropped }))

import { describe, expect, it } from "@effect/vitest"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { ClientClosed, createClient, type Outcome } from "../../src/client/index.js"

// The Promise facade in this process, over a real loopback receiver (the facade runs on the real
// clock). The child-process tests (FireAndForget.test.ts) hold the same calls to Node's default
// unhandled-rejection mode.

const startReceiver = () =>
  new Promise<{ server: Server; port: number; batches: Array<Array<any>> }>((resolve) => {
    const batches: Array<Array<any>> = []
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        batches.push(JSON.parse(Buffer.concat(chunks).toString("utf8")).batch)
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => resolve({ server, port: (server.address() as AddressInfo).port, batches }))
  })

describe("the Promise client: the order of calls is the contract", () => {
  it("flushes and closes made right after createClient, several at once, each cover the calls before them", async () => {
    const receiver = await startReceiver()
    try {
      const events: Array<string> = []
      const client = createClient({
        writeKey: "wk",
        endpoint: `http://127.0.0.1:${receiver.port}`,
        flushAt: 20,
        flushAfter: 60_000,
        onOutcome: (outcome: Outcome) => {
          if (outcome._tag === "Success") events.push(`sent ${outcome.messages.map((m) => m.event).join(",")}`)
        }
      })
      const note = (what: string) => (promise: Promise<void>) => promise.then(() => events.push(what))
      // Nothing awaited until the end: the engine has not started when these calls are made.
      const settled = [
        note("flush 0")(client.flush()),
        client.track({ userId: "u", event: "a" }),
        client.track({ userId: "u", event: "b" }),
        note("flush 1")(client.flush()),
        note("flush 2")(client.flush()),
        client.track({ userId: "u", event: "c" }),
        note("close 1")(client.close()),
        note("close 2")(client.close()),
        note("flush 3")(client.flush())
      ]
      const late = client.track({ userId: "u", event: "late" })
      await Promise.all(settled)
      await expect(late).rejects.toBeInstanceOf(ClientClosed)
      expect(receiver.batches.map((batch) => batch.map((message) => message.event))).toStrictEqual([
        ["a", "b"],
        ["c"]
      ])
      // Each flush resolved after the messages before it were sent; close after everything.
      expect(events.indexOf("flush 1")).toBeGreaterThan(events.indexOf("sent a,b"))
      expect(events.indexOf("flush 2")).toBeGreaterThan(events.indexOf("sent a,b"))
      expect(events.indexOf("close 1")).toBeGreaterThan(events.indexOf("sent c"))
      expect(events.indexOf("close 2")).toBeGreaterThan(events.indexOf("sent c"))
      expect(events.indexOf("flush 3")).toBeGreaterThan(events.indexOf("sent c"))
    } finally {
      receiver.server.close()
    }
  })

  it("a call's Promise is marked handled: an ignored refusal is no unhandled rejection", async () => {
    const unhandled: Array<unknown> = []
    const listener = (reason: unknown) => unhandled.push(reason)
    process.on("unhandledRejection", listener)
    const receiver = await startReceiver()
    try {
      const refused: Array<string> = []
      const client = createClient({
        writeKey: "wk",
        endpoint: `http://127.0.0.1:${receiver.port}`,
        onOutcome: (outcome) => {
          if (outcome._tag === "Refused") refused.push(outcome.error._tag)
        }
      })
      void client.track({ event: "No User" } as never)
      await client.flush()
      void client.track({ event: "No User" } as never)
      await client.close()
      void client.track({ userId: "u", event: "late" })
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(unhandled).toStrictEqual([])
      expect(refused).toStrictEqual(["InvalidMessage", "InvalidMessage", "ClientClosed"])
    } finally {
      process.off("unhandledRejection", listener)
      receiver.server.close()
    }
  })
})

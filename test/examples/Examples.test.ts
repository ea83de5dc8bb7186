import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { createHmac } from "node:crypto"
import type { AddressInfo } from "node:net"
import { configureDestination, layer, placeOrders } from "../../examples/embedded.js"
import { makeApp } from "../../examples/plain-node.js"
import { startServer, waitUntil } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"
import {
  outageDirectory,
  restartableServer,
  sleep,
  stablePort,
  startReceiver,
  waitUntil as waitFor
} from "../support/outageProcesses.js"
import { writeReadmeClientModule } from "../support/readmeClient.js"
import { repoRoot } from "../support/serverProcess.js"

describe("examples", () => {
  it.live("embedded: an Effect service forwards its events and sees every outcome", () =>
    Effect.gen(function*() {
      const receiver = yield* startServer((_request, response) => response.writeHead(200).end())
      const directory = yield* tempDirectory
      const outcomes = yield* Effect.gen(function*() {
        yield* configureDestination(`${receiver.url}/hook`)
        return yield* placeOrders(3)
      }).pipe(Effect.provide(layer(directory)))
      expect(outcomes.map((outcome) => [outcome.messageId, outcome.status]).sort()).toStrictEqual([
        ["order-placed-o-1", "delivered"],
        ["order-placed-o-2", "delivered"],
        ["order-placed-o-3", "delivered"]
      ])
      const request = receiver.requests.find((r) => r.body.includes("order-placed-o-2"))!
      expect(JSON.parse(request.body.toString("utf8"))).toMatchObject({
        type: "track",
        event: "Order Placed",
        userId: "c-2",
        properties: { orderId: "o-2", total: 20, currency: "EUR" }
      })
      expect(request.headers["x-signature"]).toBe(createHmac("sha1", "shop-secret").update(request.body).digest("hex"))
    }))

  it.live("plain Node: a request handler records through the Promise client, close() flushes", () =>
    Effect.gen(function*() {
      const receiver = yield* startServer((_request, response) => response.writeHead(200).end())
      const app = yield* startApp()
      yield* app.relaySources.putSource({
        id: "web",
        writeKey: "wk_web_backend",
        webhooks: { enabled: true, endpoints: [{ url: receiver.url }] }
      })
      const { analytics, server } = makeApp(app.baseUrl)
      yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve())))
      const port = (server.address() as AddressInfo).port
      const answer = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/signup?user=ada`, { method: "POST" }).then((r) => r.status)
      )
      expect(answer).toBe(201)
      yield* Effect.promise(() => analytics.close())
      server.close()
      yield* waitUntil(() => receiver.requests.length === 2, "identify and track delivered")
      const types = receiver.requests.map((r) => JSON.parse(r.body.toString("utf8")).type).sort()
      expect(types).toStrictEqual(["identify", "track"])
    }))
  // The example makes its calls and closes at once, so the server is down before it starts: its first batch meets the
  // outage, and the server (the same data, the same port) comes back a few seconds later, while `close()` waits.
  it("README's client example, in a process of its own, through a server restart: the receiver gets its calls", async ({
    onTestFinished
  }) => {
    const cleanup: Array<() => void> = []
    onTestFinished(() => {
      for (const step of cleanup.splice(0).reverse()) step()
    })
    const receiverPort = await stablePort()
    const directory = outageDirectory("hookrelay-readme-outage-", "wk_web_backend", receiverPort)
    cleanup.push(directory.remove)
    const receiver = await startReceiver(receiverPort, true)
    cleanup.push(() => receiver.server.close())
    const server = restartableServer(await stablePort(), directory.env)
    cleanup.push(server.kill)
    await server.start()
    expect(await server.stop("SIGTERM")).toBe(0)

    const example = writeReadmeClientModule("readme-user")
    cleanup.push(example.remove)
    const child = spawn(process.execPath, ["--import", "tsx", example.file], {
      cwd: repoRoot,
      // Without DEBUG: the example's own output is checked, and it prints only what it reports as lost or refused.
      env: { ...process.env, DEBUG: "", HOOKRELAY_ENDPOINT: server.url },
      stdio: ["ignore", "pipe", "pipe"]
    })
    cleanup.push(() => void child.kill("SIGKILL"))
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)))
    await sleep(3_000)
    expect(child.exitCode).toBe(null)
    await server.start()

    expect({ exit: await exited, output }).toStrictEqual({ exit: 0, output: "" })
    await waitFor(() => receiver.bodies.length >= 2, "the example's two calls delivered", 60_000)
    const received = receiver.bodies.map((body) => [body.type, body.userId, body.event ?? body.name]).sort()
    expect(received).toStrictEqual([["page", "readme-user", "Pricing"], ["track", "readme-user", "Signed Up"]])
  }, 120_000)
})

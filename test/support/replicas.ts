import { fork } from "node:child_process"
import { createHmac } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { basicAuth, type ServerProcess, startServerProcess } from "./serverProcess.js"

/**
 * Real server processes (`src/main.ts`) as the replicas of one deployment, a receiver that records each delivery's
 * Standard Webhooks headers with the time it arrived, and the admin and tracking calls the replica tests make.
 */

export const replicaAdminToken = "adm_replicas_0123456789abcdef"
export const replicaWriteKey = "wk_replicas_0123456789abcdef"

export const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

export const waitUntil = async (condition: () => boolean | Promise<boolean>, what: string, timeoutMillis = 20_000) => {
  const deadline = Date.now() + timeoutMillis
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await sleep(20)
  }
}

export interface Delivery {
  readonly at: number
  readonly messageId: string
  readonly webhookId: string
  readonly timestamp: string
  readonly signatures: ReadonlyArray<string>
  readonly body: string
}

export interface Receiver {
  readonly url: string
  readonly deliveries: Array<Delivery>
  readonly close: () => Promise<void>
}

/**
 * A loopback receiver answering 200 (or what `status` says at the time) after `delayMillis`, recording every request
 * as it arrives (and handing it to `onDelivery`).
 */
export const startReceiver = (
  delayMillis = 0,
  status: () => number = () => 200,
  onDelivery: (delivery: Delivery) => void = () => {}
): Promise<Receiver> =>
  new Promise((resolve, reject) => {
    const deliveries: Array<Delivery> = []
    const server: Server = createServer((request, response) => {
      const at = Date.now()
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        const header = (name: string) => String(request.headers[name] ?? "")
        const delivery: Delivery = {
          at,
          messageId: String((JSON.parse(body) as { messageId?: string }).messageId),
          webhookId: header("webhook-id"),
          timestamp: header("webhook-timestamp"),
          signatures: header("webhook-signature").split(" ").filter((part) => part !== ""),
          body
        }
        deliveries.push(delivery)
        onDelivery(delivery)
        const code = status()
        const answer = () => response.writeHead(code).end()
        if (delayMillis > 0) setTimeout(answer, delayMillis)
        else answer()
      })
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        deliveries,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      }))
  })

/**
 * `startReceiver` in a process of its own (`receiverProcess.ts`), answering 200 at once: its arrival times are taken
 * where nothing else runs, not in a test worker whose collections and other files could hold them back and bunch them.
 */
export const startReceiverProcess = (): Promise<Receiver> =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL("./receiverProcess.ts", import.meta.url)), {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    const deliveries: Array<Delivery> = []
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    child.once("error", reject)
    void exited.then(() => reject(new Error("the receiver process exited before it listened")))
    child.on("message", (message: Delivery | { readonly url: string }) => {
      if ("at" in message) deliveries.push(message)
      else {
        resolve({
          url: message.url,
          deliveries,
          close: () => {
            child.kill()
            return exited
          }
        })
      }
    })
  })

/** The `v1,` signature a Standard Webhooks secret gives this delivery. */
export const signatureWith = (secret: string, delivery: Delivery): string =>
  `v1,${
    createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
      .update(`${delivery.webhookId}.${delivery.timestamp}.${delivery.body}`)
      .digest("base64")
  }`

export const signedWith = (secret: string, delivery: Delivery): boolean =>
  delivery.signatures.includes(signatureWith(secret, delivery))

/** A replica: the server on SQLite (`dataDirectory`) or on the PostgreSQL `databaseUrl`; `env` added. */
export const startReplica = (
  store: { readonly databaseUrl: string } | { readonly dataDirectory: string },
  env: Record<string, string> = {}
) =>
  startServerProcess({
    ...("databaseUrl" in store
      ? { DATABASE_URL: store.databaseUrl }
      : { DATABASE_URL: "", HOOKRELAY_DATA_DIR: store.dataDirectory }),
    HOOKRELAY_ADMIN_TOKEN: replicaAdminToken,
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
    ...env
  })

export const admin = async (replica: ServerProcess, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${replica.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${replicaAdminToken}`,
      ...(body !== undefined && { "content-type": "application/json" })
    },
    ...(body !== undefined && { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
}

export const track = async (replica: ServerProcess, messageId: string) => {
  const response = await fetch(`${replica.url}/v1/track`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basicAuth(replicaWriteKey) },
    body: JSON.stringify({ userId: "user-1", event: "Replica Test", messageId })
  })
  await response.arrayBuffer()
  if (response.status !== 200) throw new Error(`track answered ${response.status}`)
}

/**
 * The source `shop`, signed with Standard Webhooks, delivering to `url` (with the endpoint's other settings:
 * `rateLimit`, `circuit`); its generated secret.
 */
export const putSource = async (
  replica: ServerProcess,
  url: string,
  endpoint: Record<string, unknown> = {}
): Promise<string> => {
  const saved = await admin(replica, "PUT", "/admin/sources/shop", {
    writeKey: replicaWriteKey,
    webhooks: { enabled: true, endpoints: [{ ...endpoint, url }], signing: "standard" }
  })
  if (saved.status !== 200 && saved.status !== 201) throw new Error(`PUT source answered ${saved.status}`)
  return saved.body.generatedSecret as string
}

export const rotate = async (replica: ServerProcess): Promise<string> => {
  const rotated = await admin(replica, "POST", "/admin/sources/shop/secrets/rotate", { keepOldFor: "1 hour" })
  if (rotated.status !== 200) throw new Error(`rotate answered ${rotated.status}`)
  return rotated.body.secret as string
}

export const stopReplica = async (replica: ServerProcess) => {
  if (replica.child.exitCode !== null || replica.child.signalCode !== null) return
  replica.child.kill("SIGTERM")
  await replica.exited
}

/**
 * A test file's replicas and receivers, each stopped after its test: `afterEach(harness.cleanUp)`; `cleanup` takes other
 * steps (run last-in, first-out).
 */
export const replicaHarness = () => {
  const cleanup: Array<() => Promise<void> | void> = []
  return {
    cleanup,
    cleanUp: async () => {
      for (const step of cleanup.splice(0).reverse()) await step()
    },
    replica: async (databaseUrl: string): Promise<ServerProcess> => {
      const started = await startReplica({ databaseUrl })
      cleanup.push(() => stopReplica(started))
      return started
    },
    receiver: async (delayMillis = 0): Promise<Receiver> => {
      const receiver = await startReceiver(delayMillis)
      cleanup.push(() => receiver.close())
      return receiver
    }
  }
}

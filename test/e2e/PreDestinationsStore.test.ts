import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { gunzipSync } from "node:zlib"
import { sourceCacheTtlMillis } from "../../src/store/SourceCache.js"
import { signatureOf } from "../support/http.js"
import { connectSql, databaseUrl, postgresUnavailable } from "../support/postgres.js"
import { basicAuth, repoRoot, type ServerProcess, startServerProcess } from "../support/serverProcess.js"

/**
 * A store written by the build before destinations (test/fixtures/pre-destinations, made by its make.ts with that
 * build) opened by this one, as a real server process with the old `HOOKRELAY_CONFIG` file: it migrates, delivers the
 * pending jobs, replays the dead letter through the admin API, takes the old admin bodies, and re-applying the old
 * file at the next start keeps a destination added since (REFERENCE §1a).
 */

const fixtures = Path.join(repoRoot, "test/fixtures/pre-destinations")
const configFile = Path.join(fixtures, "config.json")
const adminToken = "pre-destinations-admin-token-0123456789"
const writeKey = "wk_pre_destinations_shop"
const sharedSecret = "pre-destinations-shared-secret"
/** The port of config.json's URLs (make.ts wrote the stores with them). */
const receiverPort = 47953
const pendingIds = ["pre-pending-1", "pre-pending-2", "pre-pending-3"]
const configuredWebhooks = JSON.parse(readFileSync(configFile, "utf8")).sources[0].webhooks

interface Received {
  readonly path: string
  readonly body: Buffer
  readonly signature: string | undefined
}

const received: Array<Received> = []
let receiver: Server
beforeAll(() =>
  new Promise<void>((resolve, reject) => {
    receiver = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const signature = request.headers["x-signature"]
        received.push({
          path: request.url ?? "",
          body: Buffer.concat(chunks),
          signature: typeof signature === "string" ? signature : undefined
        })
        response.writeHead(200).end("ok")
      })
    })
    receiver.once("error", reject)
    receiver.listen(receiverPort, "127.0.0.1", () => resolve())
  })
)
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())))

const messageIdOf = (request: Received) =>
  (JSON.parse(request.body.toString("utf8")) as { messageId: string }).messageId

const deliveredTo = (paths: ReadonlyArray<string>, messageId: string) =>
  received.filter((request) => paths.includes(request.path) && messageIdOf(request) === messageId)

/** The destination `webhooks`: its two URLs race for each job (REFERENCE §4), so either may get a copy. */
const webhooksPaths = ["/primary", "/fallback"]

const eventually = async (check: () => boolean | Promise<boolean>, what: string, timeoutMillis = 20_000) => {
  const deadline = Date.now() + timeoutMillis
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const admin = async (server: ServerProcess, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
}

const track = async (server: ServerProcess, messageId: string) => {
  const response = await fetch(`${server.url}/v1/track`, {
    method: "POST",
    headers: { authorization: basicAuth(writeKey), "content-type": "application/json" },
    body: JSON.stringify({ messageId, userId: "u-9", event: "Checked Out" })
  })
  expect(response.status).toBe(200)
  await response.arrayBuffer()
}

/** The whole story on one store; `env` selects it (HOOKRELAY_DATA_DIR or DATABASE_URL). */
const openedByThisBuild = async (env: Record<string, string>) => {
  received.length = 0
  const start = () =>
    startServerProcess({
      ...env,
      HOOKRELAY_CONFIG: configFile,
      HOOKRELAY_ADMIN_TOKEN: adminToken,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true"
    })
  const stop = async (server: ServerProcess) => {
    server.child.kill("SIGTERM")
    await server.exited
  }
  let server = await start()
  try {
    // Migrated: the pending jobs reach the destination `webhooks`, signed with the shared secret.
    await eventually(
      () => pendingIds.every((id) => deliveredTo(webhooksPaths, id).length > 0),
      "pending jobs delivered"
    )
    for (const request of received) expect(request.signature).toBe(signatureOf(sharedSecret, request.body))

    // The source reads back as configured, its webhooks being the destination `webhooks`.
    const source = await admin(server, "GET", "/admin/sources/shop")
    expect(source.status).toBe(200)
    expect(source.body.webhooks.endpoints).toStrictEqual(configuredWebhooks.endpoints)
    const migrated = await admin(server, "GET", "/admin/sources/shop/destinations")
    expect(migrated.body.destinations.map((destination: { id: string }) => destination.id)).toStrictEqual(["webhooks"])

    // The dead letter, with the two attempts the old build made, replays and is delivered.
    const letters = await admin(server, "GET", "/admin/dead-letters?sourceId=shop")
    expect(letters.body.deadLetters.map((letter: { messageId: string }) => letter.messageId)).toStrictEqual([
      "pre-dead-1"
    ])
    const [letter] = letters.body.deadLetters
    const before = await admin(server, "GET", "/admin/messages/pre-dead-1")
    expect(before.body.jobs[0].attempts.map((attempt: { url: string; statusCode: number }) => attempt.url).sort())
      .toStrictEqual(configuredWebhooks.endpoints.map((endpoint: { url: string }) => endpoint.url).sort())
    const replayed = await admin(server, "POST", `/admin/dead-letters/${letter.id}/replay`)
    expect(replayed).toStrictEqual({ status: 202, body: { success: true, jobId: letter.id, status: "pending" } })
    await eventually(() => deliveredTo(webhooksPaths, "pre-dead-1").length > 0, "the replayed dead letter delivered")
    await eventually(async () => {
      const after = await admin(server, "GET", "/admin/messages/pre-dead-1")
      return after.body.jobs[0].status === "delivered"
    }, "the replayed job delivered")
    const after = await admin(server, "GET", "/admin/messages/pre-dead-1")
    expect(after.body.jobs.length).toBe(1)
    // The old build's two refused attempts are kept, then the replay's.
    expect(after.body.jobs[0].attempts.filter((attempt: { statusCode: number }) => attempt.statusCode === 400).length)
      .toBe(2)
    expect(after.body.jobs[0].attempts.some((attempt: { statusCode: number }) => attempt.statusCode === 200)).toBe(true)

    // An old admin body (PUT with `webhooks`) works unchanged: a new secret signs the next delivery.
    const oldBody = {
      writeKey,
      webhooks: { ...configuredWebhooks, sharedSecret: "rotated-by-an-old-body" }
    }
    expect((await admin(server, "PUT", "/admin/sources/shop", oldBody)).status).toBe(200)
    // The dispatcher trusts a source it read for up to its cache's TTL, as it did before destinations.
    await new Promise((resolve) => setTimeout(resolve, sourceCacheTtlMillis + 500))
    await track(server, "after-old-body")
    await eventually(() => deliveredTo(webhooksPaths, "after-old-body").length > 0, "delivered after the old body")
    const [afterOldBody] = deliveredTo(webhooksPaths, "after-old-body")
    expect(afterOldBody!.signature).toBe(signatureOf("rotated-by-an-old-body", afterOldBody!.body))

    // A destination added through the admin API…
    const added = await admin(server, "PUT", "/admin/sources/shop/destinations/crm", {
      enabled: true,
      sharedSecret: "crm-secret",
      endpoints: [{ url: `http://127.0.0.1:${receiverPort}/crm` }]
    })
    expect(added.status).toBe(201)
    await stop(server)

    // …stays when the old config file is applied again at the next start; the file's webhooks are back.
    server = await start()
    const destinations = await admin(server, "GET", "/admin/sources/shop/destinations")
    expect(destinations.body.destinations.map((destination: { id: string }) => destination.id)).toStrictEqual([
      "webhooks",
      "crm"
    ])
    await track(server, "after-restart")
    await eventually(
      () => deliveredTo(webhooksPaths, "after-restart").length > 0 && deliveredTo(["/crm"], "after-restart").length > 0,
      "delivered to both destinations"
    )
    const [webhooksCopy] = deliveredTo(webhooksPaths, "after-restart")
    const [crmCopy] = deliveredTo(["/crm"], "after-restart")
    expect(webhooksCopy!.signature).toBe(signatureOf(sharedSecret, webhooksCopy!.body))
    expect(crmCopy!.signature).toBe(signatureOf("crm-secret", crmCopy!.body))
    // The destination `crm` got only what was sent after it was added; `webhooks` got everything.
    expect(received.filter((request) => request.path === "/crm").map(messageIdOf)).toStrictEqual(["after-restart"])
    expect(new Set(received.filter((request) => webhooksPaths.includes(request.path)).map(messageIdOf))).toStrictEqual(
      new Set([...pendingIds, "pre-dead-1", "after-old-body", "after-restart"])
    )
  } finally {
    server.child.kill("SIGKILL")
    await server.exited
  }
}

describe("a store written by the build before destinations", () => {
  it(
    "SQLite: migrates, delivers, replays; the old config file and admin bodies work",
    { timeout: 120_000 },
    async () => {
      const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-pre-destinations-"))
      try {
        writeFileSync(
          Path.join(directory, "hookrelay.db"),
          gunzipSync(readFileSync(Path.join(fixtures, "hookrelay.db.gz")))
        )
        await openedByThisBuild({ HOOKRELAY_DATA_DIR: directory, DATABASE_URL: "" })
      } finally {
        rmSync(directory, { recursive: true, force: true })
      }
    }
  )

  it("PostgreSQL (the old build's pg_dump): the same", { timeout: 120_000 }, async () => {
    const unavailable = await postgresUnavailable()
    if (unavailable !== undefined) {
      if (process.env.CI === "true") throw new Error(unavailable)
      return
    }
    const schema = `pre53_${process.pid}_${Date.now()}`
    // pg_dump's psql meta-commands (\restrict) are not SQL; the dump's schema is renamed to a fresh one.
    // One statement a query (the driver prepares each): the dump has no function bodies, so ";" ends a line's statement.
    const statements = readFileSync(Path.join(fixtures, "pg.sql"), "utf8")
      .split("\n")
      .filter((line) => !line.startsWith("\\") && !line.startsWith("--"))
      .join("\n")
      .replaceAll("pre53_fixture", schema)
      .split(/;\n/)
      .map((statement) => statement.trim())
      .filter((statement) => statement !== "")
    const sql = await connectSql(databaseUrl)
    try {
      for (const statement of statements) await sql.query(statement)
      const url = new URL(databaseUrl)
      url.searchParams.set("options", `-c search_path=${schema}`)
      await openedByThisBuild({ DATABASE_URL: url.toString() })
    } finally {
      await sql.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await sql.end()
    }
  })
})

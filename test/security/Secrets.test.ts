import { afterEach, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Result } from "effect"
import { spawn } from "node:child_process"
import { createHmac, generateKeyPairSync, randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { secretsEqual } from "../../src/domain/Secrets.js"
import { makeSecretBox, parseSecretKeys, SecretBox } from "../../src/store/SecretBox.js"
import { Sources } from "../../src/store/Sources.js"
import { layerSqlite } from "../../src/store/Store.js"
import { connectSql, databaseUrl, postgresUnavailable } from "../support/postgres.js"
import {
  basicAuth,
  freePort,
  repoRoot,
  type ServerProcess,
  startServerProcess,
  testSecretKeys
} from "../support/serverProcess.js"
import { skipUnlessCi } from "../support/services.js"

/**
 * REFERENCE §8: write keys, shared secrets and the admin token never appear in logs or answers. The real server
 * (`src/main.ts`) runs in a process of its own through every path that touches a secret — good and wrong write
 * keys (Basic and body), good, wrong and missing admin tokens, admin reads and writes of sources, signed
 * deliveries, a failing receiver, a dead letter and its replay, store errors — and then everything it printed and
 * every answer it gave is searched for each secret, raw and in its Basic (base64) and URL-encoded forms. Standard
 * Webhooks secrets and the ed25519 private key get the same search; a secret the server generates may appear only in
 * the one answer that created it.
 */

const nonce = randomBytes(6).toString("hex")
const secrets = {
  writeKey: `wk_good_${nonce}_A1`,
  flakyWriteKey: `wk_flaky_${nonce}_B2`,
  goneWriteKey: `wk_gone_${nonce}_C3`,
  sharedSecret: `whsec_${nonce}_D4`,
  goneSharedSecret: `whsec_gone_${nonce}_E5`,
  adminToken: `adm_${nonce}_F6`,
  receiverToken: `rcv_${nonce}_G7`,
  // Sent by clients, never configured: refused without being echoed either.
  wrongWriteKey: `wk_wrong_${nonce}_H8`,
  wrongAdminToken: `adm_wrong_${nonce}_J9`,
  // Written through the admin API.
  putWriteKey: `wk_put_${nonce}_K1`,
  putSharedSecret: `whsec_put_${nonce}_L2`
}

/** The forms a secret can take on the wire or in a log line. */
const formsOf = (secret: string): ReadonlyArray<string> => [
  secret,
  Buffer.from(`${secret}:`).toString("base64"),
  Buffer.from(secret).toString("base64"),
  encodeURIComponent(secret),
  JSON.stringify(secret).slice(1, -1)
]

/** Every secret (by name) found in `text`, in any of its forms. */
const leaks = (text: string, named: Record<string, string>): Array<string> =>
  Object.entries(named).flatMap(([name, secret]) =>
    formsOf(secret).filter((form) => text.includes(form)).map((form) => `${name} (as ${form})`)
  )

interface Receiver {
  readonly url: string
  readonly requests: Array<
    { readonly headers: Record<string, string | Array<string> | undefined>; readonly body: Buffer }
  >
  readonly close: () => Promise<void>
}

const startReceiver = (status: () => number): Promise<Receiver> =>
  new Promise((resolve) => {
    const requests: Receiver["requests"] = []
    const server: Server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        requests.push({ headers: request.headers, body: Buffer.concat(chunks) })
        response.writeHead(status(), { "content-type": "text/plain" }).end("receiver says hello")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      resolve({
        url: `http://127.0.0.1:${port}`,
        requests,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })

const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

const waitUntil = async (condition: () => boolean | Promise<boolean>, what: string, timeoutMillis = 20_000) => {
  const deadline = Date.now() + timeoutMillis
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await sleep(50)
  }
}

/** Every HTTP answer of the run: status, headers and body as text. */
interface Recorded {
  readonly what: string
  readonly status: number
  readonly text: string
}

const recorder = (baseUrl: string) => {
  const answers: Array<Recorded> = []
  const call = async (
    what: string,
    method: string,
    path: string,
    options: { readonly headers?: Record<string, string>; readonly body?: unknown } = {}
  ): Promise<Recorded & { readonly json: any }> => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(options.body !== undefined && { "content-type": "application/json" }),
        ...options.headers
      },
      ...(options.body !== undefined && { body: JSON.stringify(options.body) })
    })
    const text = await response.text()
    const headerText = [...response.headers.entries()].map(([name, value]) => `${name}: ${value}`).join("\n")
    const recorded = { what, status: response.status, text: `${headerText}\n\n${text}` }
    answers.push(recorded)
    let json: any = undefined
    try {
      json = JSON.parse(text)
    } catch {
      // not JSON (metrics)
    }
    return { ...recorded, json }
  }
  return { answers, call }
}

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!()
})

const stop = async (server: ServerProcess) => {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGTERM")
  await Promise.race([server.exited, sleep(15_000)])
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL")
}

/**
 * The real server on SQLite in `directory`, its sources provisioned from a HOOKRELAY_CONFIG file, stopped after the
 * test; with a recorder of every answer and the admin token's header.
 */
const startProvisioned = async (directory: string, sources: ReadonlyArray<unknown>) => {
  const configFile = Path.join(directory, "config.json")
  writeFileSync(configFile, JSON.stringify({ sources }))
  const server = await startServerProcess({
    DATABASE_URL: "",
    HOOKRELAY_DATA_DIR: Path.join(directory, "data"),
    HOOKRELAY_CONFIG: configFile,
    HOOKRELAY_ADMIN_TOKEN: secrets.adminToken,
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true"
  })
  cleanups.push(() => stop(server))
  return { server, ...recorder(server.url), admin: { authorization: `Bearer ${secrets.adminToken}` } }
}

const track = (messageId: string) => ({ userId: "user-1", event: "Secret Test", messageId, properties: { n: 1 } })

describe("secrets: constant-time comparison", () => {
  it("secretsEqual accepts only the same string, whatever the lengths", () => {
    expect(secretsEqual("abc", "abc")).toBe(true)
    expect(secretsEqual("abc", "abd")).toBe(false)
    expect(secretsEqual("abc", "abcd")).toBe(false)
    expect(secretsEqual("", "abc")).toBe(false)
    expect(secretsEqual("é", "e\u0301")).toBe(false)
  })
})

describe("secrets never in logs or answers: a full run of the server process", () => {
  it("SQLite: ingest, admin, signed deliveries, a failing receiver, a dead letter and its replay", async () => {
    let flakyStatus = 500
    const good = await startReceiver(() => 200)
    const flaky = await startReceiver(() => flakyStatus)
    // A permanent refusal that dead-letters the job but leaves the URL enabled (a 410 would disable it), so the replay
    // is attempted.
    const gone = await startReceiver(() => 400)
    cleanups.push(() => good.close(), () => flaky.close(), () => gone.close())
    const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-secrets-"))
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }))
    const { server, answers, call, admin } = await startProvisioned(directory, [
      {
        id: "good",
        writeKey: secrets.writeKey,
        webhooks: {
          enabled: true,
          sharedSecret: secrets.sharedSecret,
          endpoints: [{ url: `${good.url}/hook`, headers: { "X-Receiver-Token": secrets.receiverToken } }]
        }
      },
      {
        id: "flaky",
        writeKey: secrets.flakyWriteKey,
        webhooks: { enabled: true, sharedSecret: secrets.sharedSecret, endpoints: [{ url: `${flaky.url}/hook` }] }
      },
      {
        id: "gone",
        writeKey: secrets.goneWriteKey,
        webhooks: {
          enabled: true,
          sharedSecret: secrets.goneSharedSecret,
          endpoints: [{ url: `${gone.url}/hook` }]
        }
      }
    ])

    // Ingest: Basic, body writeKey (single and batch), wrong keys both ways, no key.
    expect(
      (await call("basic", "POST", "/v1/track", {
        headers: { authorization: basicAuth(secrets.writeKey) },
        body: track("m-basic")
      })).status
    ).toBe(200)
    expect(
      (await call("body key", "POST", "/v1/track", { body: { ...track("m-body"), writeKey: secrets.writeKey } }))
        .status
    ).toBe(200)
    expect(
      (await call("batch body key", "POST", "/v1/batch", {
        body: {
          writeKey: secrets.writeKey,
          batch: [{ type: "track", ...track("m-batch"), writeKey: secrets.writeKey }]
        }
      })).status
    ).toBe(200)
    expect(
      (await call("flaky", "POST", "/v1/track", {
        headers: { authorization: basicAuth(secrets.flakyWriteKey) },
        body: track("m-flaky")
      })).status
    ).toBe(200)
    expect(
      (await call("gone", "POST", "/v1/track", {
        headers: { authorization: basicAuth(secrets.goneWriteKey) },
        body: track("m-gone")
      })).status
    ).toBe(200)
    expect(
      (await call("wrong basic", "POST", "/v1/track", {
        headers: { authorization: basicAuth(secrets.wrongWriteKey) },
        body: track("m-wrong")
      })).status
    ).toBe(401)
    expect(
      (await call("wrong body key", "POST", "/v1/batch", {
        body: { writeKey: secrets.wrongWriteKey, batch: [{ type: "track", ...track("m-wrong") }] }
      })).status
    ).toBe(401)
    expect(
      (await call("wrong basic, good body key", "POST", "/v1/track", {
        headers: { authorization: basicAuth(secrets.wrongWriteKey) },
        body: { ...track("m-wrong"), writeKey: secrets.writeKey }
      })).status
    ).toBe(401)
    expect((await call("no key", "POST", "/v1/track", { body: track("m-none") })).status).toBe(401)
    expect(
      (await call("invalid message, good key", "POST", "/v1/track", {
        headers: { authorization: basicAuth(secrets.writeKey) },
        body: { writeKey: secrets.writeKey, event: "" }
      })).status
    ).toBe(400)

    // Admin: missing, wrong, Basic-encoded and right tokens.
    expect((await call("admin no token", "GET", "/admin/sources")).status).toBe(401)
    expect(
      (await call("admin wrong token", "GET", "/admin/sources", {
        headers: { authorization: `Bearer ${secrets.wrongAdminToken}` }
      })).status
    ).toBe(401)
    expect(
      (await call("admin token as Basic", "GET", "/admin/sources", {
        headers: { authorization: basicAuth(secrets.adminToken) }
      })).status
    ).toBe(401)
    expect(
      (await call("admin token prefix", "GET", "/admin/sources", {
        headers: { authorization: `Bearer ${secrets.adminToken.slice(0, -1)}` }
      })).status
    ).toBe(401)
    const listed = await call("admin list", "GET", "/admin/sources", { headers: admin })
    expect(listed.status).toBe(200)
    expect(listed.json.sources).toHaveLength(3)
    const one = await call("admin get", "GET", "/admin/sources/good", { headers: admin })
    expect(one.json).toMatchObject({ id: "good", webhooks: { hasSharedSecret: true } })
    const put = await call("admin put", "PUT", "/admin/sources/put", {
      headers: admin,
      body: {
        writeKey: secrets.putWriteKey,
        webhooks: { enabled: true, sharedSecret: secrets.putSharedSecret, endpoints: [{ url: `${good.url}/put` }] }
      }
    })
    expect(put.status).toBe(200)
    const badPut = await call("admin put refused", "PUT", "/admin/sources/bad", {
      headers: admin,
      body: {
        writeKey: secrets.putWriteKey,
        webhooks: { enabled: true, sharedSecret: secrets.putSharedSecret, endpoints: [] }
      }
    })
    expect(badPut.status).toBe(400)
    const conflict = await call("admin put conflict", "PUT", "/admin/sources/other", {
      headers: admin,
      body: { writeKey: secrets.writeKey }
    })
    expect(conflict.status).toBe(409)
    expect(
      (await call("admin put, token wrong", "PUT", "/admin/sources/put", {
        headers: { authorization: `Bearer ${secrets.wrongAdminToken}` },
        body: { writeKey: secrets.putWriteKey }
      })).status
    ).toBe(401)

    // Deliveries: signed with the shared secret; one receiver failing (retried), one gone (dead letter).
    await waitUntil(() => good.requests.length >= 3, "the good receiver got 3 deliveries")
    for (const request of good.requests) {
      const expected = createHmac("sha1", secrets.sharedSecret).update(request.body).digest("hex")
      expect(request.headers["x-signature"]).toBe(expected)
      expect(request.headers["x-receiver-token"]).toBe(secrets.receiverToken)
      // Delivered bodies carry event data only: a write key sent inside a message is not delivered.
      expect(leaks(request.body.toString("utf8"), secrets)).toEqual([])
    }
    await waitUntil(() => flaky.requests.length >= 2, "the failing receiver was retried")
    let deadId = ""
    await waitUntil(async () => {
      const dead = await call("admin dead letters", "GET", "/admin/dead-letters?sourceId=gone&limit=10", {
        headers: admin
      })
      deadId = dead.json?.deadLetters?.[0]?.id ?? ""
      return deadId !== ""
    }, "the gone receiver's job is dead")
    expect((await call("admin replay", "POST", `/admin/dead-letters/${deadId}/replay`, { headers: admin })).status)
      .toBe(202)
    await waitUntil(() => gone.requests.length >= 2, "the replayed job was attempted again")
    flakyStatus = 200
    for (const messageId of ["m-basic", "m-flaky", "m-gone"]) {
      expect(
        (await call(`admin message ${messageId}`, "GET", `/admin/messages/${messageId}`, { headers: admin }))
          .status
      ).toBe(200)
    }
    await waitUntil(async () => {
      const message = await call("admin message m-flaky", "GET", "/admin/messages/m-flaky", { headers: admin })
      return message.json?.jobs?.[0]?.status === "delivered"
    }, "the failing receiver recovered")
    await call("metrics", "GET", "/metrics")
    await call("healthz", "GET", "/healthz")

    await stop(server)
    expect(server.child.exitCode).toBe(0)
    const output = server.output()
    expect(output).toContain("hookrelay listening")
    expect(leaks(output, secrets)).toEqual([])
    for (const answer of answers) expect([answer.what, leaks(answer.text, secrets)]).toEqual([answer.what, []])
    // The receivers did get what they need: the token header they were configured with, and signatures.
    expect(good.requests.length).toBeGreaterThanOrEqual(3)
  })

  it("Standard Webhooks secrets and the ed25519 private key: shown once where created, never in logs or other answers", async () => {
    const receiver = await startReceiver(() => 200)
    // A permanent refusal that dead-letters the job but leaves the URL enabled (a 410 would disable it), so the replay
    // is attempted.
    const gone = await startReceiver(() => 400)
    cleanups.push(() => receiver.close(), () => gone.close())
    const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-secrets-std-"))
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }))
    const { privateKey } = generateKeyPairSync("ed25519")
    const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(-32).toString("base64")
    const given = {
      signingSecret: `whsec_${randomBytes(32).toString("base64")}`,
      signingKey: `whsk_${seed}`,
      goneSecret: `whsec_${randomBytes(24).toString("base64")}`,
      badSecret: `whsec_${randomBytes(8).toString("base64")}`
    }
    // A leak could drop the prefix: the key material alone counts too.
    const named: Record<string, string> = {
      ...given,
      signingSecretKey: given.signingSecret.slice(6),
      signingKeySeed: seed,
      goneSecretKey: given.goneSecret.slice(6),
      adminToken: secrets.adminToken
    }
    const webhooks = (url: string, fields: Record<string, unknown>) => ({
      enabled: true,
      endpoints: [{ url }],
      ...fields
    })
    const { server, answers, call, admin } = await startProvisioned(directory, [
      {
        id: "std",
        writeKey: secrets.writeKey,
        webhooks: webhooks(`${receiver.url}/std`, {
          signing: "both",
          sharedSecret: secrets.sharedSecret,
          signingSecrets: [{ secret: given.signingSecret }],
          asymmetric: true,
          signingKey: given.signingKey
        })
      },
      {
        id: "gone",
        writeKey: secrets.goneWriteKey,
        webhooks: webhooks(`${gone.url}/gone`, {
          signing: "standard",
          signingSecrets: [{ secret: given.goneSecret }]
        })
      },
      // Provisioned without a secret: one is generated at start, and only a warning without it is printed.
      { id: "gen", writeKey: `wk_gen_${nonce}`, webhooks: webhooks(`${receiver.url}/gen`, { signing: "standard" }) }
    ])

    expect((await call("list", "GET", "/admin/sources", { headers: admin })).status).toBe(200)
    const std = await call("get std", "GET", "/admin/sources/std", { headers: admin })
    expect(std.json.webhooks.publicKey).toMatch(/^whpk_/)
    expect(std.json.webhooks.signingSecrets).toHaveLength(1)
    // Secrets the server makes are in the answer that made them, and nowhere else.
    const generated = await call("put generates", "PUT", "/admin/sources/new", {
      headers: admin,
      body: { writeKey: secrets.putWriteKey, webhooks: webhooks(`${receiver.url}/new`, { signing: "standard" }) }
    })
    expect(generated.json.generatedSecret).toMatch(/^whsec_/)
    named.generatedSecret = generated.json.generatedSecret
    const rotated = await call("rotate", "POST", "/admin/sources/std/secrets/rotate", {
      headers: admin,
      body: { keepOldFor: "1 hour" }
    })
    expect(rotated.status).toBe(200)
    named.rotatedSecret = rotated.json.secret
    const refused = await call("put refused", "PUT", "/admin/sources/bad", {
      headers: admin,
      body: {
        writeKey: secrets.flakyWriteKey,
        webhooks: webhooks(`${receiver.url}/bad`, {
          signing: "standard",
          signingSecrets: [{ secret: given.badSecret }]
        })
      }
    })
    expect(refused.status).toBe(400)
    expect((await call("get std again", "GET", "/admin/sources/std", { headers: admin })).status).toBe(200)

    for (const [writeKey, id] of [[secrets.writeKey, "s-std"], [secrets.goneWriteKey, "s-gone"]] as const) {
      expect(
        (await call(`track ${id}`, "POST", "/v1/track", {
          headers: { authorization: basicAuth(writeKey) },
          body: track(id)
        })).status
      ).toBe(200)
    }
    await waitUntil(() => receiver.requests.length >= 1, "the std delivery")
    const delivered = receiver.requests[0]!
    expect(String(delivered.headers["webhook-signature"]).split(" ")).toHaveLength(3)
    let deadId = ""
    await waitUntil(async () => {
      const dead = await call("dead letters", "GET", "/admin/dead-letters?sourceId=gone", { headers: admin })
      deadId = dead.json?.deadLetters?.[0]?.id ?? ""
      return deadId !== ""
    }, "the gone job is dead")
    expect((await call("replay", "POST", `/admin/dead-letters/${deadId}/replay`, { headers: admin })).status).toBe(202)
    await waitUntil(() => gone.requests.length >= 2, "the replay was attempted")
    expect(gone.requests[1]!.headers["webhook-id"]).toBe(gone.requests[0]!.headers["webhook-id"])

    await stop(server)
    // The secret generated at provisioning, read from the store once the server is gone.
    const provisioned = await Effect.runPromise(
      Effect.flatMap(Sources, (sources) => sources.getSource("gen")).pipe(
        // The server's keys: its stored secrets are sealed (docs/SECURITY.md).
        Effect.provide(
          layerSqlite({ directory: Path.join(directory, "data") }).pipe(
            Layer.provide(Layer.succeed(SecretBox)(makeSecretBox(Result.getOrThrow(parseSecretKeys(testSecretKeys)))))
          )
        )
      )
    )
    named.provisionedSecret = Option.getOrThrow(provisioned).webhooks!.signingSecrets![0]!.secret
    const output = server.output()
    expect(output).toContain("source gen: a Standard Webhooks signing secret was generated")
    expect(leaks(output, named)).toEqual([])
    for (const request of [...receiver.requests, ...gone.requests]) {
      expect(leaks(request.body.toString(), named)).toEqual([])
    }
    const shownOnce: Record<string, string> = { "put generates": "generatedSecret", rotate: "rotatedSecret" }
    for (const answer of answers) {
      const allowed = shownOnce[answer.what]
      const others = Object.fromEntries(Object.entries(named).filter(([name]) => name !== allowed))
      expect([answer.what, leaks(answer.text, others)]).toEqual([answer.what, []])
    }
  })

  it("a store URL's password never shows, even when the store cannot be opened", async () => {
    const password = `pgpw_${nonce}_M3`
    const port = await freePort()
    const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "src/main.ts")], {
      cwd: repoRoot,
      env: {
        ...process.env,
        HOST: "127.0.0.1",
        PORT: String(await freePort()),
        DATABASE_URL: `postgres://hookrelay:${password}@127.0.0.1:${port}/hookrelay`,
        HOOKRELAY_SECRET_KEYS: testSecretKeys,
        HOOKRELAY_ADMIN_TOKEN: secrets.adminToken
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    const code = await new Promise<number | null>((resolve) => child.once("exit", (exitCode) => resolve(exitCode)))
    cleanups.push(() => void child.kill("SIGKILL"))
    expect(code).not.toBe(0)
    expect(output).toContain("ECONNREFUSED")
    expect(leaks(output, { password, adminToken: secrets.adminToken })).toEqual([])
  })
})

const pgSkip = skipUnlessCi("Secrets (PostgreSQL run)", await postgresUnavailable())

describe.skipIf(pgSkip)("secrets never in logs or answers: store errors (PostgreSQL)", () => {
  it("the database password, write key, shared secret and admin token stay out of the store errors' logs", async () => {
    const password = `pgpw_${nonce}_N4`
    const schema = `secrets_${nonce}`
    const client = await connectSql(databaseUrl)
    cleanups.push(async () => {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
      await client.end()
    })
    await client.query(`CREATE SCHEMA ${schema}`)
    // The local server may trust every connection: the password then only has to not show up anywhere.
    const url = new URL(databaseUrl)
    url.username = url.username || "postgres"
    url.password = password
    url.searchParams.set("options", `-c search_path=${schema}`)
    const receiver = await startReceiver(() => 200)
    cleanups.push(() => receiver.close())
    const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-secrets-pg-"))
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }))
    const configFile = Path.join(directory, "config.json")
    writeFileSync(
      configFile,
      JSON.stringify({
        sources: [{
          id: "good",
          writeKey: secrets.writeKey,
          webhooks: { enabled: true, sharedSecret: secrets.sharedSecret, endpoints: [{ url: `${receiver.url}/hook` }] }
        }]
      })
    )
    const server = await startServerProcess({
      DATABASE_URL: url.toString(),
      HOOKRELAY_CONFIG: configFile,
      HOOKRELAY_ADMIN_TOKEN: secrets.adminToken,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true"
    })
    cleanups.push(() => stop(server))
    const { answers, call } = recorder(server.url)
    const admin = { authorization: `Bearer ${secrets.adminToken}` }
    expect(
      (await call("basic", "POST", "/v1/track", {
        headers: { authorization: basicAuth(secrets.writeKey) },
        body: track("pg-1")
      })).status
    ).toBe(200)
    await waitUntil(() => receiver.requests.length >= 1, "the first delivery")

    // The store breaks under the running server: every table is gone. The server's own statements
    // may deadlock with the DROP (PostgreSQL then cancels one side, 40P01): drop again until it holds.
    for (let attempt = 1;; attempt++) {
      try {
        await client.query(`DROP SCHEMA ${schema} CASCADE`)
        break
      } catch (error) {
        if (attempt >= 20 || (error as { code?: string }).code !== "40P01") throw error
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    const refused = await call("store error", "POST", "/v1/track", {
      headers: { authorization: basicAuth(secrets.writeKey) },
      body: { ...track("pg-2"), writeKey: secrets.writeKey }
    })
    expect(refused.status).toBe(503)
    expect(refused.json).toMatchObject({ code: "store_unavailable" })
    expect((await call("admin store error", "GET", "/admin/messages/pg-1", { headers: admin })).status).toBe(503)
    expect(
      (await call("admin put store error", "PUT", "/admin/sources/good", {
        headers: admin,
        body: {
          writeKey: secrets.writeKey,
          webhooks: { enabled: true, sharedSecret: secrets.sharedSecret, endpoints: [{ url: `${receiver.url}/x` }] }
        }
      })).status
    ).toBe(503)
    await sleep(1500) // the dispatcher's claims fail and are logged meanwhile
    await stop(server)
    const output = server.output()
    expect(output).toMatch(/ingest could not commit to the store/)
    const named = { ...secrets, password }
    expect(leaks(output, named)).toEqual([])
    for (const answer of answers) expect([answer.what, leaks(answer.text, named)]).toEqual([answer.what, []])
  })
})
